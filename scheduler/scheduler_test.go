package scheduler

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik/scheduler/cache"
	"minik/scheduler/framework"
	"minik/scheduler/internal/st"
	"minik/scheduler/plugins"
	"minik/scheduler/queue"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// newTestScheduler is a scheduler without API: a cache to fill and the
// default plugins.
func newTestScheduler(nodes []*corev1.Node, pods []*corev1.Pod) *Scheduler {
	s := &Scheduler{
		fwk:       framework.New(plugins.DefaultProfile(corev1.DefaultSchedulerName, nil)),
		cache:     cache.New(),
		queue:     queue.New(queue.Config{}),
		snapshot:  cache.NewEmptySnapshot(),
		nominator: newNominator(),
		inflight:  newPreemptions(),
		rng:       rand.New(rand.NewPCG(1, 1)),
	}
	s.fwk.NominatedPods = s.nominator.podsFor
	for _, n := range nodes {
		s.cache.AddNode(n)
	}
	for _, p := range pods {
		s.cache.AddPod(p)
	}
	return s
}

func (s *Scheduler) try(pod *corev1.Pod) (string, error) {
	s.cache.UpdateSnapshot(s.snapshot)
	return s.schedulePod(context.Background(), framework.NewCycleState(), pod)
}

func TestSchedulePod(t *testing.T) {
	nodes := []*corev1.Node{
		st.MakeNode().Name("busy").Capacity("cpu", "4", "memory", "8Gi", "pods", "110").Obj(),
		st.MakeNode().Name("idle").Capacity("cpu", "4", "memory", "8Gi", "pods", "110").Obj(),
	}
	busy := st.MakePod().Name("x").Node("busy").Req("cpu", "3", "memory", "6Gi").Obj()
	cases := []struct {
		name      string
		pods      []*corev1.Pod
		nominated *corev1.Pod // nominated to "idle"
		pod       *corev1.Pod
		want      string
		wantErr   string
	}{
		{"the least allocated node wins", []*corev1.Pod{busy}, nil, st.MakePod().Req("cpu", "500m").Obj(), "idle", ""},
		{"a pod that fits only one node goes there", []*corev1.Pod{busy}, nil, st.MakePod().Req("cpu", "2").Obj(), "idle", ""},
		{"no fit gives the upstream message", []*corev1.Pod{busy}, nil, st.MakePod().Req("cpu", "5").Obj(), "",
			"0/2 nodes are available: 2 Insufficient cpu."},
		{"room nominated for a more important pod is not taken", []*corev1.Pod{busy},
			st.MakePod().Name("vip").Priority(100).Req("cpu", "4").Obj(), st.MakePod().Req("cpu", "2").Obj(), "",
			"0/2 nodes are available: 2 Insufficient cpu."},
		{"a more important pod ignores lower nominations", []*corev1.Pod{busy},
			st.MakePod().Name("meh").Priority(1).Req("cpu", "4").Obj(), st.MakePod().Priority(10).Req("cpu", "2").Obj(), "idle", ""},
		{"a pod tries its nominated node first", []*corev1.Pod{busy}, nil,
			st.MakePod().Req("cpu", "500m").NominatedNode("busy").Obj(), "busy", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestScheduler(nodes, tc.pods)
			if tc.nominated != nil {
				s.nominator.add(tc.nominated, "idle")
			}
			got, err := s.try(tc.pod)
			if tc.wantErr != "" {
				var fe *framework.FitError
				if !errors.As(err, &fe) || err.Error() != tc.wantErr {
					t.Fatalf("got %q, %v; want error %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	t.Run("no nodes at all is its own error", func(t *testing.T) {
		if _, err := newTestScheduler(nil, nil).try(st.MakePod().Obj()); !errors.Is(err, ErrNoNodesAvailable) {
			t.Fatalf("got %v", err)
		}
	})
}

// TestFailedSchedulingMessagesReadAsUpstream checks the whole
// FailedScheduling message, preemption included, word for word against
// what kube-scheduler v1.37 writes for the same cluster.
func TestFailedSchedulingMessagesReadAsUpstream(t *testing.T) {
	node := func(name string) *st.NodeWrapper {
		return st.MakeNode().Name(name).Capacity("cpu", "4", "memory", "8Gi", "pods", "110")
	}
	free := []*corev1.Node{node("a").Obj(), node("b").Obj()}
	full := []*corev1.Pod{st.MakePod().Name("x").Node("a").Req("cpu", "3").Obj(), st.MakePod().Name("y").Node("b").Req("cpu", "3").Obj()}
	green := st.Term("color", "green", corev1.LabelHostname)
	cases := []struct {
		name  string
		nodes []*corev1.Node
		pods  []*corev1.Pod
		pod   *corev1.Pod
		want  string
	}{
		{"an untolerated taint is named as upstream names it, and preemption cannot help",
			[]*corev1.Node{node("a").Taint("dedicated", "gpu", corev1.TaintEffectNoSchedule).Obj(), node("b").Taint("dedicated", "gpu", corev1.TaintEffectNoSchedule).Obj()},
			nil, st.MakePod().Obj(),
			"0/2 nodes are available: 2 node(s) had untolerated taint(s). preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."},
		{"a request larger than any node's allocatable is unresolvable",
			free, nil, st.MakePod().Req("cpu", "5").Obj(),
			"0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."},
		{"a request that fits an empty node finds no victims among pods as important",
			free, full, st.MakePod().Req("cpu", "2").Obj(),
			"0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."},
		{"the incoming pod's own anti-affinity is reported, not the running pod's",
			[]*corev1.Node{node("a").Obj(), node("b").Taint("dedicated", "gpu", corev1.TaintEffectNoSchedule).Obj()},
			[]*corev1.Pod{st.MakePod().Name("g").Label("color", "green").Node("a").PodAntiAffinity(green).Obj()},
			st.MakePod().Label("color", "green").PodAntiAffinity(green).Obj(),
			"0/2 nodes are available: 1 node(s) didn't match pod anti-affinity rules, 1 node(s) had untolerated taint(s). " +
				"preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."},
		{"a node selector no node matches",
			free, nil, st.MakePod().NodeSelector("disk", "ssd").Obj(),
			"0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."},
		{"a taken host port",
			[]*corev1.Node{node("a").Obj()}, []*corev1.Pod{st.MakePod().Name("web").Node("a").HostPort(80, corev1.ProtocolTCP, "").Obj()},
			st.MakePod().HostPort(80, corev1.ProtocolTCP, "").Obj(),
			"0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."},
		{"a pod that may not preempt says so",
			free, full, st.MakePod().Req("cpu", "2").PreemptNever().Obj(),
			"0/2 nodes are available: 2 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestScheduler(tc.nodes, tc.pods)
			state := framework.NewCycleState()
			s.cache.UpdateSnapshot(s.snapshot)
			_, err := s.schedulePod(context.Background(), state, tc.pod)
			var fe *framework.FitError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a FitError", err)
			}
			s.preempt(state, tc.pod, fe)
			if got := fe.Error(); got != tc.want {
				t.Fatalf("message\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
}

func TestTiesAreBrokenAtRandomButReproducibly(t *testing.T) {
	var nodes []*corev1.Node
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		nodes = append(nodes, st.MakeNode().Name(n).Obj())
	}
	run := func(seed uint64) []string {
		s := newTestScheduler(nodes, nil)
		s.rng = rand.New(rand.NewPCG(seed, seed))
		var out []string
		for range 8 {
			node, err := s.try(st.MakePod().Obj())
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, node)
		}
		return out
	}
	first, again, other := run(7), run(7), run(8)
	cases := []struct {
		name string
		ok   bool
	}{
		{"the same seed gives the same choices", equal(first, again)},
		{"another seed gives other choices", !equal(first, other)},
		{"equal nodes all get chosen sometimes", distinct(first) > 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				t.Fatalf("seed 7: %v, again: %v, seed 8: %v", first, again, other)
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func distinct(a []string) int {
	m := map[string]bool{}
	for _, s := range a {
		m[s] = true
	}
	return len(m)
}

func TestSamplingScoresOnlyEnoughFeasibleNodes(t *testing.T) {
	var nodes []*corev1.Node
	for i := range 1000 {
		nodes = append(nodes, st.MakeNode().Name(string(rune('A'+i/26/26))+string(rune('a'+i/26%26))+string(rune('a'+i%26))).Obj())
	}
	s := newTestScheduler(nodes, nil)
	s.cache.UpdateSnapshot(s.snapshot)
	state, pod := framework.NewCycleState(), st.MakePod().Obj()
	if status := s.fwk.RunPreFilter(state, pod, s.snapshot); !status.IsSuccess() {
		t.Fatal(status)
	}
	// Twice: the second cycle starts where the first stopped, and finds
	// nothing the first one left marked. (Which nodes pass may differ
	// from a strict prefix of the order by the few the workers were
	// checking when enough had passed, as in kube-scheduler.)
	for cycle := range 2 {
		start := s.nextStartNodeIndex
		feasible, _, err := s.findFeasible(context.Background(), state, pod, s.snapshot.List())
		if err != nil {
			t.Fatal(err)
		}
		if len(feasible) != 420 || s.nextStartNodeIndex != (start+420)%1000 {
			t.Fatalf("cycle %d: found %d feasible nodes, next start %d; want 420 (42%% of 1000) and a start moved past them", cycle, len(feasible), s.nextStartNodeIndex)
		}
		if slices.Contains(s.passed, true) || slices.ContainsFunc(s.verdicts, func(v *framework.Status) bool { return v != nil }) {
			t.Fatalf("cycle %d: verdicts left marked after the cycle", cycle)
		}
	}
}

func TestExplainGolden(t *testing.T) {
	nodes := []*corev1.Node{
		st.MakeNode().Name("node01").Label("zone", "a").Obj(),
		st.MakeNode().Name("node02").Label("zone", "b").Taint("node-role.kubernetes.io/master", "", corev1.TaintEffectNoSchedule).Obj(),
		st.MakeNode().Name("node03").Label("zone", "b").Capacity("cpu", "1", "memory", "2Gi", "pods", "110").Obj(),
	}
	pods := []*corev1.Pod{st.MakePod().Name("db").Label("app", "db").Node("node01").Req("cpu", "1").Obj()}
	cases := []struct {
		name, golden string
		pod          *corev1.Pod
	}{
		{"a pod that fits shows filters, scores and the chosen node", "explain_fits.golden",
			st.MakePod().Name("web").PreferredTerm(10, st.Expr("zone", corev1.NodeSelectorOpIn, "b")).Req("cpu", "500m").Obj()},
		{"a pod that fits nowhere shows why, with the preemption outcome", "explain_pending.golden",
			st.MakePod().Name("big").PodAntiAffinity(st.Term("app", "db", "zone")).Req("cpu", "2").Obj()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fwk := framework.New(plugins.DefaultProfile(corev1.DefaultSchedulerName, nil))
			var buf bytes.Buffer
			if err := Explain(fwk, st.NewSnapshot(nodes, pods), tc.pod, 1).Write(&buf); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("output differs from %s:\n%s", path, buf.String())
			}
		})
	}
}

// A pod that preempted goes back to the queue nominated, even before the
// nomination's patch comes back through the informer (the queue drops
// updates of a pod being scheduled): while its victim terminates, its
// next cycle waits instead of preempting again, as upstream's does.
func TestAPreemptorWaitsForItsVictimsInsteadOfPreemptingAgain(t *testing.T) {
	node := func(name string) *corev1.Node {
		return st.MakeNode().Name(name).Capacity("cpu", "5", "memory", "8Gi", "pods", "110").Obj()
	}
	pod := func(name, node string, prio int32) *corev1.Pod {
		return st.MakePod().Name(name).Node(node).Priority(prio).Req("cpu", "2").Obj()
	}
	low := pod("low", "a", 1)
	s := newTestScheduler([]*corev1.Node{node("a"), node("b")},
		[]*corev1.Pod{low, pod("medium-a", "a", 100), pod("medium-b1", "b", 100), pod("medium-b2", "b", 100)})
	critical := st.MakePod().Name("critical").Priority(2000000000).Req("cpu", "2").Obj()

	// A cycle's decision, as preempt takes it (without its API writes).
	cycle := func(p *corev1.Pod) (nominated, why string) {
		t.Helper()
		state := framework.NewCycleState()
		s.cache.UpdateSnapshot(s.snapshot)
		_, err := s.schedulePod(context.Background(), state, p)
		var fe *framework.FitError
		if !errors.As(err, &fe) {
			t.Fatalf("got %v, want a FitError", err)
		}
		result, status := s.fwk.RunPostFilter(state, p, s.snapshot, fe.Statuses)
		if !status.IsSuccess() {
			return "", status.Message()
		}
		return result.NominatedNodeName, ""
	}
	if nominated, _ := cycle(critical); nominated != "a" {
		t.Fatalf("nominated %q, want a (its victim has the lowest priority)", nominated)
	}
	s.nominator.add(critical, "a")
	// The victim is being deleted; the nomination's patch is not back yet.
	terminating := (&st.PodWrapper{Pod: *low.DeepCopy()}).PreemptedTerminating().Obj()
	s.cache.UpdatePod(low, terminating)

	requeued := withNomination(critical, "a")
	nominated, why := cycle(requeued)
	if nominated != "" || !strings.Contains(why, "not eligible due to a terminating pod on the nominated node") {
		t.Fatalf("second cycle nominated %q (%s), want none while the victim terminates", nominated, why)
	}
	if critical.Status.NominatedNodeName != "" {
		t.Fatal("withNomination changed the informer's copy")
	}
}
