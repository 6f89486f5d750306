package nodeipam

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func node(name string, podCIDRs ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
	n.Spec.PodCIDRs = podCIDRs
	if len(podCIDRs) > 0 {
		n.Spec.PodCIDR = podCIDRs[0]
	}
	return n
}

func TestPlan(t *testing.T) {
	legacy := node("n1")
	legacy.Spec.PodCIDR = "10.244.7.0/24" // only the singular field, as older nodes
	for _, c := range []struct {
		name string
		node *corev1.Node
		next string
		want []string
	}{
		{"a node without podCIDR gets the lowest free subnet", node("n1"), "10.244.2.0/24", []string{"AssignPodCIDR n1 10.244.2.0/24"}},
		{"a node with podCIDRs keeps them", node("n1", "10.244.0.0/24"), "10.244.2.0/24", nil},
		{"a node with only spec.podCIDR keeps it", legacy, "10.244.2.0/24", nil},
		{"no free subnet left is reported on the node", node("n1"), "", []string{"ReportCIDRNotAvailable n1"}},
		{"a node gone from the cache needs nothing", nil, "10.244.2.0/24", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, a := range Plan(c.node, c.next).Actions {
				got = append(got, a.String())
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("actions %v, want %v", got, c.want)
			}
		})
	}
}
