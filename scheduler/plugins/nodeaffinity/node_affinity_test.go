package nodeaffinity

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik/scheduler/framework"
	"minik/scheduler/internal/st"
)

func TestFilter(t *testing.T) {
	node := st.MakeNode().Name("n1").Label("zone", "a").Label("disk", "ssd").Label("gen", "5").Obj()
	In, NotIn, Exists, DoesNotExist, Gt, Lt := corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
		corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt
	cases := []struct {
		name string
		pod  *corev1.Pod
		fits bool
	}{
		{"a pod without selector or affinity fits", st.MakePod().Obj(), true},
		{"a matching nodeSelector fits", st.MakePod().NodeSelector("zone", "a").Obj(), true},
		{"a nodeSelector with a wrong value does not fit", st.MakePod().NodeSelector("zone", "b").Obj(), false},
		{"every nodeSelector entry must match", st.MakePod().NodeSelector("zone", "a").NodeSelector("disk", "hdd").Obj(), false},
		{"In matches one of the values", st.MakePod().RequiredTerm(st.Expr("zone", In, "b", "a")).Obj(), true},
		{"In with no matching value does not fit", st.MakePod().RequiredTerm(st.Expr("zone", In, "b", "c")).Obj(), false},
		{"NotIn excludes the value", st.MakePod().RequiredTerm(st.Expr(corev1.LabelHostname, NotIn, "n1")).Obj(), false},
		{"NotIn with other values fits", st.MakePod().RequiredTerm(st.Expr(corev1.LabelHostname, NotIn, "n2")).Obj(), true},
		{"Exists needs the label", st.MakePod().RequiredTerm(st.Expr("disk", Exists)).Obj(), true},
		{"Exists on a missing label does not fit", st.MakePod().RequiredTerm(st.Expr("gpu", Exists)).Obj(), false},
		{"DoesNotExist on a missing label fits", st.MakePod().RequiredTerm(st.Expr("gpu", DoesNotExist)).Obj(), true},
		{"DoesNotExist on a present label does not fit", st.MakePod().RequiredTerm(st.Expr("disk", DoesNotExist)).Obj(), false},
		{"Gt compares as integers", st.MakePod().RequiredTerm(st.Expr("gen", Gt, "4")).Obj(), true},
		{"Gt with a larger bound does not fit", st.MakePod().RequiredTerm(st.Expr("gen", Gt, "5")).Obj(), false},
		{"Lt compares as integers", st.MakePod().RequiredTerm(st.Expr("gen", Lt, "10")).Obj(), true},
		{"expressions within a term are ANDed", st.MakePod().RequiredTerm(st.Expr("zone", In, "a"), st.Expr("disk", In, "hdd")).Obj(), false},
		{"terms are ORed", st.MakePod().RequiredTerm(st.Expr("zone", In, "b")).RequiredTerm(st.Expr("disk", In, "ssd")).Obj(), true},
		{"matchFields on metadata.name selects the node", st.MakePod().RequiredFieldTerm(In, "n1").Obj(), true},
		{"matchFields NotIn on metadata.name excludes the node", st.MakePod().RequiredFieldTerm(NotIn, "n1").Obj(), false},
		{"nodeSelector and affinity must both match", st.MakePod().NodeSelector("zone", "b").RequiredTerm(st.Expr("disk", In, "ssd")).Obj(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := st.Filter(New(), tc.pod, st.NewSnapshot([]*corev1.Node{node}, nil), "n1")
			if got.IsSuccess() != tc.fits {
				t.Fatalf("got %v, want fits=%v", got, tc.fits)
			}
			if !tc.fits && (got.Code() != framework.UnschedulableAndUnresolvable || got.Message() != ErrReasonPod) {
				t.Fatalf("rejection %v, want %q", got, ErrReasonPod)
			}
		})
	}
}

func TestScore(t *testing.T) {
	nodes := []*corev1.Node{
		st.MakeNode().Name("a").Label("zone", "z1").Label("disk", "ssd").Obj(),
		st.MakeNode().Name("b").Label("zone", "z2").Obj(),
		st.MakeNode().Name("c").Obj(),
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want map[string]int64
	}{
		{"without preferred terms every node scores 0", st.MakePod().Obj(), map[string]int64{"a": 0, "b": 0, "c": 0}},
		{"the sum of matching weights is scaled so the best node gets 100",
			st.MakePod().PreferredTerm(20, st.Expr("zone", corev1.NodeSelectorOpIn, "z1")).PreferredTerm(60, st.Expr("zone", corev1.NodeSelectorOpIn, "z2")).
				PreferredTerm(20, st.Expr("disk", corev1.NodeSelectorOpIn, "ssd")).Obj(),
			map[string]int64{"a": 66, "b": 100, "c": 0}},
		{"a preferred value that no node has just adds nothing",
			st.MakePod().PreferredTerm(80, st.Expr("zone", corev1.NodeSelectorOpIn, "z9")).PreferredTerm(20, st.Expr("zone", corev1.NodeSelectorOpIn, "z2")).Obj(),
			map[string]int64{"a": 0, "b": 100, "c": 0}},
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
