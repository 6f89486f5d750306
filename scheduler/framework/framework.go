package framework

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
)

// ScorePluginWeight is a score plugin with its weight in the total.
type ScorePluginWeight struct {
	Plugin ScorePlugin
	Weight int64
}

// Profile lists the plugins of a scheduler, in the order they run.
type Profile struct {
	// SchedulerName is the spec.schedulerName of the pods this profile
	// schedules. Default "default-scheduler".
	SchedulerName string
	PreFilter     []PreFilterPlugin
	Filter        []FilterPlugin
	PostFilter    []PostFilterPlugin
	PreScore      []PreScorePlugin
	Score         []ScorePluginWeight
	PreBind       []PreBindPlugin
	Bind          []BindPlugin
	// PercentageOfNodesToScore: once this share of the nodes is found
	// feasible, filtering stops. 0 means adaptive (50% minus 1% per 125
	// nodes, at least 5%); 100 means every node. Clusters under 100 nodes
	// are always searched entirely.
	PercentageOfNodesToScore int32
	// Parallelism is the number of goroutines filtering and scoring nodes.
	// Default GOMAXPROCS.
	Parallelism int
}

// Framework runs a Profile's plugins.
type Framework struct {
	Profile
	// NominatedPods, if set, returns the pods nominated to a node (by
	// earlier preemptions) that are at least as important as pod. Filters
	// count them as if they were already there, so that lower-priority pods
	// do not take the room being made for them.
	NominatedPods func(node string, pod *corev1.Pod) []*PodInfo
	// KeepScores makes RunScore also return each plugin's scores, before
	// and after normalization (for explanations; they are then allocated
	// for the caller instead of taken from a pool).
	KeepScores bool
}

// New returns a Framework for p.
func New(p Profile) *Framework {
	if p.SchedulerName == "" {
		p.SchedulerName = corev1.DefaultSchedulerName
	}
	if p.Parallelism <= 0 {
		p.Parallelism = runtime.GOMAXPROCS(0)
	}
	return &Framework{Profile: p}
}

// RunPreFilter runs every PreFilter plugin. A rejection from one of them
// rejects the pod on every node.
func (f *Framework) RunPreFilter(state *CycleState, pod *corev1.Pod, snap SharedLister) *Status {
	for _, pl := range f.PreFilter {
		s := pl.PreFilter(state, pod, snap)
		switch {
		case s.IsSkip():
			state.skipFilter[pl.Name()] = true
		case !s.IsSuccess():
			return s.WithPlugin(pl.Name())
		}
	}
	state.filters = make([]FilterPlugin, 0, len(f.Filter))
	for _, pl := range f.Filter {
		if !state.skipFilter[pl.Name()] {
			state.filters = append(state.filters, pl)
		}
	}
	return nil
}

// RunFilter runs the Filter plugins on one node and stops at the first
// rejection. Plugins whose PreFilter returned Skip are left out.
func (f *Framework) RunFilter(state *CycleState, pod *corev1.Pod, node *NodeInfo) *Status {
	filters := state.filters
	if filters == nil { // RunPreFilter was not called
		filters = f.Filter
	}
	for _, pl := range filters {
		if s := pl.Filter(state, pod, node); !s.IsSuccess() {
			return s.WithPlugin(pl.Name())
		}
	}
	return nil
}

// RunFilterWithNominated runs RunFilter on a node as if the pods
// nominated to it were already running there (NodeInfo.WithNominated).
func (f *Framework) RunFilterWithNominated(state *CycleState, pod *corev1.Pod, node *NodeInfo) *Status {
	if f.NominatedPods != nil {
		if noms := f.NominatedPods(node.Node().Name, pod); len(noms) > 0 {
			node = node.WithNominated(noms)
		}
	}
	return f.RunFilter(state, pod, node)
}

// AddNominated adds to node, a copy of the caller's own, the pods
// nominated to it that RunFilterWithNominated would count: a preemption's
// dry run then filters it with RunFilter as it takes pods away and gives
// them back, without copying it again each time.
func (f *Framework) AddNominated(pod *corev1.Pod, node *NodeInfo) {
	if f.NominatedPods == nil {
		return
	}
	for _, p := range f.NominatedPods(node.Node().Name, pod) {
		node.AddPodInfo(p)
	}
}

// PluginVerdict is one filter's verdict on one node, for explanations.
type PluginVerdict struct {
	Plugin string
	Status *Status // nil: passed
	Skip   bool    // the plugin had nothing to check for this pod
}

// RunFilterAll runs every Filter plugin on a node, without stopping at a
// rejection, so that `minik explain` can show each one's verdict.
func (f *Framework) RunFilterAll(state *CycleState, pod *corev1.Pod, node *NodeInfo) []PluginVerdict {
	out := make([]PluginVerdict, 0, len(f.Filter))
	for _, pl := range f.Filter {
		if state.skipFilter[pl.Name()] {
			out = append(out, PluginVerdict{Plugin: pl.Name(), Skip: true})
			continue
		}
		out = append(out, PluginVerdict{Plugin: pl.Name(), Status: pl.Filter(state, pod, node).WithPlugin(pl.Name())})
	}
	return out
}

// RunPreScore runs every PreScore plugin over the feasible nodes.
func (f *Framework) RunPreScore(state *CycleState, pod *corev1.Pod, nodes []*NodeInfo, snap SharedLister) *Status {
	for _, pl := range f.PreScore {
		s := pl.PreScore(state, pod, nodes, snap)
		switch {
		case s.IsSkip():
			state.skipScore[pl.Name()] = true
		case !s.IsSuccess():
			return s.WithPlugin(pl.Name())
		}
	}
	return nil
}

// PluginScores is every score plugin's normalized (0..100) score for each
// node, in the order of the nodes given to RunScore.
type PluginScores struct {
	Plugin string
	Weight int64
	Raw    []int64 // before normalization
	Scores []int64 // normalized, before weighting
	Skip   bool
}

// scoreBuffers is RunScore's working memory: every plugin's score for
// every node, and the slice NormalizeScore works on. It is pooled unless
// the caller keeps the scores: on 500 feasible nodes it is about 40 KB a
// cycle, the scheduler's largest garbage.
type scoreBuffers struct {
	per     []PluginScores
	scores  []int64
	scratch []NodeScore
}

var scoreBufferPool = sync.Pool{New: func() any { return new(scoreBuffers) }}

// take returns the buffers sized for plugins × nodes.
func (b *scoreBuffers) take(plugins, nodes int) ([]PluginScores, []int64, []NodeScore) {
	b.per = slices.Grow(b.per[:0], plugins)[:plugins]
	b.scores = slices.Grow(b.scores[:0], plugins*nodes)[:plugins*nodes]
	b.scratch = slices.Grow(b.scratch[:0], nodes)[:nodes]
	return b.per, b.scores, b.scratch
}

// RunScore scores nodes with every Score plugin, normalizes, weighs and
// sums. It returns the totals, in the order of nodes, and with KeepScores
// each plugin's scores (nil without).
func (f *Framework) RunScore(ctx context.Context, state *CycleState, pod *corev1.Pod, nodes []*NodeInfo) ([]int64, []PluginScores, *Status) {
	buf := new(scoreBuffers)
	if !f.KeepScores {
		buf = scoreBufferPool.Get().(*scoreBuffers)
		defer scoreBufferPool.Put(buf)
	}
	per, scores, scratch := buf.take(len(f.Score), len(nodes))
	for i, w := range f.Score {
		per[i] = PluginScores{Plugin: w.Plugin.Name(), Weight: w.Weight, Skip: state.skipScore[w.Plugin.Name()]}
		if !per[i].Skip {
			per[i].Scores = scores[i*len(nodes) : (i+1)*len(nodes) : (i+1)*len(nodes)]
		}
	}
	var firstErr atomic.Pointer[Status]
	Parallelize(ctx, f.Parallelism, len(nodes), func(n int) {
		for i, w := range f.Score {
			if per[i].Skip {
				continue
			}
			s, st := w.Plugin.Score(state, pod, nodes[n])
			if !st.IsSuccess() {
				firstErr.CompareAndSwap(nil, st.WithPlugin(w.Plugin.Name()))
				return
			}
			per[i].Scores[n] = s
		}
	})
	if st := firstErr.Load(); st != nil {
		return nil, nil, st
	}
	totals := make([]int64, len(nodes)) // no pointers: nothing for the GC to scan
	for i, w := range f.Score {
		if per[i].Skip {
			continue
		}
		if f.KeepScores {
			per[i].Raw = append([]int64(nil), per[i].Scores...)
		}
		for n := range nodes {
			scratch[n] = NodeScore{Name: nodes[n].Node().Name, Score: per[i].Scores[n]}
		}
		if st := w.Plugin.NormalizeScore(state, pod, scratch); !st.IsSuccess() {
			return nil, nil, st.WithPlugin(w.Plugin.Name())
		}
		for n := range nodes {
			s := scratch[n].Score
			if s < MinNodeScore || s > MaxNodeScore {
				return nil, nil, NewStatus(Error, fmt.Sprintf("plugin %s gave node %s the score %d, outside 0..%d", w.Plugin.Name(), scratch[n].Name, s, MaxNodeScore))
			}
			per[i].Scores[n] = s
			totals[n] += s * w.Weight
		}
	}
	if !f.KeepScores {
		return totals, nil, nil
	}
	return totals, per, nil
}

// RunPostFilter runs the PostFilter plugins until one proposes a node.
func (f *Framework) RunPostFilter(state *CycleState, pod *corev1.Pod, snap SharedLister, statuses NodeToStatus) (*PostFilterResult, *Status) {
	var last *Status
	for _, pl := range f.PostFilter {
		r, s := pl.PostFilter(state, pod, f, snap, statuses)
		if s.IsSuccess() {
			return r, nil
		}
		last = s.WithPlugin(pl.Name())
		if s.Code() == Error {
			return nil, last
		}
	}
	if last == nil {
		last = NewStatus(Unschedulable)
	}
	return nil, last
}

// RunBind runs the first Bind plugin.
func (f *Framework) RunBind(ctx context.Context, pod *corev1.Pod, nodeName string) *Status {
	for _, pl := range f.Bind {
		return pl.Bind(ctx, pod, nodeName).WithPlugin(pl.Name())
	}
	return NewStatus(Error, "no bind plugin configured")
}

// NumFeasibleNodesToFind returns how many feasible nodes to look for
// among numAllNodes before stopping, following percentageOfNodesToScore.
func (f *Framework) NumFeasibleNodesToFind(numAllNodes int) int {
	const minFeasibleNodesToFind, minFeasibleNodesPercentageToFind = 100, 5
	if numAllNodes < minFeasibleNodesToFind {
		return numAllNodes
	}
	pct := int(f.PercentageOfNodesToScore)
	if pct <= 0 {
		pct = max(50-numAllNodes/125, minFeasibleNodesPercentageToFind)
	}
	if pct >= 100 {
		return numAllNodes
	}
	return max(numAllNodes*pct/100, minFeasibleNodesToFind)
}

// Parallelize calls fn(i) for i in [0, n) on up to workers goroutines and
// returns when all calls are done or ctx is cancelled (calls not yet
// started are then skipped). It returns a bound on the items called: no
// call had i at or above it (n when none was skipped), so that a caller
// stopping early looks back over what was done, not over all n.
//
// The caller is one of the workers, and it waits only for calls a helper
// has started: on a busy process a new goroutine may wait milliseconds to
// run, and a cycle that waited for its helpers to be scheduled took
// longer than doing their share itself (half of a preemption workload's
// time went into that wait).
func Parallelize(ctx context.Context, workers, n int, fn func(i int)) int {
	if n == 0 {
		return 0
	}
	// Below this many items per worker the goroutines cost more than they save.
	const minPerWorker = 32
	workers = min(workers, (n+minPerWorker-1)/minPerWorker)
	if workers <= 1 {
		i := 0
		for ; i < n && ctx.Err() == nil; i++ {
			fn(i)
		}
		return i
	}
	var next, done, bound atomic.Int64
	bound.Store(int64(n))
	finished := make(chan struct{})
	finish := func(k int64) {
		if done.Add(k) == int64(n) {
			close(finished)
		}
	}
	work := func() {
		for {
			i := next.Add(1) - 1
			if i >= int64(n) {
				return
			}
			if ctx.Err() != nil {
				// Take every item nobody has taken, and count them done
				// with this one: skipping them one by one costs more.
				untaken := next.Swap(int64(n))
				if untaken < int64(n) { // the first worker to stop: nothing from here on ran
					bound.Store(untaken)
				}
				finish(1 + max(int64(n)-untaken, 0))
				return
			}
			fn(int(i))
			finish(1)
		}
	}
	for range workers - 1 {
		go work() // a helper that starts after the last item is taken just returns
	}
	work()
	<-finished
	return int(bound.Load())
}
