// Package nodeaffinity places pods by node labels: spec.nodeSelector and
// required nodeSelectorTerms filter (terms are ORed, expressions within a
// term ANDed; In, NotIn, Exists, DoesNotExist, Gt, Lt, and matchFields on
// metadata.name); preferred terms score, by the sum of the weights of the
// terms a node matches.
package nodeaffinity

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

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

// RequiredNodeAffinity is a pod's nodeSelector and required node affinity,
// parsed once to be matched against many nodes.
type RequiredNodeAffinity struct {
	selector labels.Selector         // nil: no nodeSelector
	required *framework.NodeSelector // nil: no required terms
}

// GetRequiredNodeAffinity parses pod's nodeSelector and required terms.
// PodTopologySpread uses it too.
func GetRequiredNodeAffinity(pod *corev1.Pod) *RequiredNodeAffinity {
	r := &RequiredNodeAffinity{}
	if len(pod.Spec.NodeSelector) > 0 {
		r.selector = labels.SelectorFromSet(pod.Spec.NodeSelector)
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		r.required = framework.NewNodeSelector(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms)
	}
	return r
}

// Match reports whether node satisfies both.
func (r *RequiredNodeAffinity) Match(node *corev1.Node) bool {
	if r.selector != nil && !r.selector.Matches(labels.Set(node.Labels)) {
		return false
	}
	return r.required == nil || r.required.Match(node)
}

// PreFilter parses the pod's node constraints once; a pod without any
// skips Filter.
func (*NodeAffinity) PreFilter(state *framework.CycleState, pod *corev1.Pod, _ framework.SharedLister) *framework.Status {
	r := GetRequiredNodeAffinity(pod)
	if r.selector == nil && r.required == nil {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterKey, r)
	return nil
}

// Filter implements framework.FilterPlugin.
func (*NodeAffinity) Filter(state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	r, err := framework.ReadAs[*RequiredNodeAffinity](state, preFilterKey)
	if err != nil {
		r = GetRequiredNodeAffinity(pod)
	}
	if r.Match(ni.Node()) {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPod)
}

type weightedTerm struct {
	weight   int64
	selector *framework.NodeSelector
}

// PreScore parses the preferred terms once; a pod without any is not
// scored.
func (*NodeAffinity) PreScore(state *framework.CycleState, pod *corev1.Pod, _ []*framework.NodeInfo, _ framework.SharedLister) *framework.Status {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	var terms []weightedTerm
	for _, t := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		if t.Weight != 0 {
			terms = append(terms, weightedTerm{int64(t.Weight), framework.NewNodeSelector([]corev1.NodeSelectorTerm{t.Preference})})
		}
	}
	state.Write(preScoreKey, terms)
	return nil
}

// Score sums the weights of the preferred terms the node matches.
func (*NodeAffinity) Score(state *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	terms, err := framework.ReadAs[[]weightedTerm](state, preScoreKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	var sum int64
	for _, t := range terms {
		if t.selector.Match(ni.Node()) {
			sum += t.weight
		}
	}
	return sum, nil
}

// NormalizeScore scales so that the best node gets 100.
func (*NodeAffinity) NormalizeScore(_ *framework.CycleState, _ *corev1.Pod, scores []framework.NodeScore) *framework.Status {
	return framework.DefaultNormalizeScore(framework.MaxNodeScore, false, scores)
}
