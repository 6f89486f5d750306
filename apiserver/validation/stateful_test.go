package validation

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// statefulSet returns a defaulted StatefulSet whose container mounts the
// claim template "data".
func statefulSet(edits ...func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	t := templateSpec(web)
	t.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	o := &appsv1.StatefulSet{ObjectMeta: objMeta("kv"), Spec: appsv1.StatefulSetSpec{
		ServiceName: "kv", Selector: &metav1.LabelSelector{MatchLabels: web}, Template: t,
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: rl("storage", "2Gi")},
		}}},
	}}
	return defaulted(o, edits)
}

func cronJob(edits ...func(*batchv1.CronJob)) *batchv1.CronJob {
	t := templateSpec(nil)
	t.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	o := &batchv1.CronJob{ObjectMeta: objMeta("backup"), Spec: batchv1.CronJobSpec{
		Schedule: "*/5 * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: t}},
	}}
	return defaulted(o, edits)
}

func TestStatefulCreate(t *testing.T) {
	tests := []struct {
		name string
		obj  runtime.Object
		want []want
	}{
		{name: "a defaulted stateful set mounting its claim template is valid", obj: statefulSet()},
		{
			name: "a stateful set whose selector misses its template labels is rejected",
			obj:  statefulSet(func(s *appsv1.StatefulSet) { s.Spec.Selector.MatchLabels = map[string]string{"app": "db"} }),
			want: []want{{field.ErrorTypeInvalid, "spec.template.metadata.labels", "`selector` does not match template `labels`"}},
		},
		{
			name: "a stateful set with an empty selector is rejected",
			obj:  statefulSet(func(s *appsv1.StatefulSet) { s.Spec.Selector = &metav1.LabelSelector{} }),
			want: []want{{field.ErrorTypeInvalid, "spec.selector", "empty selector is invalid for statefulset"}},
		},
		{
			name: "a service name that is not a DNS label is rejected",
			obj:  statefulSet(func(s *appsv1.StatefulSet) { s.Spec.ServiceName = "Kv_Svc" }),
			want: []want{{field.ErrorTypeInvalid, "spec.serviceName", "a lowercase RFC 1123 label must consist of lower case alphanumeric characters"}},
		},
		{
			name: "a service name may start with a digit, as a Service's may (RelaxedServiceNameValidation)",
			obj:  statefulSet(func(s *appsv1.StatefulSet) { s.Spec.ServiceName = "1web" }),
		},
		{
			name: "a stateful set without a service name is valid (it is optional since 1.30)",
			obj:  statefulSet(func(s *appsv1.StatefulSet) { s.Spec.ServiceName = "" }),
		},
		{
			name: "an unknown pod management policy is rejected",
			obj:  statefulSet(func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = "Random" }),
			want: []want{{field.ErrorTypeInvalid, "spec.podManagementPolicy", "must be 'OrderedReady' or 'Parallel'"}},
		},
		{
			name: "OnDelete with a rollingUpdate block is rejected",
			obj: statefulSet(func(s *appsv1.StatefulSet) {
				s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.updateStrategy.rollingUpdate", "only allowed for updateStrategy 'RollingUpdate'"}},
		},
		{
			name: "a negative partition and a zero maxUnavailable are rejected",
			obj: statefulSet(func(s *appsv1.StatefulSet) {
				s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](-1)
				s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
			}),
			want: []want{
				{field.ErrorTypeInvalid, "spec.updateStrategy.rollingUpdate.partition", "must be greater than or equal to 0"},
				{field.ErrorTypeInvalid, "spec.updateStrategy.rollingUpdate.maxUnavailable", "must be greater than 0"},
			},
		},
		{
			name: "an unknown claim retention policy is rejected",
			obj: statefulSet(func(s *appsv1.StatefulSet) {
				s.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = "Keep"
			}),
			want: []want{{field.ErrorTypeNotSupported, "spec.persistentVolumeClaimRetentionPolicy.whenScaled", `supported values: "Retain", "Delete"`}},
		},
		{
			name: "a claim template without access modes or storage request is rejected",
			obj: statefulSet(func(s *appsv1.StatefulSet) {
				s.Spec.VolumeClaimTemplates[0].Spec = corev1.PersistentVolumeClaimSpec{VolumeMode: ptr.To(corev1.PersistentVolumeFilesystem)}
			}),
			want: []want{
				{field.ErrorTypeRequired, "spec.volumeClaimTemplates[0].spec.accessModes", "at least 1 access mode is required"},
				{field.ErrorTypeRequired, "spec.volumeClaimTemplates[0].spec.resources[storage]", ""},
			},
		},
		{
			name: "a mount of neither a volume nor a claim template is rejected",
			obj: statefulSet(func(s *appsv1.StatefulSet) {
				s.Spec.Template.Spec.Containers[0].VolumeMounts[0].Name = "other"
			}),
			want: []want{{field.ErrorTypeNotFound, "spec.template.spec.containers[0].volumeMounts[0].name", ""}},
		},
		{
			name: "a stateful set template must restart Always",
			obj:  statefulSet(func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever }),
			want: []want{{field.ErrorTypeNotSupported, "spec.template.spec.restartPolicy", `supported values: "Always"`}},
		},

		{name: "a defaulted cron job is valid", obj: cronJob()},
		{name: "a cron job with an @hourly macro and a time zone is valid", obj: cronJob(func(c *batchv1.CronJob) {
			c.Spec.Schedule = "@hourly"
			c.Spec.TimeZone = ptr.To("Europe/Berlin")
		})},
		{
			name: "a schedule with six fields is rejected with the parser's message",
			obj:  cronJob(func(c *batchv1.CronJob) { c.Spec.Schedule = "0 */5 * * * *" }),
			want: []want{{field.ErrorTypeInvalid, "spec.schedule", "expected exactly 5 fields, found 6"}},
		},
		{
			name: "a schedule with TZ= is rejected: use the timeZone field",
			obj:  cronJob(func(c *batchv1.CronJob) { c.Spec.Schedule = "TZ=UTC 0 * * * *" }),
			want: []want{{field.ErrorTypeInvalid, "spec.schedule", "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"}},
		},
		{
			name: "an unknown time zone is rejected",
			obj:  cronJob(func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Mars/Olympus") }),
			want: []want{{field.ErrorTypeInvalid, "spec.timeZone", "unknown time zone Mars/Olympus"}},
		},
		{
			name: "the Local time zone is rejected",
			obj:  cronJob(func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Local") }),
			want: []want{{field.ErrorTypeInvalid, "spec.timeZone", "timeZone must be an explicit time zone"}},
		},
		{
			name: "an unknown concurrency policy is rejected",
			obj:  cronJob(func(c *batchv1.CronJob) { c.Spec.ConcurrencyPolicy = "Sometimes" }),
			want: []want{{field.ErrorTypeNotSupported, "spec.concurrencyPolicy", `supported values: "Allow", "Forbid", "Replace"`}},
		},
		{
			name: "a job template that restarts Always is rejected",
			obj: cronJob(func(c *batchv1.CronJob) {
				c.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
			}),
			want: []want{{field.ErrorTypeRequired, "spec.jobTemplate.spec.template.spec.restartPolicy", `valid values: "OnFailure", "Never"`}},
		},
		{
			name: "a cron job name longer than 52 characters is rejected",
			obj:  cronJob(func(c *batchv1.CronJob) { c.Name = "a23456789012345678901234567890123456789012345678901234" }),
			want: []want{{field.ErrorTypeInvalid, "metadata.name", "must be no more than 52 characters"}},
		},
		{
			name: "negative history limits and deadline are rejected",
			obj: cronJob(func(c *batchv1.CronJob) {
				c.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](-1)
				c.Spec.StartingDeadlineSeconds = ptr.To[int64](-5)
			}),
			want: []want{
				{field.ErrorTypeInvalid, "spec.successfulJobsHistoryLimit", "must be greater than or equal to 0"},
				{field.ErrorTypeInvalid, "spec.startingDeadlineSeconds", "must be greater than or equal to 0"},
			},
		},
		{
			name: "a controller revision without data is rejected",
			obj:  &appsv1.ControllerRevision{ObjectMeta: objMeta("kv-1"), Revision: 1},
			want: []want{{field.ErrorTypeRequired, "data", "data is mandatory"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertErrors(t, Create(tt.obj, true), tt.want)
		})
	}
}

func TestStatefulUpdate(t *testing.T) {
	tests := []struct {
		name string
		old  runtime.Object
		edit func(runtime.Object)
		want []want
	}{
		{
			name: "scaling, a new template and a new partition are allowed", old: statefulSet(),
			edit: func(o runtime.Object) {
				s := o.(*appsv1.StatefulSet)
				s.Spec.Replicas = ptr.To[int32](5)
				s.Spec.Template.Spec.Containers[0].Image = "nginx:1.27"
				s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](2)
			},
		},
		{
			name: "changing the service name is forbidden", old: statefulSet(),
			edit: func(o runtime.Object) { o.(*appsv1.StatefulSet).Spec.ServiceName = "other" },
			want: []want{{field.ErrorTypeForbidden, "spec", "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template'"}},
		},
		{
			name: "changing the claim templates is forbidden", old: statefulSet(),
			edit: func(o runtime.Object) {
				o.(*appsv1.StatefulSet).Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = rl("storage", "5Gi")
			},
			want: []want{{field.ErrorTypeForbidden, "spec", "are forbidden"}},
		},
		{
			name: "a schedule stored with TZ= may keep it", old: cronJob(func(c *batchv1.CronJob) { c.Spec.Schedule = "CRON_TZ=UTC 0 * * * *" }),
			edit: func(o runtime.Object) { o.(*batchv1.CronJob).Spec.Suspend = ptr.To(true) },
		},
		{
			name: "a controller revision's data is immutable",
			old:  &appsv1.ControllerRevision{ObjectMeta: objMeta("kv-1"), Revision: 1, Data: runtime.RawExtension{Raw: []byte(`{"a":1}`)}},
			edit: func(o runtime.Object) {
				r := o.(*appsv1.ControllerRevision)
				r.Data.Raw = []byte(`{"a":2}`)
				r.Revision = 3
			},
			want: []want{{field.ErrorTypeInvalid, "data", "field is immutable"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := tt.old.DeepCopyObject()
			tt.edit(obj)
			assertErrors(t, Update(obj, tt.old, true), tt.want)
		})
	}
}
