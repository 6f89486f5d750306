package resourcequota

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik/internal/quota"
)

func list(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func pod(name string, phase corev1.PodPhase, req corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: req}}}},
		Status: corev1.PodStatus{Phase: phase}}
}

func TestStatus(t *testing.T) {
	now := time.Unix(1000, 0)
	gone := metav1.NewTime(now.Add(-time.Minute))
	grace := int64(30)
	stuck := pod("stuck", corev1.PodRunning, list("cpu", "1"))
	stuck.DeletionTimestamp, stuck.DeletionGracePeriodSeconds = &gone, &grace
	gold := "gold"
	claim := func(name, storage string, class *string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class, Resources: corev1.VolumeResourceRequirements{Requests: list("storage", storage)}}}
	}
	tests := []struct {
		name string
		hard corev1.ResourceList
		used corev1.ResourceList // the stored status.used (nil: no status yet)
		objs Objects
		want corev1.ResourceList
	}{
		{
			name: "running pods count, ended ones only as objects",
			hard: list("pods", "10", "count/pods", "10", "requests.cpu", "4"),
			objs: Objects{{"pods", ""}: {pod("a", corev1.PodRunning, list("cpu", "500m")), pod("b", corev1.PodSucceeded, list("cpu", "1"))}},
			want: list("pods", "1", "count/pods", "2", "requests.cpu", "500m"),
		},
		{
			name: "a pod past its deletion grace period no longer counts",
			hard: list("pods", "10", "cpu", "4"),
			objs: Objects{{"pods", ""}: {stuck}},
			want: list("pods", "0", "cpu", "0"),
		},
		{
			name: "object counts of other kinds, and a kind observed without objects is 0",
			hard: list("configmaps", "5", "count/deployments.apps", "2", "count/widgets.example.com", "1"),
			objs: Objects{{"configmaps", ""}: {&corev1.ConfigMap{}, &corev1.ConfigMap{}}, {"deployments", "apps"}: {&corev1.ConfigMap{}},
				{"widgets", "example.com"}: {}},
			want: list("configmaps", "2", "count/deployments.apps", "1", "count/widgets.example.com", "0"),
		},
		{
			name: "a name of a kind not observed (not served) keeps its usage, or stays without one",
			hard: list("count/widgets.example.com", "1", "count/gadgets.example.com", "1", "configmaps", "5"),
			used: list("count/widgets.example.com", "1"),
			objs: Objects{{"configmaps", ""}: {}},
			want: list("count/widgets.example.com", "1", "configmaps", "0"),
		},
		{
			name: "claims count their number and storage, and both again under their class",
			hard: list("persistentvolumeclaims", "5", "count/persistentvolumeclaims", "5", "requests.storage", "10Gi",
				"gold.storageclass.storage.k8s.io/requests.storage", "5Gi", "gold.storageclass.storage.k8s.io/persistentvolumeclaims", "2"),
			objs: Objects{{"persistentvolumeclaims", ""}: {claim("a", "1Gi", &gold), claim("b", "500Mi", nil)}},
			want: list("persistentvolumeclaims", "2", "count/persistentvolumeclaims", "2", "requests.storage", "1524Mi",
				"gold.storageclass.storage.k8s.io/requests.storage", "1Gi", "gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1"),
		},
		{
			name: "StatefulSets and CronJobs count as objects",
			hard: list("count/statefulsets.apps", "2", "count/cronjobs.batch", "2", "count/jobs.batch", "2"),
			objs: Objects{{"statefulsets", "apps"}: {&appsv1.StatefulSet{}}, {"cronjobs", "batch"}: {&batchv1.CronJob{}, &batchv1.CronJob{}},
				{"jobs", "batch"}: {}},
			want: list("count/statefulsets.apps", "1", "count/cronjobs.batch", "2", "count/jobs.batch", "0"),
		},
		{
			name: "a claim's storage is not a pod's",
			hard: list("requests.storage", "1Gi", "requests.cpu", "1"),
			objs: Objects{{"pods", ""}: {pod("a", corev1.PodRunning, list("cpu", "500m", "storage", "1Gi"))}},
			want: list("requests.cpu", "500m"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns"}, Spec: corev1.ResourceQuotaSpec{Hard: tt.hard}}
			if tt.used != nil {
				q.Status = corev1.ResourceQuotaStatus{Hard: tt.hard, Used: tt.used}
			}
			got := Status(q, tt.objs, now)
			if quota.String(got.Used) != quota.String(tt.want) || quota.String(got.Hard) != quota.String(tt.hard) {
				t.Fatalf("used %s hard %s, want used %s", quota.String(got.Used), quota.String(got.Hard), quota.String(tt.want))
			}
		})
	}
}

var _ runtime.Object = &corev1.Pod{}

func TestKinds(t *testing.T) {
	quotas := []*corev1.ResourceQuota{
		{Spec: corev1.ResourceQuotaSpec{Hard: list("requests.cpu", "1", "count/cronjobs.batch", "1", "requests.storage", "1Gi")}},
		{Spec: corev1.ResourceQuotaSpec{Hard: list("pods", "1", "count/widgets.example.com", "1", "nothing", "1",
			"gold.storageclass.storage.k8s.io/persistentvolumeclaims", "1")}},
	}
	want := []Kind{{"persistentvolumeclaims", ""}, {"pods", ""}, {"cronjobs", "batch"}, {"widgets", "example.com"}}
	if got := Kinds(quotas); !slices.Equal(got, want) {
		t.Fatalf("Kinds = %v, want %v", got, want)
	}
}

func TestLowers(t *testing.T) {
	q := &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: list("pods", "5", "configmaps", "5", "requests.storage", "5Gi")},
		Status: corev1.ResourceQuotaStatus{Used: list("pods", "2", "configmaps", "1", "requests.storage", "1Gi")}}
	tests := []struct {
		name string
		want corev1.ResourceList
		kind Kind
		out  bool
	}{
		{"fewer pods lowers the pods' usage", list("pods", "1", "configmaps", "1"), Kind{"pods", ""}, true},
		{"fewer pods does not concern config maps", list("pods", "1", "configmaps", "1"), Kind{"configmaps", ""}, false},
		{"more is never a lowering", list("pods", "3", "configmaps", "2"), Kind{"pods", ""}, false},
		{"less storage lowers the claims' usage", list("pods", "2", "configmaps", "1", "requests.storage", "0"), Kind{"persistentvolumeclaims", ""}, true},
		{"less storage does not concern pods", list("pods", "2", "configmaps", "1", "requests.storage", "0"), Kind{"pods", ""}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Lowers(q, corev1.ResourceQuotaStatus{Used: tt.want}, tt.kind); got != tt.out {
				t.Fatalf("Lowers = %v, want %v", got, tt.out)
			}
		})
	}
}
