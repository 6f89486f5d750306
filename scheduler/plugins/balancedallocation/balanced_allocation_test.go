package balancedallocation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik/scheduler/internal/st"
)

func TestScore(t *testing.T) {
	nodes := []*corev1.Node{
		st.MakeNode().Name("balanced").Capacity("cpu", "4", "memory", "4Gi").Obj(),
		st.MakeNode().Name("lopsided").Capacity("cpu", "4", "memory", "4Gi").Obj(),
	}
	pods := []*corev1.Pod{st.MakePod().Name("old").Node("lopsided").Req("cpu", "3", "memory", "200Mi").Obj()}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want map[string]int64
	}{
		{"equal cpu and memory shares score 100; cpu 4/4 and memory 1224Mi/4Gi score (1 - 0.35) * 100",
			st.MakePod().Req("cpu", "1", "memory", "1Gi").Obj(), map[string]int64{"balanced": 100, "lopsided": 64}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, status := st.Scores(New(), tc.pod, st.NewSnapshot(nodes, pods))
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

func TestScoreFormula(t *testing.T) {
	cases := []struct {
		name   string
		shares []float64
		want   int64
	}{
		{"equal shares score 100", []float64{0.5, 0.5}, 100},
		{"shares 0 and 1 score 50 (standard deviation 0.5)", []float64{0, 1}, 50},
		{"shares 0.2 and 0.6 score 80", []float64{0.2, 0.6}, 80},
		{"one resource alone scores 100", []float64{0.7}, 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Score(tc.shares); got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
}
