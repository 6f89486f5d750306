package defaults

import (
	"math"
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
	"k8s.io/utils/ptr"
)

var app = map[string]string{"app": "web"}

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default"}
}

func TestObject(t *testing.T) {
	limited := template(app)
	limited.Spec.Containers[0].Resources.Limits = rl("cpu", "1")
	wantLimited := defaultedTemplate(app)
	wantLimited.Spec.Containers[0].Resources.Limits = rl("cpu", "1")

	tests := []struct {
		name string
		in   runtime.Object
		want runtime.Object
	}{
		{
			name: "a pod gets its defaults and the default toleration seconds",
			in:   makePod().Container(ctr("app", "nginx")).Obj(),
			want: makePod().Container(defaultedCtr(ctr("app", "nginx"), corev1.PullAlways)).
				Toleration(corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}).
				Toleration(corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}).
				Defaulted(corev1.PodQOSBestEffort).Obj(),
		},
		{
			name: "a replication controller without selector or labels takes them from its template",
			in:   &corev1.ReplicationController{ObjectMeta: meta("rc"), Spec: corev1.ReplicationControllerSpec{Template: ptr.To(template(app))}},
			want: &corev1.ReplicationController{
				ObjectMeta: metav1.ObjectMeta{Name: "rc", Namespace: "default", Labels: app},
				Spec:       corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](1), Selector: app, Template: ptr.To(defaultedTemplate(app))},
			},
		},
		{
			name: "a replication controller keeps its own selector, labels and replicas",
			in: &corev1.ReplicationController{
				ObjectMeta: metav1.ObjectMeta{Name: "rc", Namespace: "default", Labels: map[string]string{"team": "a"}},
				Spec:       corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](0), Selector: map[string]string{"app": "x"}, Template: ptr.To(template(app))},
			},
			want: &corev1.ReplicationController{
				ObjectMeta: metav1.ObjectMeta{Name: "rc", Namespace: "default", Labels: map[string]string{"team": "a"}},
				Spec:       corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](0), Selector: map[string]string{"app": "x"}, Template: ptr.To(defaultedTemplate(app))},
			},
		},
		{
			name: "a replication controller without a template only gets replicas",
			in:   &corev1.ReplicationController{ObjectMeta: meta("rc")},
			want: &corev1.ReplicationController{ObjectMeta: meta("rc"), Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](1)}},
		},
		{
			name: "a replica set gets one replica and template defaults but no selector",
			in:   &appsv1.ReplicaSet{ObjectMeta: meta("rs"), Spec: appsv1.ReplicaSetSpec{Template: template(app)}},
			want: &appsv1.ReplicaSet{ObjectMeta: meta("rs"), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1), Template: defaultedTemplate(app)}},
		},
		{
			name: "a deployment gets a 25% rolling update, history 10 and a 600s progress deadline",
			in:   &appsv1.Deployment{ObjectMeta: meta("d"), Spec: appsv1.DeploymentSpec{Template: template(app)}},
			want: &appsv1.Deployment{ObjectMeta: meta("d"), Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromString("25%")),
				}},
				RevisionHistoryLimit: ptr.To[int32](10), ProgressDeadlineSeconds: ptr.To[int32](600),
				Template: defaultedTemplate(app),
			}},
		},
		{
			name: "a deployment keeps a partial rolling update and fills the other bound",
			in: &appsv1.Deployment{ObjectMeta: meta("d"), Spec: appsv1.DeploymentSpec{Template: template(app), Strategy: appsv1.DeploymentStrategy{
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(0))},
			}}},
			want: &appsv1.Deployment{ObjectMeta: meta("d"), Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromInt32(0)),
				}},
				RevisionHistoryLimit: ptr.To[int32](10), ProgressDeadlineSeconds: ptr.To[int32](600),
				Template: defaultedTemplate(app),
			}},
		},
		{
			name: "a Recreate deployment gets no rollingUpdate",
			in:   &appsv1.Deployment{ObjectMeta: meta("d"), Spec: appsv1.DeploymentSpec{Template: template(app), Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}}},
			want: &appsv1.Deployment{ObjectMeta: meta("d"), Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1), Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
				RevisionHistoryLimit: ptr.To[int32](10), ProgressDeadlineSeconds: ptr.To[int32](600),
				Template: defaultedTemplate(app),
			}},
		},
		{
			name: "a deployment template does not get the pod-only defaults",
			in:   &appsv1.Deployment{ObjectMeta: meta("d"), Spec: appsv1.DeploymentSpec{Template: limited}},
			want: &appsv1.Deployment{ObjectMeta: meta("d"), Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromString("25%")),
				}},
				RevisionHistoryLimit: ptr.To[int32](10), ProgressDeadlineSeconds: ptr.To[int32](600),
				Template: wantLimited,
			}},
		},
		{
			name: "a daemon set gets a rolling update of one unavailable and no surge, and history 10",
			in:   &appsv1.DaemonSet{ObjectMeta: meta("ds"), Spec: appsv1.DaemonSetSpec{Template: template(app)}},
			want: &appsv1.DaemonSet{ObjectMeta: meta("ds"), Spec: appsv1.DaemonSetSpec{
				UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{
					MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromInt32(0)),
				}},
				RevisionHistoryLimit: ptr.To[int32](10),
				Template:             defaultedTemplate(app),
			}},
		},
		{
			name: "an OnDelete daemon set gets no rollingUpdate",
			in: &appsv1.DaemonSet{ObjectMeta: meta("ds"), Spec: appsv1.DaemonSetSpec{Template: template(app),
				UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}}},
			want: &appsv1.DaemonSet{ObjectMeta: meta("ds"), Spec: appsv1.DaemonSetSpec{
				UpdateStrategy:       appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType},
				RevisionHistoryLimit: ptr.To[int32](10),
				Template:             defaultedTemplate(app),
			}},
		},
		{
			name: "a job with neither completions nor parallelism gets one of each and the batch defaults",
			in:   &batchv1.Job{ObjectMeta: meta("j"), Spec: batchv1.JobSpec{Template: template(app)}},
			want: &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default", Labels: app}, Spec: batchv1.JobSpec{
				Completions: ptr.To[int32](1), Parallelism: ptr.To[int32](1), BackoffLimit: ptr.To[int32](6),
				CompletionMode: ptr.To(batchv1.NonIndexedCompletion), Suspend: ptr.To(false), ManualSelector: ptr.To(false),
				PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed),
				Template:             defaultedTemplate(app),
			}},
		},
		{
			name: "a job with only parallelism keeps completions unset",
			in:   &batchv1.Job{ObjectMeta: meta("j"), Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](3), Template: template(nil)}},
			want: &batchv1.Job{ObjectMeta: meta("j"), Spec: batchv1.JobSpec{
				Parallelism: ptr.To[int32](3), BackoffLimit: ptr.To[int32](6),
				CompletionMode: ptr.To(batchv1.NonIndexedCompletion), Suspend: ptr.To(false), ManualSelector: ptr.To(false),
				PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed),
				Template:             defaultedTemplate(nil),
			}},
		},
		{
			name: "a job with a pod failure policy gets the Failed replacement policy and condition status True",
			in: &batchv1.Job{ObjectMeta: meta("j"), Spec: batchv1.JobSpec{Template: template(nil), PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}},
			}}}}},
			want: &batchv1.Job{ObjectMeta: meta("j"), Spec: batchv1.JobSpec{
				Completions: ptr.To[int32](1), Parallelism: ptr.To[int32](1), BackoffLimit: ptr.To[int32](6),
				CompletionMode: ptr.To(batchv1.NonIndexedCompletion), Suspend: ptr.To(false), ManualSelector: ptr.To(false),
				PodReplacementPolicy: ptr.To(batchv1.Failed),
				PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
					Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
				}}},
				Template: defaultedTemplate(nil),
			}},
		},
		{
			name: "a job with a per-index backoff limit gets an unlimited global backoff limit",
			in: &batchv1.Job{ObjectMeta: meta("j"), Spec: batchv1.JobSpec{Template: template(nil), Completions: ptr.To[int32](4),
				CompletionMode: ptr.To(batchv1.IndexedCompletion), BackoffLimitPerIndex: ptr.To[int32](1)}},
			want: &batchv1.Job{ObjectMeta: meta("j"), Spec: batchv1.JobSpec{
				Completions: ptr.To[int32](4), Parallelism: ptr.To[int32](1), BackoffLimit: ptr.To[int32](math.MaxInt32), BackoffLimitPerIndex: ptr.To[int32](1),
				CompletionMode: ptr.To(batchv1.IndexedCompletion), Suspend: ptr.To(false), ManualSelector: ptr.To(false),
				PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed),
				Template:             defaultedTemplate(nil),
			}},
		},
		{
			name: "a pod template gets pod spec defaults",
			in:   &corev1.PodTemplate{ObjectMeta: meta("pt"), Template: template(app)},
			want: &corev1.PodTemplate{ObjectMeta: meta("pt"), Template: defaultedTemplate(app)},
		},
		{
			name: "a namespace is labelled with its name and becomes Active without a finalizer",
			in:   &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
			want: &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{corev1.LabelMetadataName: "team-a"}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
			},
		},
		{
			name: "a terminating namespace keeps its phase and a wrong name label is corrected",
			in: &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{corev1.LabelMetadataName: "other", "x": "y"}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
			},
			want: &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{corev1.LabelMetadataName: "team-a", "x": "y"}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
			},
		},
		{
			name: "a node reporting only capacity gets the same allocatable",
			in:   &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Capacity: rl("cpu", "2", "pods", "110")}},
			want: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Capacity: rl("cpu", "2", "pods", "110"), Allocatable: rl("cpu", "2", "pods", "110")}},
		},
		{
			name: "a node keeps the allocatable it reports",
			in:   &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Capacity: rl("cpu", "2"), Allocatable: rl("cpu", "1500m")}},
			want: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Capacity: rl("cpu", "2"), Allocatable: rl("cpu", "1500m")}},
		},
		{
			name: "a secret without a type is Opaque",
			in:   &corev1.Secret{ObjectMeta: meta("s")},
			want: &corev1.Secret{ObjectMeta: meta("s"), Type: corev1.SecretTypeOpaque},
		},
		{
			name: "a secret keeps its type",
			in:   &corev1.Secret{ObjectMeta: meta("s"), Type: corev1.SecretTypeTLS},
			want: &corev1.Secret{ObjectMeta: meta("s"), Type: corev1.SecretTypeTLS},
		},
		{
			name: "a config map without data gets an empty data map",
			in:   &corev1.ConfigMap{ObjectMeta: meta("c")},
			want: &corev1.ConfigMap{ObjectMeta: meta("c"), Data: map[string]string{}},
		},
		{
			name: "a priority class preempts lower priorities by default",
			in:   &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000},
			want: &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000, PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority)},
		},
		{
			name: "a priority class keeps PreemptNever",
			in:   &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "batch"}, PreemptionPolicy: ptr.To(corev1.PreemptNever)},
			want: &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "batch"}, PreemptionPolicy: ptr.To(corev1.PreemptNever)},
		},
		{
			name: "an event is left untouched",
			in:   &corev1.Event{ObjectMeta: meta("e"), Reason: "Started"},
			want: &corev1.Event{ObjectMeta: meta("e"), Reason: "Started"},
		},
		{
			name: "a lease is left untouched",
			in:   &coordinationv1.Lease{ObjectMeta: meta("l")},
			want: &coordinationv1.Lease{ObjectMeta: meta("l")},
		},
		{
			name: "a pod disruption budget is left untouched",
			in:   &policyv1.PodDisruptionBudget{ObjectMeta: meta("pdb")},
			want: &policyv1.PodDisruptionBudget{ObjectMeta: meta("pdb")},
		},
		{
			name: "an unknown type is left untouched",
			in:   &corev1.LimitRange{ObjectMeta: meta("lr")},
			want: &corev1.LimitRange{ObjectMeta: meta("lr")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			Object(tc.in)
			assertEqual(t, tc.want, tc.in)
		})
	}
}

func TestOnCreate(t *testing.T) {
	uid := "0a1b2c3d-0000-0000-0000-000000000001"
	jobMeta := metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "0a1b2c3d-0000-0000-0000-000000000001"}
	generated := map[string]string{
		"job-name": "pi", batchv1.JobNameLabel: "pi",
		"controller-uid": uid, batchv1.ControllerUidLabel: uid,
	}
	manualSelector := &metav1.LabelSelector{MatchLabels: app}

	tests := []struct {
		name string
		in   runtime.Object
		want runtime.Object
	}{
		{
			name: "a job without a manual selector selects its own uid and labels its template",
			in:   &batchv1.Job{ObjectMeta: jobMeta, Spec: batchv1.JobSpec{ManualSelector: ptr.To(false), Template: template(nil)}},
			want: &batchv1.Job{ObjectMeta: jobMeta, Spec: batchv1.JobSpec{
				ManualSelector: ptr.To(false),
				Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: uid}},
				Template:       corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: generated}, Spec: template(nil).Spec},
			}},
		},
		{
			name: "a generated selector keeps the template labels the user set",
			in:   &batchv1.Job{ObjectMeta: jobMeta, Spec: batchv1.JobSpec{Template: template(map[string]string{"job-name": "mine"})}},
			want: &batchv1.Job{ObjectMeta: jobMeta, Spec: batchv1.JobSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: uid}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
					"job-name": "mine", batchv1.JobNameLabel: "pi", "controller-uid": uid, batchv1.ControllerUidLabel: uid,
				}}, Spec: template(nil).Spec},
			}},
		},
		{
			name: "a job with a manual selector is left alone",
			in:   &batchv1.Job{ObjectMeta: jobMeta, Spec: batchv1.JobSpec{ManualSelector: ptr.To(true), Selector: manualSelector, Template: template(app)}},
			want: &batchv1.Job{ObjectMeta: jobMeta, Spec: batchv1.JobSpec{ManualSelector: ptr.To(true), Selector: manualSelector, Template: template(app)}},
		},
		{
			name: "a new namespace gets the kubernetes finalizer after its own",
			in:   &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"example.com/x"}}},
			want: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"example.com/x", corev1.FinalizerKubernetes}}},
		},
		{
			name: "a namespace that already has the kubernetes finalizer gets no second one",
			in:   &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}},
			want: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}},
		},
		{
			name: "a pod gets nothing more on create",
			in:   makePod().Obj(),
			want: makePod().Obj(),
		},
		{
			name: "other types are left untouched on create",
			in:   &corev1.ConfigMap{ObjectMeta: meta("c")},
			want: &corev1.ConfigMap{ObjectMeta: meta("c")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			OnCreate(tc.in)
			assertEqual(t, tc.want, tc.in)
		})
	}
}
