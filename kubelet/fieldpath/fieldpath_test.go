package fieldpath

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFieldValue(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1",
		Labels: map[string]string{"app": "web", "tier": "front"}}, Spec: corev1.PodSpec{NodeName: "n1"}}
	cases := []struct {
		name, path, want string
		err              bool
	}{
		{"metadata.name is the pod's name", "metadata.name", "web", false},
		{"one label is read by its key", "metadata.labels['tier']", "front", false},
		{"all labels are key=\"value\" lines, sorted", "metadata.labels", "app=\"web\"\ntier=\"front\"\n", false},
		{"status.podIP is the sandbox's address", "status.podIP", "10.244.0.7", false},
		{"status.hostIP is the node's address", "status.hostIP", "192.168.1.2", false},
		{"an unknown field is an error", "spec.nope", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FieldValue(pod, tc.path, "10.244.0.7", "192.168.1.2")
			if got != tc.want || (err != nil) != tc.err {
				t.Errorf("FieldValue(%q) = %q, %v; want %q, error %v", tc.path, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestResourceValue(t *testing.T) {
	c := &corev1.Container{Name: "app", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{*c}}}
	cases := []struct {
		name, res, divisor, want string
	}{
		{"a cpu request rounds up to whole cores", "requests.cpu", "", "1"},
		{"a cpu request in millicores", "requests.cpu", "1m", "250"},
		{"a memory request in mebibytes", "requests.memory", "1Mi", "64"},
		{"an unset limit is 0", "limits.memory", "", "0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ref := &corev1.ResourceFieldSelector{Resource: tc.res}
			if tc.divisor != "" {
				ref.Divisor = resource.MustParse(tc.divisor)
			}
			got, err := ResourceValue(pod, c, ref)
			if got != tc.want || err != nil {
				t.Errorf("ResourceValue(%s / %q) = %q, %v; want %q", tc.res, tc.divisor, got, err, tc.want)
			}
		})
	}
}
