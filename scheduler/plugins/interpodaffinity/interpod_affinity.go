// Package interpodaffinity places pods relative to other pods, by topology
// domain (the value of a node label such as zone or hostname):
//
//   - required podAffinity: the node's domain must already run a pod that
//     matches every term (or, for the first pod of a group that selects
//     itself, no pod matches anywhere yet);
//   - required podAntiAffinity: the node's domain must run no pod matching
//     a term;
//   - the required anti-affinity of pods already running counts against
//     the incoming pod the same way;
//   - preferred terms score, by their weights.
//
// A node without the term's topologyKey label is in no domain: it fails
// affinity and is free of anti-affinity. Anti-affinity by
// kubernetes.io/hostname, the common case, is a domain of one node: Filter
// checks that node's own pods instead of counting over the cluster (this
// assumes hostname labels are unique, as kubelets make them). Terms select pods in the pod's
// own namespace, in the listed namespaces, or in namespaces matched by
// namespaceSelector.
package interpodaffinity

import (
	corev1 "k8s.io/api/core/v1"

	"minik/scheduler/framework"
)

const (
	// Name is the plugin's name in the registry.
	Name = "InterPodAffinity"

	// ErrReasonExistingAntiAffinityRulesNotMatch: a running pod's
	// anti-affinity excludes the incoming pod from the node's domain.
	ErrReasonExistingAntiAffinityRulesNotMatch = "node(s) didn't satisfy existing pods anti-affinity rules"
	// ErrReasonAffinityRulesNotMatch: the pod's affinity is not met.
	ErrReasonAffinityRulesNotMatch = "node(s) didn't match pod affinity rules"
	// ErrReasonAntiAffinityRulesNotMatch: the pod's anti-affinity is not met.
	ErrReasonAntiAffinityRulesNotMatch = "node(s) didn't match pod anti-affinity rules"

	// HardPodAffinityWeight is the score a running pod's required affinity
	// term adds when the incoming pod matches it (symmetry).
	HardPodAffinityWeight = 1
)

// Keys of this plugin's cycle state.
var (
	preFilterKey = framework.NewStateKey("PreFilter" + Name)
	preScoreKey  = framework.NewStateKey("PreScore" + Name)
)

// InterPodAffinity is a filter and score plugin.
type InterPodAffinity struct{}

var (
	_ framework.PreFilterPlugin = &InterPodAffinity{}
	_ framework.FilterPlugin    = &InterPodAffinity{}
	_ framework.PreScorePlugin  = &InterPodAffinity{}
	_ framework.ScorePlugin     = &InterPodAffinity{}
)

// New returns the plugin.
func New() *InterPodAffinity { return &InterPodAffinity{} }

// Name implements framework.Plugin.
func (*InterPodAffinity) Name() string { return Name }

type topologyPair struct{ key, value string }

type preFilterState struct {
	pod *framework.PodInfo
	// matches matches terms once per namespace and label set.
	matches *framework.MatchMemo
	// existingAnti counts, per domain, running pods whose required
	// anti-affinity matches the incoming pod.
	existingAnti map[topologyPair]int64
	// affinity counts, per domain of each term, running pods that match all
	// the incoming pod's required affinity terms.
	affinity map[topologyPair]int64
	// anti counts, per domain, running pods matching one of the incoming
	// pod's required anti-affinity terms.
	anti map[topologyPair]int64
}

// PreFilter counts, once per pod, the pods that matter in each domain.
func (*InterPodAffinity) PreFilter(state *framework.CycleState, pod *corev1.Pod, snap framework.SharedLister) *framework.Status {
	pi := state.PodInfoOf(pod)
	if pi.ParseError != nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, pi.ParseError.Error())
	}
	withAnti := snap.HavePodsWithRequiredAntiAffinityList()
	if len(pi.RequiredAffinityTerms) == 0 && len(pi.RequiredAntiAffinityTerms) == 0 && len(withAnti) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	s := &preFilterState{pod: pi, matches: framework.NewMatchMemo(snap.NamespaceLabels), existingAnti: make(map[topologyPair]int64)}
	for _, ni := range withAnti {
		for _, existing := range ni.PodsWithRequiredAntiAffinity {
			for i := range existing.RequiredAntiAffinityTerms {
				t := &existing.RequiredAntiAffinityTerms[i]
				if t.TopologyKey == corev1.LabelHostname {
					continue // a domain of one node: Filter checks the node's own pods
				}
				if v, ok := ni.Node().Labels[t.TopologyKey]; ok && s.matches.Matches(t, pi) {
					s.existingAnti[topologyPair{t.TopologyKey, v}]++
				}
			}
		}
	}
	if len(pi.RequiredAffinityTerms) == 0 && !hasNonHostnameTerm(pi.RequiredAntiAffinityTerms) {
		state.Write(preFilterKey, s)
		return nil
	}
	nodes := snap.List()
	s.affinity = make(map[topologyPair]int64)
	s.anti = make(map[topologyPair]int64)
	for _, ni := range nodes {
		nodeLabels := ni.Node().Labels
		for _, existing := range ni.Pods {
			if len(pi.RequiredAffinityTerms) > 0 && matchesAll(s.matches, pi.RequiredAffinityTerms, existing) {
				for _, t := range pi.RequiredAffinityTerms {
					if v, ok := nodeLabels[t.TopologyKey]; ok {
						s.affinity[topologyPair{t.TopologyKey, v}]++
					}
				}
			}
			for i := range pi.RequiredAntiAffinityTerms {
				t := &pi.RequiredAntiAffinityTerms[i]
				if t.TopologyKey == corev1.LabelHostname {
					continue
				}
				if v, ok := nodeLabels[t.TopologyKey]; ok && s.matches.Matches(t, existing) {
					s.anti[topologyPair{t.TopologyKey, v}]++
				}
			}
		}
	}
	state.Write(preFilterKey, s)
	return nil
}

// hasNonHostnameTerm reports whether a term has a domain larger than one
// node, which needs counting over the whole cluster.
func hasNonHostnameTerm(terms []framework.AffinityTerm) bool {
	for _, t := range terms {
		if t.TopologyKey != corev1.LabelHostname {
			return true
		}
	}
	return false
}

func matchesAll(m *framework.MatchMemo, terms []framework.AffinityTerm, p *framework.PodInfo) bool {
	for i := range terms {
		if !m.Matches(&terms[i], p) {
			return false
		}
	}
	return true
}

// Filter implements framework.FilterPlugin.
func (*InterPodAffinity) Filter(state *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	s, err := framework.ReadAs[*preFilterState](state, preFilterKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	// Upstream's order, so the reason reads the same: the pod's own
	// affinity, then its own anti-affinity, then the running pods'.
	nodeLabels := ni.Node().Labels
	if !satisfiesAffinity(s, nodeLabels) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
	}
	// Terms by hostname: the domain is this node, so its own pods decide.
	_, hasHostname := nodeLabels[corev1.LabelHostname]
	for i := range s.pod.RequiredAntiAffinityTerms {
		t := &s.pod.RequiredAntiAffinityTerms[i]
		if t.TopologyKey == corev1.LabelHostname {
			if hasHostname && anyPodMatches(s.matches, t, ni) {
				return framework.NewStatus(framework.Unschedulable, ErrReasonAntiAffinityRulesNotMatch)
			}
			continue
		}
		if v, ok := nodeLabels[t.TopologyKey]; ok && s.anti[topologyPair{t.TopologyKey, v}] > 0 {
			return framework.NewStatus(framework.Unschedulable, ErrReasonAntiAffinityRulesNotMatch)
		}
	}
	if len(s.existingAnti) > 0 {
		for k, v := range nodeLabels {
			if s.existingAnti[topologyPair{k, v}] > 0 {
				return framework.NewStatus(framework.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
			}
		}
	}
	if hasHostname {
		for _, existing := range ni.PodsWithRequiredAntiAffinity {
			for i := range existing.RequiredAntiAffinityTerms {
				if t := &existing.RequiredAntiAffinityTerms[i]; t.TopologyKey == corev1.LabelHostname && s.matches.Matches(t, s.pod) {
					return framework.NewStatus(framework.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
				}
			}
		}
	}
	return nil
}

func anyPodMatches(m *framework.MatchMemo, t *framework.AffinityTerm, ni *framework.NodeInfo) bool {
	for _, p := range ni.Pods {
		if m.Matches(t, p) {
			return true
		}
	}
	return false
}

func satisfiesAffinity(s *preFilterState, nodeLabels map[string]string) bool {
	podsExist := true
	for _, t := range s.pod.RequiredAffinityTerms {
		v, ok := nodeLabels[t.TopologyKey]
		if !ok {
			return false // a node must have every topology label
		}
		if s.affinity[topologyPair{t.TopologyKey, v}] <= 0 {
			podsExist = false
		}
	}
	if podsExist {
		return true
	}
	// The first pod of a group with affinity to itself: allowed if no pod
	// matches anywhere yet and it matches its own terms.
	return len(s.affinity) == 0 && matchesAll(s.matches, s.pod.RequiredAffinityTerms, s.pod)
}

type preScoreState struct {
	scores map[string]map[string]int64 // topology key → value → score
}

// PreScore adds up, per domain, the weights of preferred terms (the
// pod's, and the running pods' towards it).
func (*InterPodAffinity) PreScore(state *framework.CycleState, pod *corev1.Pod, _ []*framework.NodeInfo, snap framework.SharedLister) *framework.Status {
	pi := state.PodInfoOf(pod)
	hasPreferred := len(pi.PreferredAffinityTerms)+len(pi.PreferredAntiAffinityTerms) > 0
	nodes := snap.HavePodsWithAffinityList()
	if hasPreferred {
		nodes = snap.List()
	}
	scores := map[string]map[string]int64{}
	add := func(labels map[string]string, key string, w int64) {
		v, ok := labels[key]
		if !ok || w == 0 {
			return
		}
		if scores[key] == nil {
			scores[key] = map[string]int64{}
		}
		scores[key][v] += w
	}
	m := framework.NewMatchMemo(snap.NamespaceLabels)
	for _, ni := range nodes {
		nodeLabels := ni.Node().Labels
		existingPods := ni.PodsWithAffinity
		if hasPreferred {
			existingPods = ni.Pods
		}
		for _, ex := range existingPods {
			for i := range pi.PreferredAffinityTerms {
				if t := &pi.PreferredAffinityTerms[i]; m.Matches(&t.AffinityTerm, ex) {
					add(nodeLabels, t.TopologyKey, int64(t.Weight))
				}
			}
			for i := range pi.PreferredAntiAffinityTerms {
				if t := &pi.PreferredAntiAffinityTerms[i]; m.Matches(&t.AffinityTerm, ex) {
					add(nodeLabels, t.TopologyKey, -int64(t.Weight))
				}
			}
			for i := range ex.RequiredAffinityTerms {
				if t := &ex.RequiredAffinityTerms[i]; m.Matches(t, pi) {
					add(nodeLabels, t.TopologyKey, HardPodAffinityWeight)
				}
			}
			for i := range ex.PreferredAffinityTerms {
				if t := &ex.PreferredAffinityTerms[i]; m.Matches(&t.AffinityTerm, pi) {
					add(nodeLabels, t.TopologyKey, int64(t.Weight))
				}
			}
			for i := range ex.PreferredAntiAffinityTerms {
				if t := &ex.PreferredAntiAffinityTerms[i]; m.Matches(&t.AffinityTerm, pi) {
					add(nodeLabels, t.TopologyKey, -int64(t.Weight))
				}
			}
		}
	}
	if len(scores) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preScoreKey, &preScoreState{scores: scores})
	return nil
}

// Score sums the scores of the node's domains.
func (*InterPodAffinity) Score(state *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	s, err := framework.ReadAs[*preScoreState](state, preScoreKey)
	if err != nil {
		return 0, framework.AsStatus(err)
	}
	var sum int64
	for key, values := range s.scores {
		if v, ok := ni.Node().Labels[key]; ok {
			sum += values[v]
		}
	}
	return sum, nil
}

// NormalizeScore maps the lowest score to 0 and the highest to 100.
func (*InterPodAffinity) NormalizeScore(_ *framework.CycleState, _ *corev1.Pod, scores []framework.NodeScore) *framework.Status {
	if len(scores) == 0 {
		return nil
	}
	lo, hi := scores[0].Score, scores[0].Score
	for _, s := range scores {
		lo, hi = min(lo, s.Score), max(hi, s.Score)
	}
	for i := range scores {
		if hi > lo {
			scores[i].Score = framework.MaxNodeScore * (scores[i].Score - lo) / (hi - lo)
		} else {
			scores[i].Score = 0
		}
	}
	return nil
}
