package defaultpreemption_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/scheduler/cache"
	"minik/scheduler/framework"
	"minik/scheduler/internal/st"
	"minik/scheduler/plugins"
	"minik/scheduler/plugins/defaultpreemption"
)

// postFilter filters pod on every node, as a scheduling cycle does, then
// runs preemption.
func postFilter(t *testing.T, nodes []*corev1.Node, pods []*corev1.Pod, pdbs []*policyv1.PodDisruptionBudget, pod *corev1.Pod) (*framework.PostFilterResult, *framework.Status) {
	t.Helper()
	fwk, snap, state, statuses := filtered(t, nodes, pods, pdbs, pod)
	return defaultpreemption.New().PostFilter(state, pod, fwk, snap, statuses)
}

// filtered runs PreFilter and Filter for pod on every node, as a
// scheduling cycle does before preemption, and fails unless every node
// rejects it.
func filtered(tb testing.TB, nodes []*corev1.Node, pods []*corev1.Pod, pdbs []*policyv1.PodDisruptionBudget, pod *corev1.Pod) (*framework.Framework, *cache.Snapshot, *framework.CycleState, framework.NodeToStatus) {
	tb.Helper()
	fwk := framework.New(plugins.DefaultProfile(corev1.DefaultSchedulerName, nil))
	snap := st.NewSnapshot(nodes, pods)
	snap.SetPodDisruptionBudgets(pdbs)
	state := framework.NewCycleState()
	if s := fwk.RunPreFilter(state, pod, snap); !s.IsSuccess() {
		tb.Fatalf("prefilter: %v", s)
	}
	statuses := framework.NodeToStatus{}
	for _, ni := range snap.List() {
		if s := fwk.RunFilter(state, pod, ni); !s.IsSuccess() {
			statuses[ni.Node().Name] = s
		}
	}
	if len(statuses) != len(nodes) {
		tb.Fatalf("the pod fits somewhere already: %v", statuses)
	}
	return fwk, snap, state, statuses
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

func TestPostFilter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	low := func(name, node string, prio int32, cpu string, started time.Duration) *corev1.Pod {
		return st.MakePod().Name(name).Node(node).Priority(prio).Req("cpu", cpu).StartTime(t0.Add(started)).Obj()
	}
	// protected labels a pod app=db, which budget("db", ...) selects.
	protected := func(p *corev1.Pod) *corev1.Pod { p.Labels["app"] = "db"; return p }
	budget := func(app string, allowed int32) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: "default"},
			Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
			Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
		}
	}
	twoCPU := func(name string) *corev1.Node {
		return st.MakeNode().Name(name).Capacity("cpu", "2", "memory", "8Gi", "pods", "110").Obj()
	}
	cases := []struct {
		name        string
		nodes       []*corev1.Node
		pods        []*corev1.Pod
		pdbs        []*policyv1.PodDisruptionBudget
		pod         *corev1.Pod
		wantNode    string
		wantVictims []string
		wantMsg     string
	}{
		{"one lower-priority pod is enough: the most recently started one goes",
			[]*corev1.Node{twoCPU("n1")},
			[]*corev1.Pod{low("old", "n1", 100, "1", 0), low("new", "n1", 100, "1", time.Hour)},
			nil, st.MakePod().Priority(1000).Req("cpu", "1").Obj(), "n1", []string{"new"}, ""},
		{"pods of equal or higher priority are never victims",
			[]*corev1.Node{twoCPU("n1")},
			[]*corev1.Pod{low("a", "n1", 1000, "1", 0), low("b", "n1", 2000, "1", 0)},
			nil, st.MakePod().Priority(1000).Req("cpu", "1").Obj(), "", nil,
			"preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."},
		{"preemptionPolicy Never is respected",
			[]*corev1.Node{twoCPU("n1")},
			[]*corev1.Pod{low("a", "n1", 1, "2", 0)},
			nil, st.MakePod().Priority(1000).PreemptNever().Req("cpu", "1").Obj(), "", nil,
			"preemption: " + defaultpreemption.ErrReasonPolicyNever},
		{"a node rejected for a taint is not helped by preemption",
			[]*corev1.Node{st.MakeNode().Name("n1").Capacity("cpu", "2", "pods", "110").Taint("k", "v", corev1.TaintEffectNoSchedule).Obj()},
			[]*corev1.Pod{low("a", "n1", 1, "2", 0)},
			nil, st.MakePod().Priority(1000).Req("cpu", "1").Obj(), "", nil,
			"preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."},
		{"the node whose victims have the lowest priority is chosen",
			[]*corev1.Node{twoCPU("n1"), twoCPU("n2")},
			[]*corev1.Pod{low("mid", "n1", 500, "2", 0), low("least", "n2", 10, "2", 0)},
			nil, st.MakePod().Priority(1000).Req("cpu", "1").Obj(), "n2", []string{"least"}, ""},
		{"with equal priorities, the node with fewer victims is chosen",
			[]*corev1.Node{twoCPU("n1"), twoCPU("n2")},
			[]*corev1.Pod{low("a", "n1", 10, "1", 0), low("b", "n1", 10, "1", 0), low("c", "n2", 10, "2", 0)},
			nil, st.MakePod().Priority(1000).Req("cpu", "2").Obj(), "n2", []string{"c"}, ""},
		{"at last, the node whose earliest-started victim started latest is chosen, as upstream",
			[]*corev1.Node{twoCPU("n1"), twoCPU("n2")},
			[]*corev1.Pod{low("a", "n1", 10, "1", 0), low("b", "n1", 10, "1", 3*time.Hour),
				low("c", "n2", 10, "1", time.Hour), low("d", "n2", 10, "1", 2*time.Hour)},
			nil, st.MakePod().Priority(1000).Req("cpu", "2").Obj(), "n2", []string{"c", "d"}, ""},
		{"a pod protected by a PodDisruptionBudget is reprieved before an unprotected one",
			[]*corev1.Node{twoCPU("n1")},
			[]*corev1.Pod{protected(low("protected", "n1", 100, "1", time.Hour)), low("plain", "n1", 100, "1", 0)},
			[]*policyv1.PodDisruptionBudget{budget("db", 0)},
			st.MakePod().Priority(1000).Req("cpu", "1").Obj(), "n1", []string{"plain"}, ""},
		{"a node whose victims break no budget wins over lower-priority victims that would",
			[]*corev1.Node{twoCPU("n1"), twoCPU("n2")},
			[]*corev1.Pod{protected(low("protected", "n1", 10, "2", 0)), low("plain", "n2", 500, "2", 0)},
			[]*policyv1.PodDisruptionBudget{budget("db", 0)},
			st.MakePod().Priority(1000).Req("cpu", "1").Obj(), "n2", []string{"plain"}, ""},
		{"a pod still waiting for its victims to terminate does not preempt again",
			[]*corev1.Node{twoCPU("n1")},
			[]*corev1.Pod{st.MakePod().Name("dying").Node("n1").Priority(1).Req("cpu", "2").PreemptedTerminating().Obj()},
			nil, st.MakePod().Priority(1000).Req("cpu", "1").NominatedNode("n1").Obj(), "", nil,
			"preemption: " + defaultpreemption.ErrReasonTerminatingVictims},
		{"a pod terminating for another reason than preemption does not stop a nominated pod from preempting",
			[]*corev1.Node{twoCPU("n1")},
			[]*corev1.Pod{st.MakePod().Name("deleted").Node("n1").Priority(1).Req("cpu", "2").Terminating().Obj()},
			nil, st.MakePod().Priority(1000).Req("cpu", "1").NominatedNode("n1").Obj(), "n1", []string{"deleted"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, status := postFilter(t, tc.nodes, tc.pods, tc.pdbs, tc.pod)
			if tc.wantNode == "" {
				if status.IsSuccess() || !strings.Contains(status.Message(), tc.wantMsg) {
					t.Fatalf("got %+v %v, want failure %q", res, status, tc.wantMsg)
				}
				return
			}
			if !status.IsSuccess() || res.NominatedNodeName != tc.wantNode || !slices.Equal(names(res.Victims), tc.wantVictims) {
				t.Fatalf("got %+v (victims %v) %v, want %s %v", res, names(res.Victims), status, tc.wantNode, tc.wantVictims)
			}
		})
	}
}

// BenchmarkPostFilter measures preemption's dry run in scheduler_perf's
// SchedulingPreemption: 500 nodes of 4 CPUs, each full with four
// low-priority pods of 900m, and a high-priority pod of 900m that fits
// nowhere. Each iteration tries NumCandidates (100) nodes.
func BenchmarkPostFilter(b *testing.B) {
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	for i := range 500 {
		node := fmt.Sprintf("node-%05d", i)
		nodes = append(nodes, st.MakeNode().Name(node).Capacity("cpu", "4", "memory", "32Gi", "pods", "110").Obj())
		for j := range 4 {
			pods = append(pods, st.MakePod().Name(fmt.Sprintf("low-%d-%d", i, j)).Node(node).Priority(10).Req("cpu", "900m", "memory", "500Mi").Obj())
		}
	}
	pod := st.MakePod().Name("high").Priority(1000).Req("cpu", "900m", "memory", "500Mi").Obj()
	fwk, snap, state, statuses := filtered(b, nodes, pods, nil, pod)
	pl := defaultpreemption.New()
	b.ResetTimer()
	for range b.N {
		if res, s := pl.PostFilter(state, pod, fwk, snap, statuses); !s.IsSuccess() || len(res.Victims) != 1 {
			b.Fatalf("got %+v %v, want one victim", res, s)
		}
	}
}
