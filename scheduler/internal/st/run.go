package st

import (
	corev1 "k8s.io/api/core/v1"

	"minik/scheduler/cache"
	"minik/scheduler/framework"
)

// Namespace is a namespace with labels, for NewSnapshot.
type Namespace struct {
	Name   string
	Labels map[string]string
}

// NewSnapshot returns a snapshot of nodes with pods (bound by their
// spec.nodeName) in namespaces "default" and those given.
func NewSnapshot(nodes []*corev1.Node, pods []*corev1.Pod, namespaces ...Namespace) *cache.Snapshot {
	c := cache.New()
	for _, n := range nodes {
		c.AddNode(n)
	}
	for _, p := range pods {
		c.AddPod(p)
	}
	c.SetNamespace("default", map[string]string{})
	for _, ns := range namespaces {
		c.SetNamespace(ns.Name, ns.Labels)
	}
	snap := cache.NewEmptySnapshot()
	c.UpdateSnapshot(snap)
	return snap
}

// Filter runs pl's PreFilter (if it has one) and then its Filter for pod
// on node, as the framework would.
func Filter(pl framework.FilterPlugin, pod *corev1.Pod, snap framework.SharedLister, node string) *framework.Status {
	state := framework.NewCycleState()
	if pre, ok := pl.(framework.PreFilterPlugin); ok {
		st := pre.PreFilter(state, pod, snap)
		if st.IsSkip() {
			return nil
		}
		if !st.IsSuccess() {
			return st
		}
	}
	return pl.Filter(state, pod, snap.Get(node))
}

// Scores runs pl's PreScore (if it has one), Score and NormalizeScore for
// pod on every node of snap, and returns the normalized scores by node.
// A PreScore Skip gives every node 0.
func Scores(pl framework.ScorePlugin, pod *corev1.Pod, snap framework.SharedLister) (map[string]int64, *framework.Status) {
	state := framework.NewCycleState()
	nodes := snap.List()
	out := map[string]int64{}
	if pre, ok := pl.(framework.PreScorePlugin); ok {
		st := pre.PreScore(state, pod, nodes, snap)
		if st.IsSkip() {
			for _, n := range nodes {
				out[n.Node().Name] = 0
			}
			return out, nil
		}
		if !st.IsSuccess() {
			return nil, st
		}
	}
	scores := make([]framework.NodeScore, len(nodes))
	for i, n := range nodes {
		s, st := pl.Score(state, pod, n)
		if !st.IsSuccess() {
			return nil, st
		}
		scores[i] = framework.NodeScore{Name: n.Node().Name, Score: s}
	}
	if st := pl.NormalizeScore(state, pod, scores); !st.IsSuccess() {
		return nil, st
	}
	for _, s := range scores {
		out[s.Name] = s.Score
	}
	return out, nil
}
