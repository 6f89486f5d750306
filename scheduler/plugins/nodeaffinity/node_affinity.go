// Package nodeaffinity places pods by node labels: spec.nodeSelector and
// required nodeSelectorTerms filter (terms are ORed, expressions within a
// term ANDed; In, NotIn, Exists, DoesNotExist, Gt and Lt on integers, and
// matchFields on metadata.name); preferred terms score, by the sum of the
// weights of the terms a node matches. The matching is minik's one
// implementation, internal/nodeaffinity, which the kubelet, the DaemonSet
// controller, topology spread and volume binding use too.
package nodeaffinity

import (
	corev1 "k8s.io/api/core/v1"

	"minik/internal/nodeaffinity"
	"minik/scheduler/framework"
)

const (
	// Name is the plugin's name in the registry.
	Name = "NodeAffinity"
	// ErrReasonPod is the rejection reason.
	ErrReasonPod = "node(s) didn't match Pod's node affinity/selector"
)

// NodeAffinity is a filter and score plugin.
type NodeAffinity struct{}

var (
	_ framework.PreFilterPlugin = &NodeAffinity{}
	_ framework.FilterPlugin    = &NodeAffinity{}
	_ framework.PreScorePlugin  = &NodeAffinity{}
	_ framework.ScorePlugin     = &NodeAffinity{}
)

// New returns the plugin.
func New() *NodeAffinity { return &NodeAffinity{} }

// Name implements framework.Plugin.
func (*NodeAffinity) Name() string { return Name }

// Keys of this plugin's cycle state.
var (
	preFilterKey = framework.NewStateKey("PreFilter" + Name)
	preScoreKey  = framework.NewStateKey("PreScore" + Name)
)

// Fits reports whether node satisfies pod's nodeSelector and required
// node affinity (k8s.io/component-helpers' rule). The kubelet admits by
// it too.
func Fits(pod *corev1.Pod, node *corev1.Node) bool {
	match, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)
	return match
}

// PreFilter parses the pod's node constraints once; a pod without any
// skips Filter.
func (*NodeAffinity) PreFilter(state *framework.CycleState, pod *corev1.Pod, _ framework.SharedLister) *framework.Status {
	a := pod.Spec.Affinity
	if len(pod.Spec.NodeSelector) == 0 && (a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil) {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterKey, nodeaffinity.GetRequiredNodeAffinity(pod))
	return nil
}

// Filter implements framework.FilterPlugin.
func (*NodeAffinity) Filter(state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	r, err := framework.ReadAs[nodeaffinity.RequiredNodeAffinity](state, preFilterKey)
	if err != nil {
		r = nodeaffinity.GetRequiredNodeAffinity(pod)
	}
	// A term that does not parse matches no node, as in kube-scheduler.
	if match, _ := r.Match(ni.Node()); match {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPod)
}

// PreScore parses the preferred terms once; a pod without any is not
// scored.
func (*NodeAffinity) PreScore(state *framework.CycleState, pod *corev1.Pod, _ []*framework.NodeInfo, _ framework.SharedLister) *framework.Status {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	terms, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	if err != nil {
		return framework.AsStatus(err)
	}
	state.Write(preScoreKey, terms)
	return nil
}

// Score sums the weights of the preferred terms the node matches.
func (*NodeAffinity) Score(state *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	terms, err := framework.ReadAs[*nodeaffinity.PreferredSchedulingTerms](state, preScoreKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	return terms.Score(ni.Node()), nil
}

// NormalizeScore scales so that the best node gets 100.
func (*NodeAffinity) NormalizeScore(_ *framework.CycleState, _ *corev1.Pod, scores []framework.NodeScore) *framework.Status {
	return framework.DefaultNormalizeScore(framework.MaxNodeScore, false, scores)
}
