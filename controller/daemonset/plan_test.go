package daemonset

import (
	"slices"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik/controller/internal/testutil"
)

func makeDS() *appsv1.DaemonSet {
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "default", UID: "ds-uid", Generation: 3},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "a"}}}}}}
}

func dsPod(name, node, hash string) *corev1.Pod {
	return testutil.Pod(name).Node(node).Label(RevisionHashLabel, hash).Ready(testutil.T0).Obj()
}

func TestPlan(t *testing.T) {
	now := testutil.T0
	n1, n2, n3 := testutil.Node("n1").Obj(), testutil.Node("n2").Obj(), testutil.Node("n3").Obj()
	cases := []struct {
		name       string
		ds         *appsv1.DaemonSet
		nodes      []*corev1.Node
		pods       map[string][]*corev1.Pod
		wantCreate []string
		wantDelete []string
		wantStatus appsv1.DaemonSetStatus
	}{
		{name: "every node without a pod gets one", ds: makeDS(), nodes: []*corev1.Node{n1, n2, n3},
			pods:       map[string][]*corev1.Pod{"n1": {dsPod("p1", "n1", "h")}},
			wantCreate: []string{"n2", "n3"},
			wantStatus: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 1, NumberReady: 1, NumberAvailable: 1, UpdatedNumberScheduled: 1, NumberUnavailable: 2, ObservedGeneration: 3}},
		{name: "a nodeSelector limits the nodes", ds: func() *appsv1.DaemonSet {
			ds := makeDS()
			ds.Spec.Template.Spec.NodeSelector = map[string]string{"role": "edge"}
			return ds
		}(), nodes: []*corev1.Node{testutil.Node("edge").Label("role", "edge").Obj(), n2},
			wantCreate: []string{"edge"},
			wantStatus: appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, NumberUnavailable: 1, ObservedGeneration: 3}},
		{name: "untolerated NoSchedule taints keep new pods off but running ones stay",
			ds: makeDS(), nodes: []*corev1.Node{testutil.Node("n1").Taint("gpu", corev1.TaintEffectNoSchedule).Obj(), testutil.Node("n2").Taint("gpu", corev1.TaintEffectNoSchedule).Obj()},
			pods:       map[string][]*corev1.Pod{"n1": {dsPod("p1", "n1", "h")}},
			wantStatus: appsv1.DaemonSetStatus{NumberMisscheduled: 1, ObservedGeneration: 3}},
		{name: "an untolerated NoExecute taint removes the pod",
			ds: makeDS(), nodes: []*corev1.Node{testutil.Node("n1").Taint("gpu", corev1.TaintEffectNoExecute).Obj()},
			pods:       map[string][]*corev1.Pod{"n1": {dsPod("p1", "n1", "h")}},
			wantDelete: []string{"p1"},
			wantStatus: appsv1.DaemonSetStatus{NumberMisscheduled: 1, ObservedGeneration: 3}},
		{name: "the default tolerations let daemons run on cordoned and not-ready nodes",
			ds: makeDS(), nodes: []*corev1.Node{testutil.Node("n1").Taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule).Taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute).Obj()},
			wantCreate: []string{"n1"},
			wantStatus: appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, NumberUnavailable: 1, ObservedGeneration: 3}},
		{name: "an extra pod on a node and pods of departed nodes are deleted",
			ds: makeDS(), nodes: []*corev1.Node{n1},
			pods: map[string][]*corev1.Pod{"n1": {dsPod("old", "n1", "h"), testutil.Pod("new").Node("n1").Label(RevisionHashLabel, "h").Created(testutil.T0.Add(1)).Obj()},
				"gone": {dsPod("orphan", "gone", "h")}},
			wantDelete: []string{"new", "orphan"},
			wantStatus: appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, NumberReady: 1, NumberAvailable: 1, UpdatedNumberScheduled: 1, ObservedGeneration: 3}},
		{name: "a rolling update replaces at most maxUnavailable available old pods at a time",
			ds: func() *appsv1.DaemonSet {
				ds := makeDS()
				mu := intstr.FromInt32(2)
				ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &mu}}
				return ds
			}(), nodes: []*corev1.Node{n1, n2, n3},
			pods:       map[string][]*corev1.Pod{"n1": {dsPod("p1", "n1", "old")}, "n2": {dsPod("p2", "n2", "old")}, "n3": {dsPod("p3", "n3", "old")}},
			wantDelete: []string{"p1", "p2"},
			wantStatus: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 3, NumberAvailable: 3, ObservedGeneration: 3}},
		{name: "OnDelete never replaces old pods",
			ds: func() *appsv1.DaemonSet {
				ds := makeDS()
				ds.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
				return ds
			}(), nodes: []*corev1.Node{n1},
			pods:       map[string][]*corev1.Pod{"n1": {dsPod("p1", "n1", "old")}},
			wantStatus: appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, NumberReady: 1, NumberAvailable: 1, ObservedGeneration: 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := split(Plan(tc.ds, tc.nodes, tc.pods, "h", true, now))
			if !slices.Equal(plan.CreateOn, tc.wantCreate) {
				t.Errorf("create on %v, want %v", plan.CreateOn, tc.wantCreate)
			}
			del := testutil.Names(plan.Delete)
			sort.Strings(del)
			if !slices.Equal(del, tc.wantDelete) {
				t.Errorf("delete %v, want %v", del, tc.wantDelete)
			}
			if plan.Status.String() != tc.wantStatus.String() {
				t.Errorf("status %+v, want %+v", plan.Status, tc.wantStatus)
			}
		})
	}
}

// planned is a plan's pod work and status.
type planned struct {
	CreateOn []string
	Delete   []*corev1.Pod
	Status   appsv1.DaemonSetStatus
}

func split(out Output) planned {
	var p planned
	for _, a := range out.Actions {
		switch a.Type {
		case ManagePods:
			p.CreateOn, p.Delete = a.CreateOn, a.Pods
		case UpdateStatus:
			p.Status = a.Status
		}
	}
	return p
}

func TestPlanWithUnmetExpectationsOrNoChangeWritesLess(t *testing.T) {
	ds := makeDS()
	nodes := []*corev1.Node{testutil.Node("n1").Obj()}
	out := Plan(ds, nodes, nil, "h", false, testutil.T0)
	if len(out.Actions) != 1 || out.Actions[0].Type != UpdateStatus {
		t.Fatalf("unmet expectations: actions %v, want the status alone", out.Actions)
	}
	ds.Status = out.Actions[0].Status
	out = Plan(ds, nodes, nil, "h", true, testutil.T0)
	if len(out.Actions) != 1 || out.Actions[0].Type != ManagePods {
		t.Fatalf("status unchanged: actions %v, want the create alone", out.Actions)
	}
}

func TestNewPod(t *testing.T) {
	p := NewPod(makeDS(), "n7", "h1")
	cases := []struct {
		name string
		ok   bool
	}{
		{"is pinned to its node by node affinity", PinnedNode(p) == "n7" && p.Spec.NodeName == ""},
		{"carries the revision hash", p.Labels[RevisionHashLabel] == "h1"},
		{"tolerates not-ready and unreachable forever", len(p.Spec.Tolerations) == 6 && p.Spec.Tolerations[0].TolerationSeconds == nil},
		{"is controlled by the DaemonSet", metav1.IsControlledBy(p, makeDS())},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				t.Fatalf("pod %+v", p)
			}
		})
	}
}

func surgeDS(maxSurge intstr.IntOrString, minReadySeconds int32) *appsv1.DaemonSet {
	ds := makeDS()
	zero := intstr.FromInt32(0)
	ds.Spec.MinReadySeconds = minReadySeconds
	ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxSurge: &maxSurge, MaxUnavailable: &zero}}
	return ds
}

func TestReconcileSurge(t *testing.T) {
	now := testutil.T0
	long := now.Add(-time.Hour)
	nodes := func() []*corev1.Node {
		return []*corev1.Node{testutil.Node("n1").Obj(), testutil.Node("n2").Obj(), testutil.Node("n3").Obj()}
	}
	old := func(name, node string) *corev1.Pod {
		return testutil.Pod(name).Node(node).Label(RevisionHashLabel, "old").Ready(long).Created(long).Obj()
	}
	updated := func(name, node string, readySince time.Time) *corev1.Pod {
		return testutil.Pod(name).Node(node).Label(RevisionHashLabel, "h").Ready(readySince).Created(readySince).Obj()
	}
	allOld := func() map[string][]*corev1.Pod {
		return map[string][]*corev1.Pod{"n1": {old("o1", "n1")}, "n2": {old("o2", "n2")}, "n3": {old("o3", "n3")}}
	}
	cases := []struct {
		name        string
		ds          *appsv1.DaemonSet
		nodes       []*corev1.Node
		pods        map[string][]*corev1.Pod
		wantCreate  []string
		wantDelete  []string
		wantUpdated int32
		wantRequeue time.Duration
	}{
		{name: "the update starts a new pod beside an old one on maxSurge nodes, deleting nothing",
			ds: surgeDS(intstr.FromInt32(1), 0), pods: allOld(), wantCreate: []string{"n1"}},
		{name: "a percentage rounds up: 50% of 3 nodes surges on 2",
			ds: surgeDS(intstr.FromString("50%"), 0), pods: allOld(), wantCreate: []string{"n1", "n2"}},
		{name: "while the new pod is not available for minReadySeconds, nothing more happens",
			ds: surgeDS(intstr.FromInt32(1), 10),
			pods: func() map[string][]*corev1.Pod {
				m := allOld()
				m["n1"] = append(m["n1"], updated("u1", "n1", now.Add(-4*time.Second)))
				return m
			}(),
			wantRequeue: 7 * time.Second},
		{name: "once the new pod is available the old one beside it is deleted",
			ds: surgeDS(intstr.FromInt32(1), 10),
			pods: func() map[string][]*corev1.Pod {
				m := allOld()
				m["n1"] = append(m["n1"], updated("u1", "n1", now.Add(-11*time.Second)))
				return m
			}(),
			wantDelete: []string{"o1"}},
		{name: "the next node surges once the first is done",
			ds: surgeDS(intstr.FromInt32(1), 0),
			pods: func() map[string][]*corev1.Pod {
				m := allOld()
				m["n1"] = []*corev1.Pod{updated("u1", "n1", long)}
				return m
			}(),
			wantCreate: []string{"n2"}, wantUpdated: 1},
		{name: "an old pod that is not available gets its replacement at once, beyond maxSurge",
			ds: surgeDS(intstr.FromInt32(1), 0),
			pods: func() map[string][]*corev1.Pod {
				m := allOld()
				m["n3"] = []*corev1.Pod{testutil.Pod("o3").Node("n3").Label(RevisionHashLabel, "old").Created(long).Obj()}
				return m
			}(),
			wantCreate: []string{"n3", "n1"}},
		{name: "a not ready old pod beside a new one goes at once",
			ds: surgeDS(intstr.FromInt32(1), 10),
			pods: func() map[string][]*corev1.Pod {
				m := allOld()
				m["n1"] = []*corev1.Pod{testutil.Pod("o1").Node("n1").Label(RevisionHashLabel, "old").Created(long).Obj(), updated("u1", "n1", now)}
				return m
			}(),
			wantDelete: []string{"o1"}, wantRequeue: 11 * time.Second},
		{name: "an old pod on a node the DaemonSet left stays until the others give a spare available pod",
			ds: func() *appsv1.DaemonSet {
				ds := surgeDS(intstr.FromInt32(1), 0)
				ds.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "a"}
				return ds
			}(),
			nodes:      []*corev1.Node{testutil.Node("n1").Label("pool", "a").Obj(), testutil.Node("n2").Label("pool", "a").Obj(), testutil.Node("n3").Obj()},
			pods:       map[string][]*corev1.Pod{"n1": {updated("u1", "n1", long)}, "n2": {updated("u2", "n2", long)}, "n3": {old("o3", "n3")}},
			wantDelete: []string{"o3"}, wantUpdated: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := tc.nodes
			if ns == nil {
				ns = nodes()
			}
			out := Plan(tc.ds, ns, tc.pods, "h", true, now)
			plan := split(out)
			if !slices.Equal(plan.CreateOn, tc.wantCreate) {
				t.Errorf("create on %v, want %v", plan.CreateOn, tc.wantCreate)
			}
			del := testutil.Names(plan.Delete)
			sort.Strings(del)
			if !slices.Equal(del, tc.wantDelete) {
				t.Errorf("delete %v, want %v", del, tc.wantDelete)
			}
			if plan.Status.UpdatedNumberScheduled != tc.wantUpdated {
				t.Errorf("updatedNumberScheduled %d, want %d (a node's oldest pod counts)", plan.Status.UpdatedNumberScheduled, tc.wantUpdated)
			}
			if out.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeue %v, want %v", out.RequeueAfter, tc.wantRequeue)
			}
		})
	}
}

// TestEligibilityByNodeAffinity: a DaemonSet's pods go where its
// template's nodeSelector and required node affinity allow, by the rule
// the scheduler and the kubelet share (k8s.io/component-helpers).
func TestEligibilityByNodeAffinity(t *testing.T) {
	node := testutil.Node("n1").Label("disk", "ssd").Label("gen", "5").Obj()
	term := func(reqs ...corev1.NodeSelectorRequirement) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: reqs}}}}}
	}
	cases := []struct {
		name string
		spec corev1.PodSpec
		want bool
	}{
		{"no constraints match", corev1.PodSpec{}, true},
		{"a matching nodeSelector matches", corev1.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}}, true},
		{"a different nodeSelector does not", corev1.PodSpec{NodeSelector: map[string]string{"disk": "hdd"}}, false},
		{"affinity In matches", corev1.PodSpec{Affinity: term(corev1.NodeSelectorRequirement{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd", "nvme"}})}, true},
		{"affinity Gt compares numbers", corev1.PodSpec{Affinity: term(corev1.NodeSelectorRequirement{Key: "gen", Operator: corev1.NodeSelectorOpGt, Values: []string{"6"}})}, false},
		{"affinity Gt on integers: 5 > 4", corev1.PodSpec{Affinity: term(corev1.NodeSelectorRequirement{Key: "gen", Operator: corev1.NodeSelectorOpGt, Values: []string{"4"}})}, true},
		{"affinity Lt with a quantity (1k) matches no node", corev1.PodSpec{Affinity: term(corev1.NodeSelectorRequirement{Key: "gen", Operator: corev1.NodeSelectorOpLt, Values: []string{"1k"}})}, false},
		{"affinity DoesNotExist fails on a present label", corev1.PodSpec{Affinity: term(corev1.NodeSelectorRequirement{Key: "disk", Operator: corev1.NodeSelectorOpDoesNotExist})}, false},
		{"matchFields on metadata.name pins the node", corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n2"}}}}}}}}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds := makeDS()
			ds.Spec.Template.Spec.NodeSelector, ds.Spec.Template.Spec.Affinity = tc.spec.NodeSelector, tc.spec.Affinity
			if got, _ := eligibility(ds, node); got != tc.want {
				t.Fatalf("shouldRun = %v, want %v", got, tc.want)
			}
		})
	}
}
