package validation

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"minik/apiserver/defaults"
)

func node(edits ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", ResourceVersion: "1"}, Status: corev1.NodeStatus{Capacity: rl("cpu", "2", "memory", "4Gi", "pods", "110")}}
	return defaulted(n, edits)
}

func namespace(name string) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"}}
	defaults.Object(ns)
	defaults.OnCreate(ns)
	return ns
}

func priorityClass(name string, value int32) *schedulingv1.PriorityClass {
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"}, Value: value}
	defaults.Object(pc)
	return pc
}

func TestCreate(t *testing.T) {
	tests := []struct {
		name       string
		obj        runtime.Object
		namespaced bool
		want       []want
	}{
		// ReplicationController
		{name: "a defaulted replication controller is valid", obj: replicationController(), namespaced: true},
		{
			name: "a replication controller whose selector misses its template labels is rejected", namespaced: true,
			obj:  replicationController(func(rc *corev1.ReplicationController) { rc.Spec.Selector = map[string]string{"app": "db"} }),
			want: []want{{field.ErrorTypeInvalid, "spec.template.metadata.labels", "`selector` does not match template `labels`"}},
		},
		{
			name: "a replication controller without a selector is rejected", namespaced: true,
			obj: replicationController(func(rc *corev1.ReplicationController) {
				rc.Spec.Selector = nil
				rc.Spec.Template.Labels = nil
			}),
			want: []want{{field.ErrorTypeRequired, "spec.selector", ""}},
		},
		{
			name: "negative replicas are rejected", namespaced: true,
			obj:  replicationController(func(rc *corev1.ReplicationController) { rc.Spec.Replicas = ptr.To[int32](-1) }),
			want: []want{{field.ErrorTypeInvalid, "spec.replicas", "must be greater than or equal to 0"}},
		},
		{
			name: "a replication controller template must restart Always", namespaced: true,
			obj: replicationController(func(rc *corev1.ReplicationController) {
				rc.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
			}),
			want: []want{{field.ErrorTypeNotSupported, "spec.template.spec.restartPolicy", `supported values: "Always"`}},
		},
		// ReplicaSet
		{name: "a defaulted replica set is valid", obj: replicaSet(), namespaced: true},
		{
			name: "a replica set without a selector is rejected", namespaced: true,
			obj: replicaSet(func(rs *appsv1.ReplicaSet) { rs.Spec.Selector = nil }),
			want: []want{
				{field.ErrorTypeRequired, "spec.selector", ""},
				{field.ErrorTypeInvalid, "spec.template.metadata.labels", "`selector` does not match template `labels`"},
			},
		},
		{
			name: "a replica set with an empty selector is rejected", namespaced: true,
			obj:  replicaSet(func(rs *appsv1.ReplicaSet) { rs.Spec.Selector = &metav1.LabelSelector{} }),
			want: []want{{field.ErrorTypeInvalid, "spec.selector", "empty selector is invalid for deployment"}},
		},
		{
			name: "a replica set selector with a bad operator is rejected", namespaced: true,
			obj: replicaSet(func(rs *appsv1.ReplicaSet) {
				rs.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}
			}),
			want: []want{
				{field.ErrorTypeInvalid, "spec.selector.matchExpressions[0].operator", "not a valid selector operator"},
				{field.ErrorTypeInvalid, "spec.selector", "invalid label selector"},
			},
		},
		// Deployment
		{name: "a defaulted deployment is valid", obj: deployment(), namespaced: true},
		{
			name: "a deployment whose selector misses its template labels is rejected", namespaced: true,
			obj:  deployment(func(d *appsv1.Deployment) { d.Spec.Selector.MatchLabels = map[string]string{"app": "db"} }),
			want: []want{{field.ErrorTypeInvalid, "spec.template.metadata.labels", "`selector` does not match template `labels`"}},
		},
		{
			name: "a rolling update may not have both bounds at zero", namespaced: true,
			obj: deployment(func(d *appsv1.Deployment) {
				d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromString("0%"))}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.strategy.rollingUpdate.maxUnavailable", "may not be 0 when `maxSurge` is 0"}},
		},
		{
			name: "maxUnavailable above 100% is rejected", namespaced: true,
			obj: deployment(func(d *appsv1.Deployment) {
				d.Spec.Strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("150%"))
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.strategy.rollingUpdate.maxUnavailable", "must not be greater than 100%"}},
		},
		{
			name: "a malformed percentage is rejected", namespaced: true,
			obj:  deployment(func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("lots")) }),
			want: []want{{field.ErrorTypeInvalid, "spec.strategy.rollingUpdate.maxSurge", "a valid percent string must be"}},
		},
		{
			name: "a Recreate deployment may not have rollingUpdate", namespaced: true,
			obj:  deployment(func(d *appsv1.Deployment) { d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType }),
			want: []want{{field.ErrorTypeForbidden, "spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'"}},
		},
		{
			name: "an unknown strategy type is rejected", namespaced: true,
			obj:  deployment(func(d *appsv1.Deployment) { d.Spec.Strategy.Type = "BlueGreen" }),
			want: []want{{field.ErrorTypeNotSupported, "spec.strategy.type", `"Recreate", "RollingUpdate"`}},
		},
		{
			name: "the progress deadline must exceed minReadySeconds", namespaced: true,
			obj:  deployment(func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 600 }),
			want: []want{{field.ErrorTypeInvalid, "spec.progressDeadlineSeconds", "must be greater than minReadySeconds"}},
		},
		{
			name: "a deployment template may not set activeDeadlineSeconds", namespaced: true,
			obj:  deployment(func(d *appsv1.Deployment) { d.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](10) }),
			want: []want{{field.ErrorTypeForbidden, "spec.template.spec.activeDeadlineSeconds", "activeDeadlineSeconds in ReplicaSet is not Supported"}},
		},
		{
			name: "a deployment template is validated as a pod spec", namespaced: true,
			obj:  deployment(func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "" }),
			want: []want{{field.ErrorTypeRequired, "spec.template.spec.containers[0].image", ""}},
		},
		{
			name: "a hostNetwork template may leave hostPort unset", namespaced: true,
			obj: deployment(func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.HostNetwork = true
				d.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
			}),
		},
		// DaemonSet
		{name: "a defaulted daemon set is valid", obj: daemonSet(), namespaced: true},
		{
			name: "a daemon set may not surge and leave pods unavailable at once", namespaced: true,
			obj: daemonSet(func(ds *appsv1.DaemonSet) {
				ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(1))
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.updateStrategy.rollingUpdate.maxSurge", "may not be set when maxUnavailable is non-zero"}},
		},
		{
			name: "a daemon set needs one non-zero rollout bound", namespaced: true,
			obj: daemonSet(func(ds *appsv1.DaemonSet) {
				ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
			}),
			want: []want{{field.ErrorTypeRequired, "spec.updateStrategy.rollingUpdate.maxUnavailable", "cannot be 0 when maxSurge is 0"}},
		},
		{
			name: "a daemon set with an empty selector is rejected", namespaced: true,
			obj:  daemonSet(func(ds *appsv1.DaemonSet) { ds.Spec.Selector = &metav1.LabelSelector{} }),
			want: []want{{field.ErrorTypeInvalid, "spec.selector", "empty selector is invalid for daemonset"}},
		},
		{
			name: "a daemon set whose selector misses its template labels is rejected", namespaced: true,
			obj:  daemonSet(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Labels = map[string]string{"app": "db"} }),
			want: []want{{field.ErrorTypeInvalid, "spec.template.metadata.labels", "`selector` does not match template `labels`"}},
		},
		// Job
		{name: "a job through the create pipeline is valid", obj: job(), namespaced: true},
		{
			name: "a job must not restart its pods Always", namespaced: true,
			obj:  job(func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways }),
			want: []want{{field.ErrorTypeRequired, "spec.template.spec.restartPolicy", `valid values: "OnFailure", "Never"`}},
		},
		{
			name: "a job with an unknown restart policy is rejected", namespaced: true,
			obj: job(func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "Sometimes" }),
			want: []want{
				{field.ErrorTypeNotSupported, "spec.template.spec.restartPolicy", `supported values: "Always", "OnFailure", "Never"`},
				{field.ErrorTypeNotSupported, "spec.template.spec.restartPolicy", `supported values: "OnFailure", "Never"`},
			},
		},
		{
			name: "negative parallelism and backoff limit are rejected", namespaced: true,
			obj: job(func(j *batchv1.Job) {
				j.Spec.Parallelism = ptr.To[int32](-1)
				j.Spec.BackoffLimit = ptr.To[int32](-1)
			}),
			want: []want{
				{field.ErrorTypeInvalid, "spec.parallelism", "must be greater than or equal to 0"},
				{field.ErrorTypeInvalid, "spec.backoffLimit", "must be greater than or equal to 0"},
			},
		},
		{
			name: "a job without its generated selector is rejected", namespaced: true,
			obj: func() runtime.Object {
				j := &batchv1.Job{ObjectMeta: objMeta("pi"), Spec: batchv1.JobSpec{Template: templateSpec(nil)}}
				j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
				defaults.Object(j)
				return j
			}(),
			want: []want{{field.ErrorTypeRequired, "spec.selector", ""}},
		},
		{
			name: "a generated selector that does not match the job's uid is rejected", namespaced: true,
			obj: job(func(j *batchv1.Job) {
				j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = "someone-else"
			}),
			want: []want{
				{field.ErrorTypeInvalid, "spec.selector", "`selector` not auto-generated"},
				{field.ErrorTypeInvalid, "spec.template.metadata.labels", "`selector` does not match template `labels`"},
			},
		},
		{
			name: "a manual selector must match the template labels", namespaced: true,
			obj: job(func(j *batchv1.Job) {
				j.Spec.ManualSelector = ptr.To(true)
				j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.template.metadata.labels", "`selector` does not match template `labels`"}},
		},
		{
			name: "a pod failure policy requires restartPolicy Never", namespaced: true,
			obj: job(func(j *batchv1.Job) {
				j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
				j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
					Action:      batchv1.PodFailurePolicyActionFailJob,
					OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}},
				}}}
				j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.template.spec.restartPolicy", `only "Never" is supported when podFailurePolicy is specified`}},
		},
		{
			name: "an indexed job whose pod hostnames would be too long is rejected", namespaced: true,
			obj: job(func(j *batchv1.Job) {
				j.Name = strings.Repeat("a", 62)
				j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				j.Spec.Completions = ptr.To[int32](10)
				for _, k := range []string{"job-name", batchv1.JobNameLabel} {
					j.Spec.Template.Labels[k] = j.Name
				}
			}),
			want: []want{{field.ErrorTypeInvalid, "metadata.name", "will not able to create pod with invalid DNS label"}},
		},
		{
			name: "an indexed job with a per-index backoff limit is valid", namespaced: true,
			obj: job(func(j *batchv1.Job) {
				j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				j.Spec.Completions = ptr.To[int32](5)
				j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
				j.Spec.MaxFailedIndexes = ptr.To[int32](2)
			}),
		},
		{
			name: "an indexed job may not allow more failed indexes than completions", namespaced: true,
			obj: job(func(j *batchv1.Job) {
				j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				j.Spec.Completions = ptr.To[int32](2)
				j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
				j.Spec.MaxFailedIndexes = ptr.To[int32](3)
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.maxFailedIndexes", "must be less than or equal to completions"}},
		},
		{
			name: "an indexed job's parallelism is capped", namespaced: true,
			obj: job(func(j *batchv1.Job) {
				j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				j.Spec.Completions = ptr.To[int32](5)
				j.Spec.Parallelism = ptr.To[int32](100_001)
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.parallelism", "must be less than or equal to 100000 when completion mode is Indexed"}},
		},
		{
			name: "a per-index backoff limit over many completions needs maxFailedIndexes", namespaced: true,
			obj: job(func(j *batchv1.Job) {
				j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				j.Spec.Completions = ptr.To[int32](100_001)
				j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
			}),
			want: []want{{field.ErrorTypeRequired, "spec.maxFailedIndexes", "must be specified when completions is above 100000"}},
		},
		{
			name: "a per-index backoff limit requires indexed completion mode", namespaced: true,
			obj:  job(func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptr.To[int32](1) }),
			want: []want{{field.ErrorTypeInvalid, "spec.backoffLimitPerIndex", "requires indexed completion mode"}},
		},
		{
			name: "an indexed job with a success policy is valid", namespaced: true,
			obj: job(func(j *batchv1.Job) {
				j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				j.Spec.Completions = ptr.To[int32](10)
				j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{
					{SucceededIndexes: ptr.To("0,2-5,9")}, {SucceededIndexes: ptr.To("1-3"), SucceededCount: ptr.To[int32](3)}, {SucceededCount: ptr.To[int32](10)}}}
			}),
		},
		{
			name: "a success policy requires indexed completion mode", namespaced: true,
			obj: job(func(j *batchv1.Job) {
				j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](1)}}}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.successPolicy", "requires indexed completion mode"}},
		},
		{
			name: "a success policy needs rules, and each rule succeededIndexes or succeededCount", namespaced: true,
			obj: job(func(j *batchv1.Job) {
				j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{}
			}),
			want: []want{{field.ErrorTypeRequired, "spec.successPolicy.rules", "at least one rules must be specified when the successPolicy is specified"}},
		},
		{
			name: "success policy rules are checked as upstream checks them", namespaced: true,
			obj: job(func(j *batchv1.Job) {
				j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				j.Spec.Completions = ptr.To[int32](5)
				j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{
					{},
					{SucceededIndexes: ptr.To("0-2,7")},
					{SucceededIndexes: ptr.To("3,1")},
					{SucceededIndexes: ptr.To("2-2")},
					{SucceededIndexes: ptr.To("1-2-3")},
					{SucceededIndexes: ptr.To("a")},
					{SucceededCount: ptr.To[int32](6)},
					{SucceededIndexes: ptr.To("0,1"), SucceededCount: ptr.To[int32](3)},
					{SucceededCount: ptr.To[int32](-1)},
				}}
			}),
			want: []want{
				{field.ErrorTypeRequired, "spec.successPolicy.rules[0]", "at least one of succeededCount or succeededIndexes must be specified"},
				{field.ErrorTypeInvalid, "spec.successPolicy.rules[1].succeededIndexes", `error parsing succeededIndexes: too large index: "7"`},
				{field.ErrorTypeInvalid, "spec.successPolicy.rules[2].succeededIndexes", "error parsing succeededIndexes: non-increasing order, previous: 3, current: 1"},
				{field.ErrorTypeInvalid, "spec.successPolicy.rules[3].succeededIndexes", "error parsing succeededIndexes: non-increasing order, previous: 2, current: 2"},
				{field.ErrorTypeInvalid, "spec.successPolicy.rules[4].succeededIndexes", `error parsing succeededIndexes: the fragment "1-2-3" violates the requirement that an index interval can have at most two parts separated by '-'`},
				{field.ErrorTypeInvalid, "spec.successPolicy.rules[5].succeededIndexes", `error parsing succeededIndexes: cannot convert string to integer for index: "a"`},
				{field.ErrorTypeInvalid, "spec.successPolicy.rules[6].succeededCount", "must be less than or equal to 5 (the number of specified completions)"},
				{field.ErrorTypeInvalid, "spec.successPolicy.rules[7].succeededCount", "must be less than or equal to 2 (the number of indexes in the specified succeededIndexes field)"},
				{field.ErrorTypeInvalid, "spec.successPolicy.rules[8].succeededCount", "must be greater than or equal to 0"},
			},
		},
		{
			name: "a success policy has at most 20 rules", namespaced: true,
			obj: job(func(j *batchv1.Job) {
				j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{}
				for range 21 {
					j.Spec.SuccessPolicy.Rules = append(j.Spec.SuccessPolicy.Rules, batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](1)})
				}
			}),
			want: []want{{field.ErrorTypeTooMany, "spec.successPolicy.rules", "must have at most 20 items"}},
		},
		{
			name: "a job with a full pod failure policy is valid", namespaced: true,
			obj: job(func(j *batchv1.Job) {
				j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
				j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
					{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
						ContainerName: ptr.To(j.Spec.Template.Spec.Containers[0].Name), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1, 42}}},
					{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
					{Action: batchv1.PodFailurePolicyActionCount, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{0, 3}}},
				}}
			}),
		},
		{
			name: "pod failure policy exit codes must name a container, be ordered, distinct, and not 0 with In", namespaced: true,
			obj: job(func(j *batchv1.Job) {
				j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
				j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
					{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
						ContainerName: ptr.To("nope"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{5, 0, 5}}},
				}}
			}),
			want: []want{
				{field.ErrorTypeInvalid, "spec.podFailurePolicy.rules[0].onExitCodes.containerName", "must be one of the container or initContainer names in the pod template"},
				{field.ErrorTypeInvalid, "spec.podFailurePolicy.rules[0].onExitCodes.values[1]", "must not be 0 for the In operator"},
				{field.ErrorTypeDuplicate, "spec.podFailurePolicy.rules[0].onExitCodes.values[2]", ""},
				{field.ErrorTypeInvalid, "spec.podFailurePolicy.rules[0].onExitCodes.values", "must be ordered"},
			},
		},
		{
			name: "the FailIndex action requires backoffLimitPerIndex, and a rule needs an action", namespaced: true,
			obj: job(func(j *batchv1.Job) {
				j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
				j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
					{Action: batchv1.PodFailurePolicyActionFailIndex, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1}}},
					{OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
				}}
			}),
			want: []want{
				{field.ErrorTypeInvalid, "spec.podFailurePolicy.rules[0].action", "requires the backoffLimitPerIndex to be set"},
				{field.ErrorTypeRequired, "spec.podFailurePolicy.rules[1].action", `valid values: ["Count" "FailIndex" "FailJob" "Ignore"]`},
			},
		},
		{
			name: "a pod failure policy only allows podReplacementPolicy Failed", namespaced: true,
			obj: job(func(j *batchv1.Job) {
				j.Spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
				j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
					{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
				}}
			}),
			want: []want{{field.ErrorTypeNotSupported, "spec.podReplacementPolicy", `supported values: "Failed"`}},
		},
		// Node
		{name: "a node reporting its capacity is valid", obj: node()},
		{
			name: "a node in a namespace is rejected",
			obj:  node(func(n *corev1.Node) { n.Namespace = "default" }),
			want: []want{{field.ErrorTypeForbidden, "metadata.namespace", "not allowed on this type"}},
		},
		{
			name: "a taint with an unknown effect is rejected where upstream reports it",
			obj: node(func(n *corev1.Node) {
				n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: "NoRun"}}
			}),
			want: []want{{field.ErrorTypeNotSupported, "metadata.taints[0].effect", ""}},
		},
		{
			name: "a taint without an effect is rejected",
			obj:  node(func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "dedicated"}} }),
			want: []want{{field.ErrorTypeRequired, "metadata.taints[0].effect", ""}},
		},
		{
			name: "a taint key that is not a qualified name is rejected",
			obj: node(func(n *corev1.Node) {
				n.Spec.Taints = []corev1.Taint{{Key: "bad key", Effect: corev1.TaintEffectNoSchedule}}
			}),
			want: []want{{field.ErrorTypeInvalid, "metadata.taints[0].key", ""}},
		},
		{
			name: "two taints with one key and effect are rejected",
			obj: node(func(n *corev1.Node) {
				n.Spec.Taints = []corev1.Taint{{Key: "k", Value: "a", Effect: corev1.TaintEffectNoSchedule}, {Key: "k", Value: "b", Effect: corev1.TaintEffectNoSchedule}}
			}),
			want: []want{{field.ErrorTypeDuplicate, "metadata.taints[1]", "taints must be unique by key and effect pair"}},
		},
		{
			name: "one key with two effects is two distinct taints",
			obj: node(func(n *corev1.Node) {
				n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}, {Key: "k", Effect: corev1.TaintEffectNoExecute}}
			}),
		},
		{
			name: "an unparsable pod CIDR is rejected",
			obj:  node(func(n *corev1.Node) { n.Spec.PodCIDR = "10.244.0.0/33" }),
			want: []want{{field.ErrorTypeInvalid, "spec.podCIDR", "must be a valid CIDR value"}},
		},
		{
			name: "a dual-stack pair of pod CIDRs is valid",
			obj: node(func(n *corev1.Node) {
				n.Spec.PodCIDR = "10.244.1.0/24"
				n.Spec.PodCIDRs = []string{"10.244.1.0/24", "fd00:1::/64"}
			}),
		},
		{
			name: "two IPv4 pod CIDRs are rejected",
			obj:  node(func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.244.1.0/24", "10.244.2.0/24"} }),
			want: []want{{field.ErrorTypeInvalid, "spec.podCIDRs", "may specify no more than one CIDR for each IP family"}},
		},
		{
			name: "a negative capacity is rejected",
			obj:  node(func(n *corev1.Node) { n.Status.Capacity = rl("cpu", "-1") }),
			want: []want{{field.ErrorTypeInvalid, "status.capacity.cpu", "must be greater than or equal to 0"}},
		},
		// Namespace
		{name: "a new namespace is valid", obj: namespace("team-a")},
		{
			name: "a namespace name must be a DNS label",
			obj:  namespace("team.a"),
			want: []want{{field.ErrorTypeInvalid, "metadata.name", "must not contain dots"}},
		},
		{
			name: "a namespace finalizer must be qualified or built in",
			obj: func() runtime.Object {
				ns := namespace("team-a")
				ns.Spec.Finalizers = append(ns.Spec.Finalizers, "mine")
				return ns
			}(),
			want: []want{{field.ErrorTypeInvalid, "spec.finalizers", "name is neither a standard finalizer name nor is it fully qualified"}},
		},
		// Event
		{
			name: "an event about a pod in its namespace is valid", namespaced: true,
			obj: &corev1.Event{ObjectMeta: objMeta("web.17a2b3c4d5e6f7a8"), InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"}, Reason: "Scheduled"},
		},
		{
			name: "an event about a node may live in default", namespaced: true,
			obj: &corev1.Event{ObjectMeta: objMeta("node-1.17a2b3c4d5e6f7a8"), InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-1"}, Reason: "NodeReady"},
		},
		{
			name: "an event whose object is in another namespace is rejected", namespaced: true,
			obj:  &corev1.Event{ObjectMeta: objMeta("web.1"), InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "other", Name: "web"}},
			want: []want{{field.ErrorTypeInvalid, "involvedObject.namespace", "does not match event.namespace"}},
		},
		{
			name: "a new-style event must name its reporter, action and reason", namespaced: true,
			obj: &corev1.Event{ObjectMeta: objMeta("web.1"), InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"}, EventTime: metav1.NowMicro()},
			want: []want{
				{field.ErrorTypeRequired, "reportingController", ""},
				{field.ErrorTypeInvalid, "reportingController", ""},
				{field.ErrorTypeInvalid, "reportingController", ""},
				{field.ErrorTypeRequired, "reportingInstance", ""},
				{field.ErrorTypeRequired, "action", ""},
				{field.ErrorTypeRequired, "reason", ""},
			},
		},
		// ConfigMap and Secret
		{name: "a config map with valid keys is valid", obj: &corev1.ConfigMap{ObjectMeta: objMeta("c"), Data: map[string]string{"app.conf": "x"}}, namespaced: true},
		{
			name: "a config map key with a slash is rejected", namespaced: true,
			obj:  &corev1.ConfigMap{ObjectMeta: objMeta("c"), Data: map[string]string{"a/b": "x"}},
			want: []want{{field.ErrorTypeInvalid, "data[a/b]", "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"}},
		},
		{
			name: "a key in both data and binaryData is rejected", namespaced: true,
			obj:  &corev1.ConfigMap{ObjectMeta: objMeta("c"), Data: map[string]string{"k": "x"}, BinaryData: map[string][]byte{"k": []byte("y")}},
			want: []want{{field.ErrorTypeInvalid, "data[k]", "duplicate of key present in binaryData"}},
		},
		{
			name: "a config map over 1MiB is rejected as a whole", namespaced: true,
			obj:  &corev1.ConfigMap{ObjectMeta: objMeta("c"), Data: map[string]string{"a": strings.Repeat("x", 1<<20), "b": "x"}},
			want: []want{{field.ErrorTypeTooLong, "[]", "may not be more than 1048576 bytes"}},
		},
		{name: "an opaque secret is valid", obj: &corev1.Secret{ObjectMeta: objMeta("s"), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"password": []byte("x")}}, namespaced: true},
		{
			name: "a TLS secret needs a certificate and a key", namespaced: true,
			obj:  &corev1.Secret{ObjectMeta: objMeta("s"), Type: corev1.SecretTypeTLS},
			want: []want{{field.ErrorTypeRequired, "data[tls.crt]", ""}, {field.ErrorTypeRequired, "data[tls.key]", ""}},
		},
		{
			name: "a secret over 1MiB is rejected at data", namespaced: true,
			obj:  &corev1.Secret{ObjectMeta: objMeta("s"), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a": make([]byte, 1<<20+1)}},
			want: []want{{field.ErrorTypeTooLong, "data", ""}},
		},
		{
			name: "a docker config secret must hold JSON", namespaced: true,
			obj:  &corev1.Secret{ObjectMeta: objMeta("s"), Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte("{")}},
			want: []want{{field.ErrorTypeInvalid, "data[.dockerconfigjson]", ""}},
		},
		// ServiceAccount and Lease
		{name: "a service account is valid", obj: &corev1.ServiceAccount{ObjectMeta: objMeta("builder")}, namespaced: true},
		{
			name: "a service account name must be a DNS subdomain", namespaced: true,
			obj:  &corev1.ServiceAccount{ObjectMeta: objMeta("Builder")},
			want: []want{{field.ErrorTypeInvalid, "metadata.name", ""}},
		},
		{
			name: "a leader election lease is valid", namespaced: true,
			obj: &coordinationv1.Lease{ObjectMeta: objMeta("minik-scheduler"), Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To("host-1"), LeaseDurationSeconds: ptr.To[int32](15), LeaseTransitions: ptr.To[int32](0),
			}},
		},
		{
			name: "a lease of zero seconds is rejected", namespaced: true,
			obj:  &coordinationv1.Lease{ObjectMeta: objMeta("l"), Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](0)}},
			want: []want{{field.ErrorTypeInvalid, "spec.leaseDurationSeconds", "must be greater than 0"}},
		},
		// PriorityClass
		{name: "a user priority class is valid", obj: priorityClass("high", 1000000)},
		{name: "the built-in system-cluster-critical class is valid", obj: priorityClass("system-cluster-critical", 2000000000)},
		{
			name: "a user priority above one billion is rejected",
			obj:  priorityClass("huge", 1000000001),
			want: []want{{field.ErrorTypeForbidden, "value", "maximum allowed value of a user defined priority is 1000000000"}},
		},
		{
			name: "the system- prefix is reserved",
			obj:  priorityClass("system-mine", 10),
			want: []want{{field.ErrorTypeForbidden, "metadata.name", "priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"}},
		},
		{
			name: "an unknown preemption policy is rejected",
			obj: func() runtime.Object {
				pc := priorityClass("high", 10)
				pc.PreemptionPolicy = ptr.To(corev1.PreemptionPolicy("Sometimes"))
				return pc
			}(),
			want: []want{{field.ErrorTypeNotSupported, "preemptionPolicy", `"PreemptLowerPriority", "Never"`}},
		},
		// PodDisruptionBudget
		{
			name: "a budget with minAvailable is valid", namespaced: true,
			obj: &policyv1.PodDisruptionBudget{ObjectMeta: objMeta("pdb"), Spec: policyv1.PodDisruptionBudgetSpec{
				MinAvailable: ptr.To(intstr.FromString("50%")), Selector: &metav1.LabelSelector{MatchLabels: web},
			}},
		},
		{
			name: "a budget may not set both minAvailable and maxUnavailable", namespaced: true,
			obj: &policyv1.PodDisruptionBudget{ObjectMeta: objMeta("pdb"), Spec: policyv1.PodDisruptionBudgetSpec{
				MinAvailable: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			}},
			want: []want{{field.ErrorTypeInvalid, "spec", "minAvailable and maxUnavailable cannot be both set"}},
		},
		{
			name: "a budget above 100% is rejected", namespaced: true,
			obj: &policyv1.PodDisruptionBudget{ObjectMeta: objMeta("pdb"), Spec: policyv1.PodDisruptionBudgetSpec{
				MaxUnavailable: ptr.To(intstr.FromString("150%")),
			}},
			want: []want{{field.ErrorTypeInvalid, "spec.maxUnavailable", "must not be greater than 100%"}},
		},
		// Types without specific rules
		{name: "an unknown type gets the metadata checks only", obj: &corev1.PodTemplate{ObjectMeta: objMeta("pt")}, namespaced: true},
		{
			name: "an unknown type with a bad name is rejected", namespaced: true,
			obj:  &corev1.PodTemplate{ObjectMeta: objMeta("Pt")},
			want: []want{{field.ErrorTypeInvalid, "metadata.name", ""}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertErrors(t, Create(tc.obj, tc.namespaced), tc.want)
		})
	}
}

func TestUpdate(t *testing.T) {
	suspended := job(func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) })
	immutableCM := &corev1.ConfigMap{ObjectMeta: objMeta("c"), Data: map[string]string{"k": "v"}, Immutable: ptr.To(true)}
	nodeWithCIDR := node(func(n *corev1.Node) { n.Spec.PodCIDR = "10.244.1.0/24"; n.Spec.PodCIDRs = []string{"10.244.1.0/24"} })

	tests := []struct {
		name       string
		old        runtime.Object
		edit       func(runtime.Object)
		namespaced bool
		want       []want
	}{
		{
			name: "scaling a deployment is allowed", old: deployment(), namespaced: true,
			edit: func(o runtime.Object) { o.(*appsv1.Deployment).Spec.Replicas = ptr.To[int32](5) },
		},
		{
			name: "changing a deployment's pod template is allowed", old: deployment(), namespaced: true,
			edit: func(o runtime.Object) { o.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Image = "nginx:1.27" },
		},
		{
			name: "changing a deployment's selector is rejected", old: deployment(), namespaced: true,
			edit: func(o runtime.Object) {
				d := o.(*appsv1.Deployment)
				d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "v": "2"}}
				d.Spec.Template.Labels = map[string]string{"app": "web", "v": "2"}
			},
			want: []want{{field.ErrorTypeInvalid, "spec.selector", "field is immutable"}},
		},
		{
			name: "changing a replica set's selector is rejected", old: replicaSet(), namespaced: true,
			edit: func(o runtime.Object) {
				rs := o.(*appsv1.ReplicaSet)
				rs.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "a"}}
				rs.Spec.Template.Labels["tier"] = "a"
			},
			want: []want{{field.ErrorTypeInvalid, "spec.selector", "field is immutable"}},
		},
		{
			name: "changing a daemon set's selector is rejected", old: daemonSet(), namespaced: true,
			edit: func(o runtime.Object) {
				ds := o.(*appsv1.DaemonSet)
				ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "a"}}
				ds.Spec.Template.Labels["tier"] = "a"
			},
			want: []want{{field.ErrorTypeInvalid, "spec.selector", "field is immutable"}},
		},
		{
			name: "changing a replication controller's selector is allowed", old: replicationController(), namespaced: true,
			edit: func(o runtime.Object) {
				rc := o.(*corev1.ReplicationController)
				rc.Spec.Selector = map[string]string{"tier": "a"}
				rc.Spec.Template.Labels["tier"] = "a"
			},
		},
		{
			name: "changing a job's template is rejected", old: job(), namespaced: true,
			edit: func(o runtime.Object) { o.(*batchv1.Job).Spec.Template.Spec.Containers[0].Image = "busybox:1.36" },
			want: []want{{field.ErrorTypeInvalid, "spec.template", "field is immutable"}},
		},
		{
			name: "changing a non-indexed job's completions is rejected", old: job(), namespaced: true,
			edit: func(o runtime.Object) { o.(*batchv1.Job).Spec.Completions = ptr.To[int32](3) },
			want: []want{{field.ErrorTypeInvalid, "spec.completions", "field is immutable"}},
		},
		{
			name: "suspending and resizing a job's parallelism is allowed", old: job(), namespaced: true,
			edit: func(o runtime.Object) {
				j := o.(*batchv1.Job)
				j.Spec.Suspend = ptr.To(true)
				j.Spec.Parallelism = ptr.To[int32](0)
			},
		},
		{
			name: "a suspended job that never started may move its pods", old: suspended, namespaced: true,
			edit: func(o runtime.Object) {
				o.(*batchv1.Job).Spec.Template.Spec.NodeSelector = map[string]string{"zone": "b"}
			},
		},
		{
			name: "a running job may not move its pods", old: job(), namespaced: true,
			edit: func(o runtime.Object) {
				o.(*batchv1.Job).Spec.Template.Spec.NodeSelector = map[string]string{"zone": "b"}
			},
			want: []want{{field.ErrorTypeInvalid, "spec.template", "field is immutable"}},
		},
		{
			name: "a priority class value cannot change", old: priorityClass("high", 10),
			edit: func(o runtime.Object) { o.(*schedulingv1.PriorityClass).Value = 20 },
			want: []want{{field.ErrorTypeForbidden, "value", "may not be changed in an update."}},
		},
		{
			name: "a priority class description may change", old: priorityClass("high", 10),
			edit: func(o runtime.Object) { o.(*schedulingv1.PriorityClass).Description = "for web" },
		},
		{
			name: "an immutable config map keeps its data", old: immutableCM, namespaced: true,
			edit: func(o runtime.Object) { o.(*corev1.ConfigMap).Data["k"] = "w" },
			want: []want{{field.ErrorTypeForbidden, "data", "field is immutable when `immutable` is set"}},
		},
		{
			name: "a mutable config map may change its data", old: &corev1.ConfigMap{ObjectMeta: objMeta("c"), Data: map[string]string{"k": "v"}}, namespaced: true,
			edit: func(o runtime.Object) { o.(*corev1.ConfigMap).Data["k"] = "w" },
		},
		{
			name: "a secret type cannot change", old: &corev1.Secret{ObjectMeta: objMeta("s"), Type: corev1.SecretTypeOpaque}, namespaced: true,
			edit: func(o runtime.Object) {
				s := o.(*corev1.Secret)
				s.Type = corev1.SecretTypeBasicAuth
				s.Data = map[string][]byte{"username": []byte("u")}
			},
			want: []want{{field.ErrorTypeInvalid, "type", "field is immutable"}},
		},
		{
			name: "a namespace may gain labels", old: namespace("team-a"),
			edit: func(o runtime.Object) { o.(*corev1.Namespace).Labels["team"] = "a" },
		},
		{
			name: "a node may gain taints", old: node(),
			edit: func(o runtime.Object) {
				o.(*corev1.Node).Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}}
			},
		},
		{
			name: "a node may get its first pod CIDR", old: node(),
			edit: func(o runtime.Object) { o.(*corev1.Node).Spec.PodCIDR = "10.244.1.0/24" },
		},
		{
			name: "a node pod CIDR cannot change once set", old: nodeWithCIDR,
			edit: func(o runtime.Object) {
				n := o.(*corev1.Node)
				n.Spec.PodCIDR = "10.244.2.0/24"
				n.Spec.PodCIDRs = []string{"10.244.2.0/24"}
			},
			want: []want{{field.ErrorTypeForbidden, "spec.podCIDRs", "node updates may not change podCIDR except from \"\" to valid"}},
		},
		{
			name: "a lease renewal is allowed", old: &coordinationv1.Lease{ObjectMeta: objMeta("l"), Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](15)}}, namespaced: true,
			edit: func(o runtime.Object) { o.(*coordinationv1.Lease).Spec.RenewTime = ptr.To(metav1.NowMicro()) },
		},
		{
			name: "an event may be counted again", old: &corev1.Event{ObjectMeta: objMeta("e"), InvolvedObject: corev1.ObjectReference{Namespace: "default"}, Count: 1}, namespaced: true,
			edit: func(o runtime.Object) { o.(*corev1.Event).Count = 2 },
		},
		{
			name: "an unknown type may change its labels", old: &corev1.LimitRange{ObjectMeta: objMeta("lr")}, namespaced: true,
			edit: func(o runtime.Object) { o.(*corev1.LimitRange).Labels = map[string]string{"a": "b"} },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			updated := tc.old.DeepCopyObject()
			tc.edit(updated)
			assertErrors(t, Update(updated, tc.old, tc.namespaced), tc.want)
		})
	}
}

func TestUpdateOfAnotherTypeIsAnInternalError(t *testing.T) {
	tests := []struct {
		name   string
		update func() field.ErrorList
	}{
		{name: "a pod replacing a deployment", update: func() field.ErrorList { return Update(makePod().Obj(), deployment(), true) }},
		{name: "a node status replacing a pod status", update: func() field.ErrorList { return StatusUpdate(node(), makePod().Obj()) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertErrors(t, tc.update(), []want{{field.ErrorTypeInternal, "[]", "cannot update a"}})
		})
	}
}

func TestStatusUpdate(t *testing.T) {
	deleting := namespace("team-a")
	deleting.DeletionTimestamp = ptr.To(metav1.Now())

	tests := []struct {
		name string
		old  runtime.Object
		edit func(runtime.Object)
		want []want
	}{
		{
			name: "a replica set reporting its replicas is valid", old: replicaSet(),
			edit: func(o runtime.Object) {
				o.(*appsv1.ReplicaSet).Status = appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 2, ObservedGeneration: 1}
			},
		},
		{
			name: "more ready replicas than replicas is rejected", old: replicaSet(),
			edit: func(o runtime.Object) {
				o.(*appsv1.ReplicaSet).Status = appsv1.ReplicaSetStatus{Replicas: 1, ReadyReplicas: 2}
			},
			want: []want{{field.ErrorTypeInvalid, "status.readyReplicas", "cannot be greater than status.replicas"}},
		},
		{
			name: "more available than ready replicas is rejected", old: replicationController(),
			edit: func(o runtime.Object) {
				o.(*corev1.ReplicationController).Status = corev1.ReplicationControllerStatus{Replicas: 3, ReadyReplicas: 1, AvailableReplicas: 2}
			},
			want: []want{{field.ErrorTypeInvalid, "status.availableReplicas", "cannot be greater than readyReplicas"}},
		},
		{
			name: "a negative deployment replica count is rejected", old: deployment(),
			edit: func(o runtime.Object) { o.(*appsv1.Deployment).Status.UnavailableReplicas = -1 },
			want: []want{{field.ErrorTypeInvalid, "status.unavailableReplicas", "must be greater than or equal to 0"}},
		},
		{
			name: "a deployment collision count cannot go down", old: deployment(func(d *appsv1.Deployment) { d.Status.CollisionCount = ptr.To[int32](2) }),
			edit: func(o runtime.Object) { o.(*appsv1.Deployment).Status.CollisionCount = ptr.To[int32](1) },
			want: []want{{field.ErrorTypeInvalid, "status.collisionCount", "cannot be decremented"}},
		},
		{
			name: "a negative daemon set count is rejected", old: daemonSet(),
			edit: func(o runtime.Object) { o.(*appsv1.DaemonSet).Status.NumberReady = -1 },
			want: []want{{field.ErrorTypeInvalid, "status.numberReady", "must be greater than or equal to 0"}},
		},
		{
			name: "a negative job active count is rejected", old: job(),
			edit: func(o runtime.Object) { o.(*batchv1.Job).Status.Active = -1 },
			want: []want{{field.ErrorTypeInvalid, "status.active", "must be greater than or equal to 0"}},
		},
		{
			name: "a namespace cannot terminate before it is deleted", old: namespace("team-a"),
			edit: func(o runtime.Object) { o.(*corev1.Namespace).Status.Phase = corev1.NamespaceTerminating },
			want: []want{{field.ErrorTypeInvalid, "status.Phase", "may only be 'Active' if `deletionTimestamp` is empty"}},
		},
		{
			name: "a deleted namespace terminates", old: deleting,
			edit: func(o runtime.Object) { o.(*corev1.Namespace).Status.Phase = corev1.NamespaceTerminating },
		},
		{
			name: "a budget cannot allow negative disruptions", old: &policyv1.PodDisruptionBudget{ObjectMeta: objMeta("pdb")},
			edit: func(o runtime.Object) { o.(*policyv1.PodDisruptionBudget).Status.DisruptionsAllowed = -1 },
			want: []want{{field.ErrorTypeInvalid, "status.disruptionsAllowed", "must be greater than or equal to 0"}},
		},
		{
			name: "a node may not report one address twice", old: node(),
			edit: func(o runtime.Object) {
				a := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.168.1.10"}
				o.(*corev1.Node).Status.Addresses = []corev1.NodeAddress{a, a}
			},
			want: []want{{field.ErrorTypeDuplicate, "status.addresses[1]", ""}},
		},
		{
			name: "a node heartbeat with conditions is valid", old: node(),
			edit: func(o runtime.Object) {
				o.(*corev1.Node).Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
			},
		},
		{
			name: "a status update must carry the resourceVersion", old: replicaSet(),
			edit: func(o runtime.Object) { o.(*appsv1.ReplicaSet).ResourceVersion = "" },
			want: []want{{field.ErrorTypeInvalid, "metadata.resourceVersion", "must be specified for an update"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			updated := tc.old.DeepCopyObject()
			tc.edit(updated)
			assertErrors(t, StatusUpdate(updated, tc.old), tc.want)
		})
	}
}
