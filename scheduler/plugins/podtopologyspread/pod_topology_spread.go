// Package podtopologyspread spreads matching pods evenly over topology
// domains (zones, hosts...). The skew of a domain is its number of
// matching pods minus the smallest such number among eligible domains.
//
//   - DoNotSchedule constraints filter: placing the pod must keep the skew
//     at or below maxSkew. A node without the topologyKey label fails.
//   - ScheduleAnyway constraints score: fewer matching pods in the node's
//     domains is better.
//   - A pod without constraints of its own gets the system default
//     spreading, by hostname (maxSkew 3) and by zone (maxSkew 5), as
//     scores only, over the pods of its Services and of its
//     ReplicaSet, ReplicationController or StatefulSet, as Kubernetes
//     derives the default constraints' selector (the seeds'
//     SelectorSpreadPriority).
package podtopologyspread

import (
	"math"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"minik/internal/nodeaffinity"
	"minik/scheduler/framework"
)

const (
	// Name is the plugin's name in the registry.
	Name = "PodTopologySpread"
	// ErrReasonConstraintsNotMatch: placing the pod would exceed maxSkew.
	ErrReasonConstraintsNotMatch = "node(s) didn't match pod topology spread constraints"
	// ErrReasonNodeLabelNotMatch: the node lacks a constraint's topologyKey.
	ErrReasonNodeLabelNotMatch = ErrReasonConstraintsNotMatch + " (missing required label)"
)

// Keys of this plugin's cycle state.
var (
	preFilterKey = framework.NewStateKey("PreFilter" + Name)
	preScoreKey  = framework.NewStateKey("PreScore" + Name)
)

// DefaultConstraints are the system default spreading for pods of one
// controller that set no constraints of their own.
var DefaultConstraints = []corev1.TopologySpreadConstraint{
	{MaxSkew: 3, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway},
	{MaxSkew: 5, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway},
}

// PodTopologySpread is a filter and score plugin.
type PodTopologySpread struct{}

var (
	_ framework.PreFilterPlugin = &PodTopologySpread{}
	_ framework.FilterPlugin    = &PodTopologySpread{}
	_ framework.PreScorePlugin  = &PodTopologySpread{}
	_ framework.ScorePlugin     = &PodTopologySpread{}
)

// New returns the plugin.
func New() *PodTopologySpread { return &PodTopologySpread{} }

// Name implements framework.Plugin.
func (*PodTopologySpread) Name() string { return Name }

// constraint is a TopologySpreadConstraint ready to count with.
type constraint struct {
	MaxSkew       int32
	TopologyKey   string
	MinDomains    int32
	honorAffinity bool // nodeAffinityPolicy Honor (the default)
	nodeAffinity  nodeaffinity.RequiredNodeAffinity
	honorTaints   bool // nodeTaintsPolicy Honor (default Ignore)
	matches       func(*corev1.Pod) bool
	selfMatch     int64
	// controllerUID is set for the default constraints, which match the
	// pods of one controller: NodeInfo counts those without a walk.
	controllerUID types.UID
}

func buildConstraints(pod *corev1.Pod, want corev1.UnsatisfiableConstraintAction) ([]constraint, error) {
	var out []constraint
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != want {
			continue
		}
		sel := labels.Nothing()
		if c.LabelSelector != nil {
			var err error
			if sel, err = metav1.LabelSelectorAsSelector(c.LabelSelector); err != nil {
				return nil, err
			}
			for _, k := range c.MatchLabelKeys {
				if v, ok := pod.Labels[k]; ok {
					if r, err := labels.NewRequirement(k, "in", []string{v}); err == nil {
						sel = sel.Add(*r)
					}
				}
			}
		}
		ns := pod.Namespace
		out = append(out, newConstraint(pod, c, func(p *corev1.Pod) bool {
			return p.Namespace == ns && sel.Matches(labels.Set(p.Labels))
		}))
	}
	return out, nil
}

func newConstraint(pod *corev1.Pod, c corev1.TopologySpreadConstraint, matches func(*corev1.Pod) bool) constraint {
	out := constraint{
		MaxSkew: c.MaxSkew, TopologyKey: c.TopologyKey, MinDomains: 1, matches: matches,
		honorAffinity: c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor,
		honorTaints:   c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor,
		nodeAffinity:  nodeaffinity.GetRequiredNodeAffinity(pod),
	}
	if c.MinDomains != nil {
		out.MinDomains = *c.MinDomains
	}
	if matches(pod) {
		out.selfMatch = 1
	}
	return out
}

// spreadingOwnerKinds are the controllers whose pods the default
// spreading counts together, as Kubernetes' DefaultSelector.
var spreadingOwnerKinds = map[string]bool{"ReplicationController": true, "ReplicaSet": true, "StatefulSet": true}

// defaultConstraints spreads the pods that share pod's Services and its
// controller. Kubernetes ANDs the selectors of the pod's Services (the
// Services of its namespace whose selector matches it) with its
// controller's selector; here the controller's part is "has the same
// controller", which its selector matches by construction, so that a
// pod with no Service counts through NodeInfo's per-controller counts
// without walking any pod. A pod with neither gets no default spreading.
func defaultConstraints(pod *corev1.Pod, services []*corev1.Service) []constraint {
	var uid types.UID
	if owner := metav1.GetControllerOfNoCopy(pod); owner != nil && spreadingOwnerKinds[owner.Kind] {
		uid = owner.UID
	}
	var svcSelector labels.Set
	for _, svc := range services {
		if svc.Namespace == pod.Namespace && svc.Spec.Selector != nil &&
			labels.SelectorFromValidatedSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
			svcSelector = labels.Merge(svcSelector, svc.Spec.Selector)
		}
	}
	if uid == "" && len(svcSelector) == 0 {
		return nil
	}
	ns := pod.Namespace
	var matches func(p *corev1.Pod) bool
	if len(svcSelector) == 0 {
		matches = func(p *corev1.Pod) bool {
			// Called for every pod on every node scored: no copying.
			o := metav1.GetControllerOfNoCopy(p)
			return o != nil && o.UID == uid && p.Namespace == ns
		}
	} else {
		sel := labels.SelectorFromValidatedSet(svcSelector)
		matches = func(p *corev1.Pod) bool {
			if p.Namespace != ns || !sel.Matches(labels.Set(p.Labels)) {
				return false
			}
			if uid == "" {
				return true
			}
			o := metav1.GetControllerOfNoCopy(p)
			return o != nil && o.UID == uid
		}
	}
	out := make([]constraint, len(DefaultConstraints))
	for i, c := range DefaultConstraints {
		out[i] = newConstraint(pod, c, matches)
		if len(svcSelector) == 0 {
			out[i].controllerUID = uid // NodeInfo counts these
		}
	}
	return out
}

// eligible reports whether a node's domain counts for c.
func (c *constraint) eligible(pod *corev1.Pod, node *corev1.Node) bool {
	if c.honorAffinity {
		if match, _ := c.nodeAffinity.Match(node); !match {
			return false
		}
	}
	if c.honorTaints {
		if _, bad := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false); bad {
			return false
		}
	}
	return true
}

func countMatching(c *constraint, ni *framework.NodeInfo) int64 {
	if c.controllerUID != "" {
		return int64(ni.ControllerPods(c.controllerUID))
	}
	var n int64
	for _, pi := range ni.Pods {
		if pi.Pod.DeletionTimestamp == nil && c.matches(pi.Pod) {
			n++
		}
	}
	return n
}

type preFilterState struct {
	constraints []constraint
	counts      []map[string]int64 // per constraint: domain value → matching pods
	minMatch    []int64
}

func hasAllKeys(node *corev1.Node, cs []constraint) bool {
	for _, c := range cs {
		if _, ok := node.Labels[c.TopologyKey]; !ok {
			return false
		}
	}
	return true
}

// PreFilter counts matching pods per domain for the DoNotSchedule
// constraints.
func (*PodTopologySpread) PreFilter(state *framework.CycleState, pod *corev1.Pod, snap framework.SharedLister) *framework.Status {
	cs, err := buildConstraints(pod, corev1.DoNotSchedule)
	if err != nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
	}
	if len(cs) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	s := &preFilterState{constraints: cs, counts: make([]map[string]int64, len(cs)), minMatch: make([]int64, len(cs))}
	for i := range cs {
		s.counts[i] = map[string]int64{}
	}
	for _, ni := range snap.List() {
		node := ni.Node()
		if !hasAllKeys(node, cs) {
			continue
		}
		for i := range cs {
			if !cs[i].eligible(pod, node) {
				continue
			}
			s.counts[i][node.Labels[cs[i].TopologyKey]] += countMatching(&cs[i], ni)
		}
	}
	for i, c := range cs {
		if int32(len(s.counts[i])) < c.MinDomains {
			s.minMatch[i] = 0 // too few domains: as if an empty one existed
			continue
		}
		s.minMatch[i] = math.MaxInt64
		for _, n := range s.counts[i] {
			s.minMatch[i] = min(s.minMatch[i], n)
		}
		if len(s.counts[i]) == 0 {
			s.minMatch[i] = 0
		}
	}
	state.Write(preFilterKey, s)
	return nil
}

// Filter implements framework.FilterPlugin.
func (*PodTopologySpread) Filter(state *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	s, err := framework.ReadAs[*preFilterState](state, preFilterKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	for i, c := range s.constraints {
		v, ok := ni.Node().Labels[c.TopologyKey]
		if !ok {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeLabelNotMatch)
		}
		if skew := s.counts[i][v] + c.selfMatch - s.minMatch[i]; skew > int64(c.MaxSkew) {
			return framework.NewStatus(framework.Unschedulable, ErrReasonConstraintsNotMatch)
		}
	}
	return nil
}

type preScoreState struct {
	constraints []constraint
	weights     []float64          // per constraint: log(domains + 2)
	counts      []map[string]int64 // per constraint (not hostname): domain → pods
	ignored     sets.Set[string]   // nodes missing a required key
}

// PreScore counts matching pods per domain for the ScheduleAnyway (or
// default) constraints.
func (*PodTopologySpread) PreScore(state *framework.CycleState, pod *corev1.Pod, nodes []*framework.NodeInfo, snap framework.SharedLister) *framework.Status {
	cs, err := buildConstraints(pod, corev1.ScheduleAnyway)
	if err != nil {
		return framework.AsStatus(err)
	}
	requireAll := len(pod.Spec.TopologySpreadConstraints) > 0
	if len(pod.Spec.TopologySpreadConstraints) == 0 {
		cs = defaultConstraints(pod, snap.Services(pod.Namespace))
	}
	if len(cs) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	s := &preScoreState{constraints: cs, weights: make([]float64, len(cs)), counts: make([]map[string]int64, len(cs)), ignored: sets.New[string]()}
	domains := make([]sets.Set[string], len(cs))
	for i := range cs {
		domains[i] = sets.New[string]()
		s.counts[i] = map[string]int64{}
	}
	for _, ni := range nodes {
		node := ni.Node()
		if requireAll && !hasAllKeys(node, cs) {
			s.ignored.Insert(node.Name)
			continue
		}
		for i, c := range cs {
			if v, ok := node.Labels[c.TopologyKey]; ok {
				domains[i].Insert(v)
			}
		}
	}
	for i := range cs {
		s.weights[i] = math.Log(float64(domains[i].Len() + 2))
	}
	for _, ni := range snap.List() {
		node := ni.Node()
		if requireAll && !hasAllKeys(node, cs) {
			continue
		}
		for i := range cs {
			c := &cs[i]
			if c.TopologyKey == corev1.LabelHostname || !c.eligible(pod, node) {
				continue
			}
			if v, ok := node.Labels[c.TopologyKey]; ok && domains[i].Has(v) {
				s.counts[i][v] += countMatching(c, ni)
			}
		}
	}
	state.Write(preScoreKey, s)
	return nil
}

// Score adds, per constraint, the matching pods of the node's domain
// (weighted by the log of the number of domains) plus maxSkew - 1. Lower
// is better; NormalizeScore reverses it.
func (*PodTopologySpread) Score(state *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	s, err := framework.ReadAs[*preScoreState](state, preScoreKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	node := ni.Node()
	if s.ignored.Has(node.Name) {
		return 0, nil
	}
	var score float64
	for i := range s.constraints {
		c := &s.constraints[i]
		v, ok := node.Labels[c.TopologyKey]
		if !ok {
			continue
		}
		var cnt int64
		if c.TopologyKey == corev1.LabelHostname {
			cnt = countMatching(c, ni)
		} else {
			cnt = s.counts[i][v]
		}
		score += float64(cnt)*s.weights[i] + float64(c.MaxSkew-1)
	}
	return int64(math.Round(score)), nil
}

// NormalizeScore maps the fewest matching pods to 100; ignored nodes get 0.
func (*PodTopologySpread) NormalizeScore(state *framework.CycleState, _ *corev1.Pod, scores []framework.NodeScore) *framework.Status {
	s, err := framework.ReadAs[*preScoreState](state, preScoreKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	var lo, hi int64 = math.MaxInt64, 0
	for _, sc := range scores {
		if s.ignored.Has(sc.Name) {
			continue
		}
		lo, hi = min(lo, sc.Score), max(hi, sc.Score)
	}
	for i := range scores {
		switch {
		case s.ignored.Has(scores[i].Name):
			scores[i].Score = 0
		case hi == 0:
			scores[i].Score = framework.MaxNodeScore
		default:
			scores[i].Score = framework.MaxNodeScore * (hi + lo - scores[i].Score) / hi
		}
	}
	return nil
}
