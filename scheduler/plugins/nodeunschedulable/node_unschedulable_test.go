package nodeunschedulable

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik/scheduler/framework"
	"minik/scheduler/internal/st"
)

func TestFilter(t *testing.T) {
	cases := []struct {
		name string
		pod  *corev1.Pod
		node *corev1.Node
		want framework.Code
	}{
		{"a schedulable node accepts any pod", st.MakePod().Obj(), st.MakeNode().Name("n").Obj(), framework.Success},
		{"a cordoned node rejects a pod without toleration", st.MakePod().Obj(), st.MakeNode().Name("n").Unschedulable().Obj(), framework.UnschedulableAndUnresolvable},
		{"a cordoned node accepts a pod tolerating node.kubernetes.io/unschedulable",
			st.MakePod().Toleration(corev1.TaintNodeUnschedulable, corev1.TolerationOpExists, "", corev1.TaintEffectNoSchedule).Obj(),
			st.MakeNode().Name("n").Unschedulable().Obj(), framework.Success},
		{"a cordoned node accepts a pod tolerating everything",
			st.MakePod().Toleration("", corev1.TolerationOpExists, "", "").Obj(), st.MakeNode().Name("n").Unschedulable().Obj(), framework.Success},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := st.NewSnapshot([]*corev1.Node{tc.node}, nil)
			got := st.Filter(New(), tc.pod, snap, "n")
			if got.Code() != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if tc.want != framework.Success && got.Message() != ErrReasonUnschedulable {
				t.Fatalf("reason %q, want %q", got.Message(), ErrReasonUnschedulable)
			}
		})
	}
}
