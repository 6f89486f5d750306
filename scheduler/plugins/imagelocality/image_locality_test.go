package imagelocality

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik/scheduler/internal/st"
)

func TestScore(t *testing.T) {
	const mb = 1024 * 1024 // bytes
	nodes := []*corev1.Node{
		st.MakeNode().Name("big").Image("docker.io/library/db:1", 500*mb).Obj(),
		st.MakeNode().Name("small").Image("docker.io/library/tool:1", 10*mb).Obj(),
		st.MakeNode().Name("none").Obj(),
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want map[string]int64
	}{
		{"a node with the pod's 500MB image on 1 of 3 nodes scores (166MB-23MB)*100/(1000MB-23MB)",
			st.MakePod().Image("db:1").Obj(), map[string]int64{"big": 14, "small": 0, "none": 0}},
		{"images under the 23MB threshold score 0", st.MakePod().Image("tool:1").Obj(), map[string]int64{"big": 0, "small": 0, "none": 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, status := st.Scores(New(), tc.pod, st.NewSnapshot(nodes, nil))
			if !status.IsSuccess() {
				t.Fatal(status)
			}
			for n, w := range tc.want {
				if got[n] != w {
					t.Fatalf("scores %v, want %v", got, tc.want)
				}
			}
		})
	}
}
