package daemonset

import (
	"slices"
	"sort"
	"testing"

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

func TestReconcile(t *testing.T) {
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
			plan := Reconcile(tc.ds, tc.nodes, tc.pods, "h", now)
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
