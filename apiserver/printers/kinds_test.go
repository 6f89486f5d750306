package printers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func objectMeta(name string, age time.Duration) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: ago(age)}
}

func podTemplate(labels map[string]string, containers ...string) corev1.PodTemplateSpec {
	t := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	for _, c := range containers {
		t.Spec.Containers = append(t.Spec.Containers, corev1.Container{Name: c, Image: "registry.local/" + c + ":1"})
	}
	return t
}

var webLabels = map[string]string{"app": "web"}

func TestKindTablesMatchGolden(t *testing.T) {
	assertGoldenTables(t, []goldenTable{
		{
			name: "namespaces show their phase",
			kind: "Namespace",
			objs: []runtime.Object{
				&corev1.Namespace{ObjectMeta: objectMeta("default", 30*24*time.Hour), Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
				&corev1.Namespace{ObjectMeta: objectMeta("old", 400*24*time.Hour), Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
			},
			golden: "namespace.golden",
		},
		{
			name: "replication controllers show desired, current and ready replicas",
			kind: "ReplicationController",
			objs: []runtime.Object{
				&corev1.ReplicationController{
					ObjectMeta: objectMeta("web", 2*time.Hour),
					Spec:       corev1.ReplicationControllerSpec{Replicas: ptr[int32](3), Selector: webLabels, Template: ptr(podTemplate(webLabels, "nginx", "log"))},
					Status:     corev1.ReplicationControllerStatus{Replicas: 3, ReadyReplicas: 2},
				},
				&corev1.ReplicationController{ObjectMeta: objectMeta("bare", time.Minute)},
			},
			golden: "replicationcontroller.golden",
		},
		{
			name: "replica sets show desired, current and ready replicas",
			kind: "ReplicaSet",
			objs: []runtime.Object{
				&appsv1.ReplicaSet{
					ObjectMeta: objectMeta("web-5d8f", 2*time.Hour),
					Spec: appsv1.ReplicaSetSpec{
						Replicas: ptr[int32](3),
						Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "pod-template-hash": "5d8f"}},
						Template: podTemplate(webLabels, "nginx"),
					},
					Status: appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 3},
				},
				&appsv1.ReplicaSet{ObjectMeta: objectMeta("bare", time.Minute)},
			},
			golden: "replicaset.golden",
		},
		{
			name: "deployments show ready out of desired replicas",
			kind: "Deployment",
			objs: []runtime.Object{
				&appsv1.Deployment{
					ObjectMeta: objectMeta("web", 26*time.Hour),
					Spec: appsv1.DeploymentSpec{
						Replicas: ptr[int32](3),
						Selector: &metav1.LabelSelector{MatchLabels: webLabels, MatchExpressions: []metav1.LabelSelectorRequirement{
							{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front", "edge"}},
						}},
						Template: podTemplate(webLabels, "nginx", "log"),
					},
					Status: appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2},
				},
				&appsv1.Deployment{
					ObjectMeta: objectMeta("bad-selector", time.Minute),
					Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: "tier", Operator: "Near"},
					}}},
				},
				&appsv1.Deployment{ObjectMeta: objectMeta("bare", time.Minute)},
			},
			golden: "deployment.golden",
		},
		{
			name: "daemon sets show scheduling counts and their node selector",
			kind: "DaemonSet",
			objs: []runtime.Object{
				&appsv1.DaemonSet{
					ObjectMeta: objectMeta("agent", 5*24*time.Hour),
					Spec: appsv1.DaemonSetSpec{
						Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
						Template: func() corev1.PodTemplateSpec {
							t := podTemplate(map[string]string{"app": "agent"}, "agent")
							t.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
							return t
						}(),
					},
					Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 2, UpdatedNumberScheduled: 3, NumberAvailable: 2},
				},
				&appsv1.DaemonSet{ObjectMeta: objectMeta("bare", time.Minute)},
			},
			golden: "daemonset.golden",
		},
		{
			name: "stateful sets show ready over desired replicas",
			kind: "StatefulSet",
			objs: []runtime.Object{
				&appsv1.StatefulSet{
					ObjectMeta: objectMeta("kv", 3*time.Hour),
					Spec:       appsv1.StatefulSetSpec{Replicas: ptr[int32](2), Template: podTemplate(map[string]string{"app": "kv"}, "kv")},
					Status:     appsv1.StatefulSetStatus{Replicas: 2, ReadyReplicas: 1},
				},
			},
			golden: "statefulset.golden",
		},
		{
			name: "controller revisions show their controller as kind.group/name and their revision",
			kind: "ControllerRevision",
			objs: []runtime.Object{
				&appsv1.ControllerRevision{ObjectMeta: func() metav1.ObjectMeta {
					m := objectMeta("kv-7c9d8b5f4", time.Hour)
					m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "kv", Controller: ptr(true)}}
					return m
				}(), Revision: 2},
				&appsv1.ControllerRevision{ObjectMeta: objectMeta("orphan", time.Hour), Revision: 1},
			},
			golden: "controllerrevision.golden",
		},
		{
			name: "cron jobs show schedule, time zone, suspend, active jobs and the last schedule",
			kind: "CronJob",
			objs: []runtime.Object{
				&batchv1.CronJob{
					ObjectMeta: objectMeta("backup", 2*time.Hour),
					Spec: batchv1.CronJobSpec{Schedule: "*/5 * * * *", TimeZone: ptr("Europe/Paris"), Suspend: ptr(false),
						JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: podTemplate(nil, "backup")}}},
					Status: batchv1.CronJobStatus{Active: []corev1.ObjectReference{{Name: "backup-29000000"}}, LastScheduleTime: agoPtr(3 * time.Minute)},
				},
				&batchv1.CronJob{ObjectMeta: objectMeta("never", time.Minute), Spec: batchv1.CronJobSpec{Schedule: "@daily", Suspend: ptr(true)}},
			},
			golden: "cronjob.golden",
		},
		{
			name:   "jobs show status, completions and duration",
			kind:   "Job",
			objs:   jobObjects(),
			golden: "job.golden",
		},
		{
			name:   "core and events.k8s.io events print the same columns",
			kind:   "Event",
			objs:   eventObjects(),
			golden: "event.golden",
		},
		{
			name: "leases show their holder",
			kind: "Lease",
			objs: []runtime.Object{
				&coordinationv1.Lease{ObjectMeta: objectMeta("minik-scheduler", time.Hour), Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("host-a_1234")}},
				&coordinationv1.Lease{ObjectMeta: objectMeta("unheld", time.Hour)},
			},
			golden: "lease.golden",
		},
		{
			name: "priority classes show value, global default and preemption policy",
			kind: "PriorityClass",
			objs: []runtime.Object{
				&schedulingv1.PriorityClass{ObjectMeta: objectMeta("system-node-critical", 10*24*time.Hour), Value: 2000001000, PreemptionPolicy: ptr(corev1.PreemptLowerPriority)},
				&schedulingv1.PriorityClass{ObjectMeta: objectMeta("batch-default", time.Hour), Value: -10, GlobalDefault: true, PreemptionPolicy: ptr(corev1.PreemptNever)},
				&schedulingv1.PriorityClass{ObjectMeta: objectMeta("unset-policy", time.Hour), Value: 1},
			},
			golden: "priorityclass.golden",
		},
		{
			name: "config maps count text and binary keys",
			kind: "ConfigMap",
			objs: []runtime.Object{
				&corev1.ConfigMap{ObjectMeta: objectMeta("settings", time.Hour), Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"c": {0}}},
				&corev1.ConfigMap{ObjectMeta: objectMeta("empty", time.Hour)},
			},
			golden: "configmap.golden",
		},
		{
			name: "secrets show their type and count keys once",
			kind: "Secret",
			objs: []runtime.Object{
				&corev1.Secret{ObjectMeta: objectMeta("creds", time.Hour), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"user": []byte("u"), "pass": []byte("p")}},
				&corev1.Secret{ObjectMeta: objectMeta("mixed", time.Hour), Type: corev1.SecretTypeBasicAuth,
					Data: map[string][]byte{"username": []byte("u")}, StringData: map[string]string{"username": "v", "password": "p"}},
			},
			golden: "secret.golden",
		},
		{
			name: "service accounts count their secrets",
			kind: "ServiceAccount",
			objs: []runtime.Object{
				&corev1.ServiceAccount{ObjectMeta: objectMeta("default", 30*24*time.Hour)},
				&corev1.ServiceAccount{ObjectMeta: objectMeta("builder", time.Hour), Secrets: []corev1.ObjectReference{{Name: "builder-token"}}},
			},
			golden: "serviceaccount.golden",
		},
		{
			name: "pod disruption budgets show their bounds, N/A when unset",
			kind: "PodDisruptionBudget",
			objs: []runtime.Object{
				&policyv1.PodDisruptionBudget{ObjectMeta: objectMeta("web", time.Hour),
					Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr(intstr.FromInt32(2))},
					Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}},
				&policyv1.PodDisruptionBudget{ObjectMeta: objectMeta("db", time.Hour),
					Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr(intstr.FromString("25%"))}},
			},
			golden: "poddisruptionbudget.golden",
		},
		{
			name: "horizontal pod autoscalers show their reference, targets with <unknown> before a reading, and bounds, v1 as v2",
			kind: "HorizontalPodAutoscaler",
			objs: []runtime.Object{
				&autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: objectMeta("web", time.Hour),
					Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
						ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
						MinReplicas:    ptr(int32(1)), MaxReplicas: 3,
						Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
							Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
								Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(50))}}}}},
					Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, CurrentMetrics: []autoscalingv2.MetricStatus{{
						Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU,
							Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr(int32(145))}}}}}},
				&autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: objectMeta("api", time.Minute),
					Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
						ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "ReplicaSet", Name: "api"}, MaxReplicas: 10,
						Metrics: []autoscalingv2.MetricSpec{
							{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
								Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(80))}}},
							{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory,
								Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr(resource.MustParse("100Mi"))}}},
							{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory,
								Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(90))}}},
						}}},
				&autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: objectMeta("old", time.Hour),
					Spec: autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: "Deployment", Name: "old"},
						MinReplicas: ptr(int32(2)), MaxReplicas: 4, TargetCPUUtilizationPercentage: ptr(int32(60))},
					Status: autoscalingv1.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, CurrentCPUUtilizationPercentage: ptr(int32(30))}},
			},
			golden: "horizontalpodautoscaler.golden",
		},
		{
			name: "services show type, cluster IP, external IP and ports",
			kind: "Service",
			objs: []runtime.Object{
				&corev1.Service{ObjectMeta: objectMeta("kubernetes", 30*24*time.Hour), Spec: corev1.ServiceSpec{
					Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.1", ClusterIPs: []string{"10.96.0.1"},
					Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}}}},
				&corev1.Service{ObjectMeta: objectMeta("web", time.Hour), Spec: corev1.ServiceSpec{
					Type: corev1.ServiceTypeNodePort, ClusterIPs: []string{"10.104.3.7"}, Selector: webLabels,
					Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP},
						{Name: "dns", Port: 53, NodePort: 30053, Protocol: corev1.ProtocolUDP}}}},
				&corev1.Service{ObjectMeta: objectMeta("db", time.Minute), Spec: corev1.ServiceSpec{
					Type: corev1.ServiceTypeClusterIP, ClusterIPs: []string{"None"}, Selector: map[string]string{"app": "db"}}},
				&corev1.Service{ObjectMeta: objectMeta("lb", time.Minute), Spec: corev1.ServiceSpec{
					Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.99.0.4"},
					Ports: []corev1.ServicePort{{Port: 443, NodePort: 31443, Protocol: corev1.ProtocolTCP}}}},
				&corev1.Service{ObjectMeta: objectMeta("lb-ready", time.Minute), Spec: corev1.ServiceSpec{
					Type: corev1.ServiceTypeLoadBalancer, ClusterIPs: []string{"10.99.0.5"}, ExternalIPs: []string{"192.0.2.9"},
					Ports: []corev1.ServicePort{{Port: 443, NodePort: 31444, Protocol: corev1.ProtocolTCP}}},
					Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}}}}},
				&corev1.Service{ObjectMeta: objectMeta("ext", time.Minute), Spec: corev1.ServiceSpec{
					Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}},
			},
			golden: "service.golden",
		},
		{
			name: "resource quotas show used/hard, limits apart",
			kind: "ResourceQuota",
			objs: []runtime.Object{
				&corev1.ResourceQuota{ObjectMeta: objectMeta("compute", time.Hour), Status: corev1.ResourceQuotaStatus{
					Hard: corev1.ResourceList{"pods": resource.MustParse("10"), "requests.cpu": resource.MustParse("2"), "limits.memory": resource.MustParse("4Gi")},
					Used: corev1.ResourceList{"pods": resource.MustParse("3"), "requests.cpu": resource.MustParse("500m"), "limits.memory": resource.MustParse("1Gi")}}},
				&corev1.ResourceQuota{ObjectMeta: objectMeta("new", time.Second)},
			},
			golden: "resourcequota.golden",
		},
		{
			name: "limit ranges show when they were created",
			kind: "LimitRange",
			objs: []runtime.Object{&corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: "default",
				CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}}},
			golden: "limitrange.golden",
		},
		{
			name: "endpoints show up to three ip:port pairs",
			kind: "Endpoints",
			objs: []runtime.Object{
				&corev1.Endpoints{ObjectMeta: objectMeta("web", time.Hour), Subsets: []corev1.EndpointSubset{{
					Addresses:         []corev1.EndpointAddress{{IP: "10.244.0.5"}, {IP: "10.244.0.6"}},
					NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.244.0.7"}},
					Ports:             []corev1.EndpointPort{{Port: 8080, Protocol: corev1.ProtocolTCP}}}}},
				&corev1.Endpoints{ObjectMeta: objectMeta("many", time.Hour), Subsets: []corev1.EndpointSubset{{
					Addresses: []corev1.EndpointAddress{{IP: "10.244.0.5"}, {IP: "10.244.0.6"}, {IP: "10.244.1.5"}},
					Ports:     []corev1.EndpointPort{{Name: "a", Port: 80}, {Name: "b", Port: 443}}}}},
				&corev1.Endpoints{ObjectMeta: objectMeta("headless", time.Hour), Subsets: []corev1.EndpointSubset{{
					Addresses: []corev1.EndpointAddress{{IP: "10.244.0.9"}}}}},
				&corev1.Endpoints{ObjectMeta: objectMeta("empty", time.Minute)},
			},
			golden: "endpoints.golden",
		},
		{
			name: "endpoint slices show address type, ports and endpoints",
			kind: "EndpointSlice",
			objs: []runtime.Object{
				&discoveryv1.EndpointSlice{ObjectMeta: objectMeta("web-7xk2p", time.Hour), AddressType: discoveryv1.AddressTypeIPv4,
					Ports: []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr[int32](8080)}},
					Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.5"}}, {Addresses: []string{"10.244.0.6"}},
						{Addresses: []string{"10.244.1.5"}}, {Addresses: []string{"10.244.1.6"}}}},
				&discoveryv1.EndpointSlice{ObjectMeta: objectMeta("named-port", time.Hour), AddressType: discoveryv1.AddressTypeIPv4,
					Ports: []discoveryv1.EndpointPort{{Name: ptr("http")}}},
				&discoveryv1.EndpointSlice{ObjectMeta: objectMeta("empty", time.Minute), AddressType: discoveryv1.AddressTypeIPv6},
			},
			golden: "endpointslice.golden",
		},
		{
			name: "kinds without their own printer show name and age",
			kind: "Widget",
			objs: []runtime.Object{
				&unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "example.com/v1", "kind": "Widget",
					"metadata": map[string]any{"name": "gizmo", "creationTimestamp": ago(90 * time.Second).UTC().Format(time.RFC3339)},
				}},
				&unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "no-timestamp"},
				}},
			},
			golden: "default.golden",
		},
	})
}

// makeJob builds a job; mutate adjusts it.
func makeJob(name string, mutate func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: objectMeta(name, 10*time.Minute),
		Spec: batchv1.JobSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "uid-" + name}},
			Template: podTemplate(nil, "work"),
		},
	}
	mutate(j)
	return j
}

func condition(t batchv1.JobConditionType, s corev1.ConditionStatus) batchv1.JobCondition {
	return batchv1.JobCondition{Type: t, Status: s}
}

var jobCases = []struct {
	name                                      string
	job                                       *batchv1.Job
	wantStatus, wantCompletions, wantDuration string
}{
	{
		name:       "a job that has not started shows Running with no duration",
		job:        makeJob("not-started", func(j *batchv1.Job) { j.Spec.Completions = ptr[int32](1) }),
		wantStatus: "Running", wantCompletions: "0/1", wantDuration: "",
	},
	{
		name: "a running job's duration grows from its start time",
		job: makeJob("running", func(j *batchv1.Job) {
			j.Spec.Completions = ptr[int32](3)
			j.Status.Succeeded = 1
			j.Status.StartTime = agoPtr(5 * time.Minute)
		}),
		wantStatus: "Running", wantCompletions: "1/3", wantDuration: "5m",
	},
	{
		name: "a complete job's duration runs from start to completion",
		job: makeJob("complete", func(j *batchv1.Job) {
			j.Spec.Completions = ptr[int32](1)
			j.Status.Succeeded = 1
			j.Status.StartTime = agoPtr(9 * time.Minute)
			j.Status.CompletionTime = agoPtr(9*time.Minute - 42*time.Second)
			j.Status.Conditions = []batchv1.JobCondition{condition(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue), condition(batchv1.JobComplete, corev1.ConditionTrue)}
		}),
		wantStatus: "Complete", wantCompletions: "1/1", wantDuration: "42s",
	},
	{
		name: "a failed job shows Failed",
		job: makeJob("failed", func(j *batchv1.Job) {
			j.Status.StartTime = agoPtr(8 * time.Minute)
			j.Status.Conditions = []batchv1.JobCondition{condition(batchv1.JobFailureTarget, corev1.ConditionTrue), condition(batchv1.JobFailed, corev1.ConditionTrue)}
		}),
		wantStatus: "Failed", wantCompletions: "0/1", wantDuration: "8m",
	},
	{
		name: "a job that is about to fail shows FailureTarget",
		job: makeJob("failing", func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{condition(batchv1.JobFailureTarget, corev1.ConditionTrue)}
		}),
		wantStatus: "FailureTarget", wantCompletions: "0/1", wantDuration: "",
	},
	{
		name: "a suspended job shows Suspended",
		job: makeJob("suspended", func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{condition(batchv1.JobSuspended, corev1.ConditionTrue)}
		}),
		wantStatus: "Suspended", wantCompletions: "0/1", wantDuration: "",
	},
	{
		name: "a job being deleted shows Terminating",
		job: makeJob("deleting", func(j *batchv1.Job) {
			j.DeletionTimestamp = agoPtr(time.Second)
			j.Status.Conditions = []batchv1.JobCondition{condition(batchv1.JobSuspended, corev1.ConditionTrue)}
		}),
		wantStatus: "Terminating", wantCompletions: "0/1", wantDuration: "",
	},
	{
		name: "a finished job being deleted keeps its final status",
		job: makeJob("complete-deleting", func(j *batchv1.Job) {
			j.DeletionTimestamp = agoPtr(time.Second)
			j.Status.Conditions = []batchv1.JobCondition{condition(batchv1.JobComplete, corev1.ConditionTrue)}
		}),
		wantStatus: "Complete", wantCompletions: "0/1", wantDuration: "",
	},
	{
		name: "a condition that is not True does not count",
		job: makeJob("resumed", func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{condition(batchv1.JobSuspended, corev1.ConditionFalse)}
		}),
		wantStatus: "Running", wantCompletions: "0/1", wantDuration: "",
	},
	{
		name: "a work queue job shows its parallelism",
		job: makeJob("queue", func(j *batchv1.Job) {
			j.Spec.Parallelism = ptr[int32](4)
			j.Status.Succeeded = 2
		}),
		wantStatus: "Running", wantCompletions: "2/1 of 4", wantDuration: "",
	},
}

func jobObjects() []runtime.Object {
	objs := make([]runtime.Object, 0, len(jobCases))
	for _, tc := range jobCases {
		objs = append(objs, tc.job)
	}
	return objs
}

func TestJobColumns(t *testing.T) {
	for _, tc := range jobCases {
		t.Run(tc.name, func(t *testing.T) {
			r := printOne(t, "Job", tc.job)
			got := []any{cell(t, "Job", r, "Status"), cell(t, "Job", r, "Completions"), cell(t, "Job", r, "Duration")}
			if diff := cmp.Diff([]any{tc.wantStatus, tc.wantCompletions, tc.wantDuration}, got); diff != "" {
				t.Errorf("STATUS, COMPLETIONS, DURATION (-want +got):\n%s", diff)
			}
		})
	}
}

var eventCases = []struct {
	name  string
	event runtime.Object
	// LAST SEEN, OBJECT, SOURCE, MESSAGE, FIRST SEEN, COUNT
	want []any
}{
	{
		name: "an event from the old API shows its timestamps and count",
		event: &corev1.Event{
			ObjectMeta:     objectMeta("web-1.17f", time.Hour),
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web-1", FieldPath: "spec.containers{app}"},
			Reason:         "BackOff", Type: corev1.EventTypeWarning, Message: "Back-off restarting failed container\n",
			Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
			FirstTimestamp: ago(time.Hour), LastTimestamp: ago(2 * time.Minute), Count: 5,
		},
		want: []any{"2m", "pod/web-1", "kubelet, node-1", "Back-off restarting failed container", "60m", int64(5)},
	},
	{
		name: "a core event written through the new API falls back to eventTime and reporting controller",
		event: &corev1.Event{
			ObjectMeta:     objectMeta("web-1.180", time.Minute),
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web-1"},
			Reason:         "Scheduled", Type: corev1.EventTypeNormal, Message: "Successfully assigned default/web-1 to node-1",
			EventTime:           metav1.NewMicroTime(now.Add(-45 * time.Second)),
			ReportingController: "minik-scheduler", ReportingInstance: "minik-scheduler-host-a",
		},
		want: []any{"45s", "pod/web-1", "minik-scheduler, minik-scheduler-host-a", "Successfully assigned default/web-1 to node-1", "45s", int64(1)},
	},
	{
		name: "a repeated event shows its series' last observation and count",
		event: &corev1.Event{
			ObjectMeta:     objectMeta("node-1.181", time.Hour),
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-1"},
			Reason:         "NodeNotReady", Type: corev1.EventTypeNormal, Message: "Node node-1 status is now: NodeNotReady",
			EventTime:           metav1.NewMicroTime(now.Add(-time.Hour)),
			Series:              &corev1.EventSeries{Count: 7, LastObservedTime: metav1.NewMicroTime(now.Add(-3 * time.Minute))},
			ReportingController: "node-controller",
		},
		want: []any{"3m", "node/node-1", "node-controller", "Node node-1 status is now: NodeNotReady", "60m", int64(7)},
	},
	{
		name: "an events.k8s.io event maps regarding, note and deprecated fields",
		event: &eventsv1.Event{
			ObjectMeta: objectMeta("web-1.182", time.Hour),
			Regarding:  corev1.ObjectReference{Kind: "Pod", Name: "web-1"},
			Reason:     "Pulled", Type: corev1.EventTypeNormal, Note: "  Container image already present  ",
			DeprecatedSource:         corev1.EventSource{Component: "kubelet"},
			DeprecatedFirstTimestamp: ago(20 * time.Minute), DeprecatedLastTimestamp: ago(4 * time.Minute), DeprecatedCount: 2,
			ReportingInstance: "node-2",
		},
		want: []any{"4m", "pod/web-1", "kubelet, node-2", "Container image already present", "20m", int64(2)},
	},
	{
		name: "an events.k8s.io event without times shows <unknown>",
		event: &eventsv1.Event{
			ObjectMeta: objectMeta("cluster.183", time.Hour),
			Regarding:  corev1.ObjectReference{Kind: "Namespace"},
			Reason:     "Odd", Type: corev1.EventTypeWarning,
		},
		want: []any{"<unknown>", "namespace", "", "", "<unknown>", int64(1)},
	},
}

func eventObjects() []runtime.Object {
	objs := make([]runtime.Object, 0, len(eventCases))
	for _, tc := range eventCases {
		objs = append(objs, tc.event)
	}
	return objs
}

func TestEventColumns(t *testing.T) {
	for _, tc := range eventCases {
		t.Run(tc.name, func(t *testing.T) {
			r := printOne(t, "Event", tc.event)
			var got []any
			for _, c := range []string{"Last Seen", "Object", "Source", "Message", "First Seen", "Count"} {
				got = append(got, cell(t, "Event", r, c))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("LAST SEEN, OBJECT, SOURCE, MESSAGE, FIRST SEEN, COUNT (-want +got):\n%s", diff)
			}
		})
	}
}
