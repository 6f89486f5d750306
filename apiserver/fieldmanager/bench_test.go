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

// BenchmarkStatusUpdate is a scheduler's status patch (a condition and a
// nomination) through the engine, with the built-in objects typed by the
// engine's validating converter and by structConverter.
func BenchmarkStatusUpdate(b *testing.B) {
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	for _, name := range []string{"validating", "struct"} {
		b.Run(name, func(b *testing.B) {
			m := newTestManager(b)
			if name == "validating" {
				m.builtin = plainConverter(b)
			}
			live := m.Update(gvk, "", nil, benchPod(), "creator").(*corev1.Pod)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				obj := live.DeepCopy()
				obj.Status.NominatedNodeName = "n1"
				obj.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}
				m.Update(gvk, "status", live, obj, "scheduler")
			}
		})
	}
}

func BenchmarkBuildPod(b *testing.B) {
	for i := 0; i < b.N; i++ {
		benchPod()
	}
}
