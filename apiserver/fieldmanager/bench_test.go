package fieldmanager

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/apiserver/defaults"
)

// benchPod is the pod of make bench-apiserver, defaulted as admission
// leaves it.
func benchPod() *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p-1-1", Namespace: "bench", UID: "u", CreationTimestamp: metav1.Now(),
			Labels: map[string]string{"app": "bench", "worker": "1"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "busybox", Command: []string{"sleep", "3600"},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}},
		}}},
	}
	defaults.Object(p)
	return p
}

func BenchmarkCreate(b *testing.B) {
	m := newTestManager(b)
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	m.Update(gvk, "", nil, benchPod(), "warm")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.Update(gvk, "", nil, benchPod(), "bench")
	}
}

func BenchmarkBuildPod(b *testing.B) {
	for i := 0; i < b.N; i++ {
		benchPod()
	}
}
