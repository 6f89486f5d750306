package framework

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNumFeasibleNodesToFind(t *testing.T) {
	cases := []struct {
		name       string
		percentage int32
		nodes      int
		want       int
	}{
		{"below 100 nodes every node is searched", 0, 99, 99},
		{"at 100 nodes the adaptive share (50%) still finds at least 100", 0, 100, 100},
		{"1000 nodes adaptively: 50 - 1000/125 = 42%", 0, 1000, 420},
		{"5000 nodes adaptively: 50 - 40 = 10%", 0, 5000, 500},
		{"6000 nodes adaptively: at least 5%", 0, 6000, 300},
		{"20000 nodes adaptively: 5%", 0, 20000, 1000},
		{"a configured 30% of 1000 nodes", 30, 1000, 300},
		{"a configured share never goes below 100 nodes", 1, 1000, 100},
		{"100% means every node", 100, 5000, 5000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := New(Profile{PercentageOfNodesToScore: tc.percentage})
			if got := f.NumFeasibleNodesToFind(tc.nodes); got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestFitErrorMessage(t *testing.T) {
	taint := NewStatus(UnschedulableAndUnresolvable, "node(s) had untolerated taint(s)")
	anti := NewStatus(Unschedulable, "node(s) didn't match pod anti-affinity rules")
	cases := []struct {
		name string
		err  FitError
		want string
	}{
		{"reasons are counted and sorted, as kubectl describe shows them",
			FitError{NumAllNodes: 3, Statuses: NodeToStatus{"a": taint, "b": anti, "c": anti}},
			"0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 node(s) didn't match pod anti-affinity rules."},
		{"several reasons of one node each count",
			FitError{NumAllNodes: 1, Statuses: NodeToStatus{"a": NewStatus(Unschedulable, "Insufficient cpu", "Insufficient memory")}},
			"0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."},
		{"the preemption outcome is appended",
			FitError{NumAllNodes: 1, Statuses: NodeToStatus{"a": NewStatus(Unschedulable, "Insufficient cpu")},
				PostFilterMsg: "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."},
			"0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestDefaultNormalizeScore(t *testing.T) {
	cases := []struct {
		name    string
		in      []int64
		reverse bool
		want    []int64
	}{
		{"the best becomes 100 and the rest in proportion", []int64{1, 2, 4}, false, []int64{25, 50, 100}},
		{"reversed, the largest becomes 0", []int64{0, 1, 2}, true, []int64{100, 50, 0}},
		{"all zero stays zero", []int64{0, 0}, false, []int64{0, 0}},
		{"all zero reversed becomes 100", []int64{0, 0}, true, []int64{100, 100}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			scores := make([]NodeScore, len(tc.in))
			for i, s := range tc.in {
				scores[i].Score = s
			}
			DefaultNormalizeScore(MaxNodeScore, tc.reverse, scores)
			for i := range scores {
				if scores[i].Score != tc.want[i] {
					t.Fatalf("got %v, want %v", scores, tc.want)
				}
			}
		})
	}
}

func TestParallelizeCallsEachItemOnce(t *testing.T) {
	for _, workers := range []int{1, 2, 8} {
		for _, n := range []int{0, 1, 31, 64, 1000} {
			calls := make([]atomic.Int32, n)
			if bound := Parallelize(context.Background(), workers, n, func(i int) { calls[i].Add(1) }); bound != n {
				t.Fatalf("workers=%d n=%d: bound %d, want n when nothing was skipped", workers, n, bound)
			}
			for i := range calls {
				if c := calls[i].Load(); c != 1 {
					t.Fatalf("workers=%d n=%d: item %d called %d times, want 1", workers, n, i, c)
				}
			}
		}
	}
}

// A cancelled search (findFeasible has found enough nodes) returns
// without calling the items not yet started, and calls none twice; the
// bound it returns lies above every item called and below n.
func TestParallelizeStopsWhenCancelled(t *testing.T) {
	const n = 10000
	for _, workers := range []int{2, 8} {
		ctx, cancel := context.WithCancel(context.Background())
		calls := make([]atomic.Int32, n)
		var total atomic.Int32
		bound := Parallelize(ctx, workers, n, func(i int) {
			calls[i].Add(1)
			if total.Add(1) == 100 {
				cancel()
			}
		})
		cancel()
		if bound >= n {
			t.Errorf("workers=%d: bound %d after a cancel at 100 of %d", workers, bound, n)
		}
		if got := total.Load(); got >= n/2 {
			t.Errorf("workers=%d: %d of %d items called after the cancel at 100", workers, got, n)
		}
		for i := range calls {
			if c := calls[i].Load(); c > 1 {
				t.Fatalf("workers=%d: item %d called %d times", workers, i, c)
			} else if c == 1 && i >= bound {
				t.Fatalf("workers=%d: item %d called, at or above the bound %d", workers, i, bound)
			}
		}
	}
}

// scoreByDigit scores a node by its name's last digit, normalized so the
// best is 100.
type scoreByDigit struct{}

func (scoreByDigit) Name() string { return "ByDigit" }
func (scoreByDigit) Score(_ *CycleState, _ *corev1.Pod, ni *NodeInfo) (int64, *Status) {
	name := ni.Node().Name
	return int64(name[len(name)-1] - '0'), nil
}
func (scoreByDigit) NormalizeScore(_ *CycleState, _ *corev1.Pod, scores []NodeScore) *Status {
	return DefaultNormalizeScore(MaxNodeScore, false, scores)
}

// scoreTen gives every node 10.
type scoreTen struct{}

func (scoreTen) Name() string                                                 { return "Ten" }
func (scoreTen) Score(*CycleState, *corev1.Pod, *NodeInfo) (int64, *Status)   { return 10, nil }
func (scoreTen) NormalizeScore(*CycleState, *corev1.Pod, []NodeScore) *Status { return nil }

func TestRunScoreKeepsWhatItReturns(t *testing.T) {
	nodes := func(names ...string) []*NodeInfo {
		var out []*NodeInfo
		for _, n := range names {
			ni := NewNodeInfo()
			ni.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
			out = append(out, ni)
		}
		return out
	}
	profile := Profile{Score: []ScorePluginWeight{{scoreByDigit{}, 1}, {scoreTen{}, 2}}, Parallelism: 2}
	explain, cycle := New(profile), New(profile)
	explain.KeepScores = true
	pod := &corev1.Pod{}

	totals, per, st := explain.RunScore(context.Background(), NewCycleState(), pod, nodes("a1", "a2", "a4"))
	if !st.IsSuccess() {
		t.Fatal(st)
	}
	want := []int64{25 + 20, 50 + 20, 100 + 20}
	if !slices.Equal(totals, want) {
		t.Fatalf("totals %v, want %v", totals, want)
	}
	// The pooled path, on more nodes and then fewer, must neither give
	// wrong totals nor write into what explain's call returned.
	for _, names := range [][]string{{"b8", "b4", "b2", "b1", "b0"}, {"c5"}} {
		got, none, st := cycle.RunScore(context.Background(), NewCycleState(), pod, nodes(names...))
		if !st.IsSuccess() || none != nil {
			t.Fatalf("without KeepScores: per %v, status %v", none, st)
		}
		if got[0] != 100+20 {
			t.Fatalf("%v: the best node totals %d, want 120", names, got[0])
		}
	}
	if !slices.Equal(per[0].Raw, []int64{1, 2, 4}) || !slices.Equal(per[0].Scores, []int64{25, 50, 100}) ||
		!slices.Equal(per[1].Scores, []int64{10, 10, 10}) || per[1].Weight != 2 {
		t.Fatalf("kept scores changed: %+v", per)
	}
	if !slices.Equal(totals, want) {
		t.Fatalf("kept totals changed: %v", totals)
	}
}
