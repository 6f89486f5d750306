package nodename

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
		want framework.Code
	}{
		{"a pod without nodeName fits every node", st.MakePod().Obj(), framework.Success},
		{"a pod naming the node fits it", st.MakePod().Node("n1").Obj(), framework.Success},
		{"a pod naming another node does not fit", st.MakePod().Node("n2").Obj(), framework.UnschedulableAndUnresolvable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := st.NewSnapshot([]*corev1.Node{st.MakeNode().Name("n1").Obj()}, nil)
			got := st.Filter(New(), tc.pod, snap, "n1")
			if got.Code() != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if tc.want != framework.Success && got.Message() != ErrReason {
				t.Fatalf("reason %q", got.Message())
			}
		})
	}
}
