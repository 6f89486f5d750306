package interpodaffinity

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/scheduler/framework"
	"minik/scheduler/internal/st"
)

func TestFilter(t *testing.T) {
	nodes := []*corev1.Node{
		st.MakeNode().Name("a1").Label("rack", "r1").Obj(),
		st.MakeNode().Name("a2").Label("rack", "r1").Obj(),
		st.MakeNode().Name("b1").Label("rack", "r2").Obj(),
		st.MakeNode().Name("nolabel").Obj(),
	}
	db := st.MakePod().Name("db").Label("app", "db").Node("a1").Obj()
	otherNS := st.MakePod().Name("db2").Namespace("prod").Label("app", "db").Node("b1").Obj()
	nsSel := st.Term("app", "db", "rack")
	nsSel.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	cases := []struct {
		name     string
		existing []*corev1.Pod
		pod      *corev1.Pod
		want     map[string]string // node → reason ("" passes)
	}{
		{"affinity puts the pod in the rack of a matching pod",
			[]*corev1.Pod{db}, st.MakePod().PodAffinity(st.Term("app", "db", "rack")).Obj(),
			map[string]string{"a1": "", "a2": "", "b1": ErrReasonAffinityRulesNotMatch, "nolabel": ErrReasonAffinityRulesNotMatch}},
		{"anti-affinity keeps the pod out of the rack of a matching pod",
			[]*corev1.Pod{db}, st.MakePod().PodAntiAffinity(st.Term("app", "db", "rack")).Obj(),
			map[string]string{"a1": ErrReasonAntiAffinityRulesNotMatch, "a2": ErrReasonAntiAffinityRulesNotMatch, "b1": "", "nolabel": ""}},
		{"the anti-affinity of a running pod counts against the incoming pod",
			[]*corev1.Pod{st.MakePod().Name("loner").Node("b1").PodAntiAffinity(st.Term("app", "web", "rack")).Obj()},
			st.MakePod().Label("app", "web").Obj(),
			map[string]string{"a1": "", "a2": "", "b1": ErrReasonExistingAntiAffinityRulesNotMatch, "nolabel": ""}},
		{"anti-affinity by hostname keeps the pod off the one node with a matching pod",
			[]*corev1.Pod{db}, st.MakePod().PodAntiAffinity(st.Term("app", "db", corev1.LabelHostname)).Obj(),
			map[string]string{"a1": ErrReasonAntiAffinityRulesNotMatch, "a2": "", "b1": ""}},
		{"a running pod's anti-affinity by hostname excludes only its node",
			[]*corev1.Pod{st.MakePod().Name("loner").Node("a2").PodAntiAffinity(st.Term("app", "web", corev1.LabelHostname)).Obj()},
			st.MakePod().Label("app", "web").Obj(),
			map[string]string{"a1": "", "a2": ErrReasonExistingAntiAffinityRulesNotMatch, "b1": ""}},
		{"the first pod of a group with affinity to itself may go anywhere with the label",
			nil, st.MakePod().Label("app", "db").PodAffinity(st.Term("app", "db", "rack")).Obj(),
			map[string]string{"a1": "", "b1": "", "nolabel": ErrReasonAffinityRulesNotMatch}},
		{"affinity to pods that exist nowhere fails everywhere",
			[]*corev1.Pod{db}, st.MakePod().PodAffinity(st.Term("app", "cache", "rack")).Obj(),
			map[string]string{"a1": ErrReasonAffinityRulesNotMatch, "b1": ErrReasonAffinityRulesNotMatch}},
		{"terms select the pod's own namespace by default",
			[]*corev1.Pod{otherNS}, st.MakePod().PodAntiAffinity(st.Term("app", "db", "rack")).Obj(),
			map[string]string{"a1": "", "b1": ""}},
		{"the incoming pod's own anti-affinity is reported before a running pod's, as upstream",
			[]*corev1.Pod{st.MakePod().Name("green").Label("color", "green").Node("a1").PodAntiAffinity(st.Term("color", "green", corev1.LabelHostname)).Obj()},
			st.MakePod().Label("color", "green").PodAntiAffinity(st.Term("color", "green", corev1.LabelHostname)).Obj(),
			map[string]string{"a1": ErrReasonAntiAffinityRulesNotMatch, "a2": ""}},
		{"unmet affinity is reported before anti-affinity",
			[]*corev1.Pod{db}, st.MakePod().PodAffinity(st.Term("app", "cache", "rack")).PodAntiAffinity(st.Term("app", "db", "rack")).Obj(),
			map[string]string{"a1": ErrReasonAffinityRulesNotMatch}},
		{"a namespaceSelector selects pods in namespaces with matching labels",
			[]*corev1.Pod{otherNS}, st.MakePod().PodAntiAffinity(nsSel).Obj(),
			map[string]string{"a1": "", "b1": ErrReasonAntiAffinityRulesNotMatch}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := st.NewSnapshot(nodes, tc.existing, st.Namespace{Name: "prod", Labels: map[string]string{"env": "prod"}})
			for node, reason := range tc.want {
				got := st.Filter(New(), tc.pod, snap, node)
				if got.Message() != reason {
					t.Errorf("node %s: got %v, want %q", node, got, reason)
				}
				if reason == ErrReasonAffinityRulesNotMatch && got.Code() != framework.UnschedulableAndUnresolvable ||
					reason == ErrReasonAntiAffinityRulesNotMatch && got.Code() != framework.Unschedulable {
					t.Errorf("node %s: code %v", node, got.Code())
				}
			}
		})
	}
}

func TestScore(t *testing.T) {
	nodes := []*corev1.Node{
		st.MakeNode().Name("a1").Label("rack", "r1").Obj(),
		st.MakeNode().Name("b1").Label("rack", "r2").Obj(),
		st.MakeNode().Name("c1").Label("rack", "r3").Obj(),
	}
	pods := []*corev1.Pod{
		st.MakePod().Name("db").Label("app", "db").Node("a1").Obj(),
		st.MakePod().Name("web").Label("app", "web").Node("b1").Obj(),
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want map[string]int64
	}{
		{"preferred affinity scores the rack with the pod highest",
			st.MakePod().PreferredPodAffinity(10, st.Term("app", "db", "rack")).Obj(), map[string]int64{"a1": 100, "b1": 0, "c1": 0}},
		{"preferred anti-affinity scores the rack with the pod lowest",
			st.MakePod().PreferredPodAntiAffinity(10, st.Term("app", "web", "rack")).Obj(), map[string]int64{"a1": 100, "b1": 0, "c1": 100}},
		{"weights add up across terms",
			st.MakePod().PreferredPodAffinity(10, st.Term("app", "db", "rack")).PreferredPodAffinity(30, st.Term("app", "web", "rack")).Obj(),
			map[string]int64{"a1": 33, "b1": 100, "c1": 0}},
		{"a pod without terms, and no running pod with terms, scores 0 everywhere",
			st.MakePod().Obj(), map[string]int64{"a1": 0, "b1": 0, "c1": 0}},
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
