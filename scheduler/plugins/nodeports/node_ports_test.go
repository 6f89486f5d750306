package nodeports

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik/scheduler/framework"
	"minik/scheduler/internal/st"
)

func TestFilter(t *testing.T) {
	cases := []struct {
		name     string
		existing *corev1.Pod
		pod      *corev1.Pod
		want     framework.Code
	}{
		{"a pod without host ports always fits",
			st.MakePod().Name("old").HostPort(80, "TCP", "").Obj(), st.MakePod().Obj(), framework.Success},
		{"the same TCP port on the wildcard IP conflicts",
			st.MakePod().Name("old").HostPort(80, "TCP", "").Obj(), st.MakePod().HostPort(80, "TCP", "").Obj(), framework.Unschedulable},
		{"the same port with another protocol does not conflict",
			st.MakePod().Name("old").HostPort(80, "TCP", "").Obj(), st.MakePod().HostPort(80, "UDP", "").Obj(), framework.Success},
		{"the same port on two different IPs does not conflict",
			st.MakePod().Name("old").HostPort(80, "TCP", "10.0.0.1").Obj(), st.MakePod().HostPort(80, "TCP", "10.0.0.2").Obj(), framework.Success},
		{"a specific IP conflicts with the wildcard IP already in use",
			st.MakePod().Name("old").HostPort(80, "TCP", "0.0.0.0").Obj(), st.MakePod().HostPort(80, "TCP", "10.0.0.2").Obj(), framework.Unschedulable},
		{"the wildcard IP conflicts with a specific IP already in use",
			st.MakePod().Name("old").HostPort(80, "TCP", "10.0.0.1").Obj(), st.MakePod().HostPort(80, "TCP", "").Obj(), framework.Unschedulable},
		{"an empty protocol means TCP",
			st.MakePod().Name("old").HostPort(80, "", "").Obj(), st.MakePod().HostPort(80, "TCP", "").Obj(), framework.Unschedulable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.existing.Spec.NodeName = "n"
			snap := st.NewSnapshot([]*corev1.Node{st.MakeNode().Name("n").Obj()}, []*corev1.Pod{tc.existing})
			got := st.Filter(New(), tc.pod, snap, "n")
			if got.Code() != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if tc.want != framework.Success && got.Message() != ErrReason {
				t.Fatalf("reason %q", got.Message())
			}
		})
	}
}
