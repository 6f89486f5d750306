package defaults

import (
	"maps"
	"math"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Legacy Job labels that upstream still writes next to the
// batch.kubernetes.io/ ones; k8s.io/api does not export them.
const (
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
)

// ReplicationController defaults replicas to 1, and the selector and the
// object's labels to the template's labels when they are empty.
func ReplicationController(rc *corev1.ReplicationController) {
	if rc.Spec.Replicas == nil {
		rc.Spec.Replicas = ptr.To[int32](1)
	}
	if rc.Spec.Template == nil {
		return
	}
	// Copies, so that later edits of one map do not leak into the others.
	if labels := rc.Spec.Template.Labels; labels != nil {
		if len(rc.Spec.Selector) == 0 {
			rc.Spec.Selector = maps.Clone(labels)
		}
		if len(rc.Labels) == 0 {
			rc.Labels = maps.Clone(labels)
		}
	}
	PodTemplateSpec(rc.Spec.Template)
}

// ReplicaSet defaults replicas to 1. Unlike ReplicationController, apps/v1
// does not default the selector.
func ReplicaSet(rs *appsv1.ReplicaSet) {
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = ptr.To[int32](1)
	}
	PodTemplateSpec(&rs.Spec.Template)
}

// Deployment defaults replicas to 1, the strategy to RollingUpdate with 25%
// maxSurge and maxUnavailable, revisionHistoryLimit to 10 and
// progressDeadlineSeconds to 600.
func Deployment(d *appsv1.Deployment) {
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptr.To[int32](1)
	}
	s := &d.Spec.Strategy
	if s.Type == "" {
		s.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if s.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if s.RollingUpdate == nil {
			s.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if s.RollingUpdate.MaxUnavailable == nil {
			s.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("25%"))
		}
		if s.RollingUpdate.MaxSurge == nil {
			s.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("25%"))
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	}
	PodTemplateSpec(&d.Spec.Template)
}

// DaemonSet defaults the update strategy to RollingUpdate with
// maxUnavailable 1 and maxSurge 0, and revisionHistoryLimit to 10.
func DaemonSet(ds *appsv1.DaemonSet) {
	s := &ds.Spec.UpdateStrategy
	if s.Type == "" {
		s.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if s.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if s.RollingUpdate == nil {
			s.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if s.RollingUpdate.MaxUnavailable == nil {
			s.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
		}
		if s.RollingUpdate.MaxSurge == nil {
			s.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(0))
		}
	}
	if ds.Spec.RevisionHistoryLimit == nil {
		ds.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	PodTemplateSpec(&ds.Spec.Template)
}

// Job defaults completions and parallelism to 1 when both are unset (a
// non-parallel job), parallelism alone to 1, backoffLimit to 6 (MaxInt32
// with backoffLimitPerIndex), completionMode NonIndexed, suspend and
// manualSelector false, and podReplacementPolicy to TerminatingOrFailed
// (Failed with a podFailurePolicy). The Job's labels default to the
// template's labels.
func Job(job *batchv1.Job) {
	spec := &job.Spec
	if spec.Completions == nil && spec.Parallelism == nil {
		spec.Completions = ptr.To[int32](1)
	}
	if spec.Parallelism == nil {
		spec.Parallelism = ptr.To[int32](1)
	}
	if spec.BackoffLimit == nil {
		if spec.BackoffLimitPerIndex != nil {
			spec.BackoffLimit = ptr.To[int32](math.MaxInt32)
		} else {
			spec.BackoffLimit = ptr.To[int32](6)
		}
	}
	if labels := spec.Template.Labels; labels != nil && len(job.Labels) == 0 {
		job.Labels = maps.Clone(labels)
	}
	if spec.CompletionMode == nil {
		spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr.To(false)
	}
	if spec.PodFailurePolicy != nil {
		for i := range spec.PodFailurePolicy.Rules {
			for j := range spec.PodFailurePolicy.Rules[i].OnPodConditions {
				if c := &spec.PodFailurePolicy.Rules[i].OnPodConditions[j]; c.Status == "" {
					c.Status = corev1.ConditionTrue
				}
			}
		}
	}
	if spec.PodReplacementPolicy == nil {
		if spec.PodFailurePolicy != nil {
			spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
		} else {
			spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
		}
	}
	if spec.ManualSelector == nil {
		spec.ManualSelector = ptr.To(false)
	}
	PodTemplateSpec(&spec.Template)
}

// JobSelector generates the selector of a Job whose manualSelector is not
// true: it labels the template with the job's name and UID (legacy and
// batch.kubernetes.io/ keys) and selects on the UID. Upstream does this in
// the Job strategy on create, so call it after the UID is assigned and
// before validation. Labels the user already set are kept; validation then
// reports any conflict.
func JobSelector(job *batchv1.Job) {
	if job.Spec.ManualSelector != nil && *job.Spec.ManualSelector {
		return
	}
	if job.Spec.Template.Labels == nil {
		job.Spec.Template.Labels = map[string]string{}
	}
	setIfAbsent := func(m map[string]string, key, value string) {
		if _, ok := m[key]; !ok {
			m[key] = value
		}
	}
	labels := job.Spec.Template.Labels
	setIfAbsent(labels, legacyJobNameLabel, job.Name)
	setIfAbsent(labels, batchv1.JobNameLabel, job.Name)
	setIfAbsent(labels, legacyControllerUIDLabel, string(job.UID))
	setIfAbsent(labels, batchv1.ControllerUidLabel, string(job.UID))
	if job.Spec.Selector == nil {
		job.Spec.Selector = &metav1.LabelSelector{}
	}
	if job.Spec.Selector.MatchLabels == nil {
		job.Spec.Selector.MatchLabels = map[string]string{}
	}
	setIfAbsent(job.Spec.Selector.MatchLabels, batchv1.ControllerUidLabel, string(job.UID))
}
