package framework

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodRequests(t *testing.T) {
	cpu := func(s string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s)}}
	}
	always := corev1.ContainerRestartPolicyAlways
	ctr := func(name, c string) corev1.Container { return corev1.Container{Name: name, Resources: cpu(c)} }
	sidecar := func(name, c string) corev1.Container {
		return corev1.Container{Name: name, Resources: cpu(c), RestartPolicy: &always}
	}
	cases := []struct {
		name           string
		spec           corev1.PodSpec
		nonZero        bool
		wantCPU, wantM int64
	}{
		{"the containers' requests add up",
			corev1.PodSpec{Containers: []corev1.Container{ctr("a", "100m"), ctr("b", "200m")}}, false, 300, 0},
		{"a larger init container sets the request",
			corev1.PodSpec{InitContainers: []corev1.Container{ctr("i", "1")}, Containers: []corev1.Container{ctr("a", "100m")}}, false, 1000, 0},
		{"a sidecar adds to the containers and to the init containers after it",
			corev1.PodSpec{InitContainers: []corev1.Container{sidecar("s", "500m"), ctr("i", "1")},
				Containers: []corev1.Container{ctr("a", "100m")}}, false, 1500, 0},
		{"spec.overhead is added",
			corev1.PodSpec{Containers: []corev1.Container{ctr("a", "100m")},
				Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}, false, 350, 0},
		{"for scoring, a container without requests counts the defaults",
			corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}, true, DefaultMilliCPURequest, DefaultMemoryRequest},
		{"for scoring, an explicit zero stays zero (upstream's NonMissingContainerRequests)",
			corev1.PodSpec{Containers: []corev1.Container{ctr("a", "0")}}, true, 0, DefaultMemoryRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := PodRequests(&corev1.Pod{Spec: tc.spec}, tc.nonZero)
			if got.MilliCPU != tc.wantCPU || got.Memory != tc.wantM || got.AllowedPodNumber != 0 {
				t.Fatalf("got %+v, want cpu %dm memory %d", got, tc.wantCPU, tc.wantM)
			}
		})
	}
}

// TestCycleStateReusesThePodInfoOfItsPod checks that a cycle hands its
// plugins the queue's PodInfo for the cycle's pod, and a fresh one for
// any other pod (a preemption victim, a copy).
func TestCycleStateReusesThePodInfoOfItsPod(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	pi := NewPodInfo(pod)
	state := NewCycleState()
	if got := state.PodInfoOf(pod); got == pi || got.Pod != pod {
		t.Fatalf("without SetPodInfo: %p (the queue's is %p), for pod %v", got, pi, got.Pod)
	}
	state.SetPodInfo(pi)
	if got := state.PodInfoOf(pod); got != pi {
		t.Errorf("the cycle's pod got %p, want the queue's %p", got, pi)
	}
	other := pod.DeepCopy()
	if got := state.PodInfoOf(other); got == pi || got.Pod != other {
		t.Errorf("another pod got %p for %v, want a new PodInfo of it", got, got.Pod)
	}
}
