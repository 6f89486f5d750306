// Package defaultpreemption is the PostFilter that makes room for a pod
// that fits nowhere, by proposing lower-priority pods to delete.
//
// For each node that rejected the pod for a reason removing pods can fix:
//  1. take away every pod of lower priority;
//  2. if the pod now fits, give back as many of them as still lets it
//     fit, most important first (they are reprieved), and those protected
//     by a PodDisruptionBudget before the others;
//  3. the rest are the node's victims.
//
// It stops once NumCandidates nodes qualify. The chosen node has, in
// order: the fewest PodDisruptionBudget violations, the lowest
// highest-victim priority, the lowest sum of victim priorities, the fewest
// victims, the latest start of the earliest-started highest-priority
// victim (as kube-scheduler's GetEarliestPodStartTime). The plugin
// only proposes; the scheduler sets status.nominatedNodeName and deletes
// the victims.
package defaultpreemption

import (
	"cmp"
	"hash/fnv"
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"minik/scheduler/framework"
	"minik/scheduler/plugins/interpodaffinity"
	"minik/scheduler/plugins/podtopologyspread"
)

const (
	// Name is the plugin's name in the registry.
	Name = "DefaultPreemption"

	// ErrReasonNoVictims: removing every lower-priority pod would not help.
	ErrReasonNoVictims = "No preemption victims found for incoming pod"
	// ErrReasonNotHelpful: the node rejected the pod for a reason that
	// removing pods cannot fix (a taint, a label...).
	ErrReasonNotHelpful = "Preemption is not helpful for scheduling"
	// ErrReasonPolicyNever: the pod's PriorityClass says preemptionPolicy Never.
	ErrReasonPolicyNever = "not eligible due to preemptionPolicy=Never."
	// ErrReasonTerminatingVictims: victims of an earlier preemption are
	// still terminating on the nominated node; wait for them.
	ErrReasonTerminatingVictims = "not eligible due to a terminating pod on the nominated node."
)

// DefaultPreemption is a PostFilter plugin.
type DefaultPreemption struct{}

var _ framework.PostFilterPlugin = &DefaultPreemption{}

// New returns the plugin.
func New() *DefaultPreemption { return &DefaultPreemption{} }

// Name implements framework.Plugin.
func (*DefaultPreemption) Name() string { return Name }

// candidate is a node and the pods to delete there.
type candidate struct {
	node    string
	victims []*corev1.Pod
	// pdbViolations counts victims whose deletion breaks a
	// PodDisruptionBudget.
	pdbViolations int
}

// PostFilter implements framework.PostFilterPlugin.
func (pl *DefaultPreemption) PostFilter(state *framework.CycleState, pod *corev1.Pod, fwk *framework.Framework, snap framework.SharedLister, statuses framework.NodeToStatus) (*framework.PostFilterResult, *framework.Status) {
	if msg, ok := eligible(pod, snap); !ok {
		return nil, framework.NewStatus(framework.Unschedulable, "preemption: "+msg)
	}
	nodes := snap.List()
	reasons := framework.NodeToStatus{}
	var candidates []candidate
	want := NumCandidates(len(nodes))
	// Start at an offset derived from the pod, so that preemptors spread
	// over the nodes, reproducibly.
	h := fnv.New32a()
	h.Write([]byte(pod.UID))
	start := int(h.Sum32() % uint32(max(len(nodes), 1)))
	budgets := parseBudgets(snap.PodDisruptionBudgets())
	for i := range nodes {
		if len(candidates) >= want {
			break
		}
		ni := nodes[(start+i)%len(nodes)]
		name := ni.Node().Name
		if st, rejected := statuses[name]; !rejected || st.Code() == framework.UnschedulableAndUnresolvable {
			reasons[name] = framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNotHelpful)
			continue
		}
		victims, violations, ok := selectVictims(state, pod, fwk, snap, ni, budgets)
		if !ok {
			reasons[name] = framework.NewStatus(framework.Unschedulable, ErrReasonNoVictims)
			continue
		}
		candidates = append(candidates, candidate{node: name, victims: victims, pdbViolations: violations})
	}
	if len(candidates) == 0 {
		return nil, framework.NewStatus(framework.Unschedulable, "preemption: "+framework.NodesAvailableMessage(len(nodes), reasons))
	}
	best := pickOne(candidates)
	return &framework.PostFilterResult{NominatedNodeName: best.node, Victims: best.victims}, nil
}

// NumCandidates is how many candidate nodes preemption looks for before
// choosing among them: 10% of the nodes, at least 100 (as kube-scheduler's
// minCandidateNodesPercentage and minCandidateNodesAbsolute).
func NumCandidates(numNodes int) int {
	return min(numNodes, max(numNodes/10, 100))
}

// eligible says whether pod may preempt at all.
func eligible(pod *corev1.Pod, snap framework.SharedLister) (string, bool) {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == corev1.PreemptNever {
		return ErrReasonPolicyNever, false
	}
	if len(TerminatingOnNominatedNode(pod, snap, nil)) > 0 {
		return ErrReasonTerminatingVictims, false
	}
	return "", true
}

// TerminatingOnNominatedNode returns the pods of lower priority than pod
// on the node it is nominated to that a preemption is deleting: those
// terminating with the DisruptionTarget condition the scheduler gives its
// victims (as kube-scheduler checks), and those beingDeleted reports (nil:
// none), whose deletion the caller has under way but not yet seen. While
// there are any, pod may not preempt again: their going makes its room.
func TerminatingOnNominatedNode(pod *corev1.Pod, snap framework.SharedLister, beingDeleted func(types.UID) bool) []*corev1.Pod {
	nom := pod.Status.NominatedNodeName
	if nom == "" {
		return nil
	}
	ni := snap.Get(nom)
	if ni == nil {
		return nil
	}
	prio := corev1helpers.PodPriority(pod)
	var out []*corev1.Pod
	for _, p := range ni.Pods {
		if corev1helpers.PodPriority(p.Pod) < prio && (terminatingByPreemption(p.Pod) || beingDeleted != nil && beingDeleted(p.Pod.UID)) {
			out = append(out, p.Pod)
		}
	}
	return out
}

func terminatingByPreemption(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp == nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget {
			return c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonPreemptionByScheduler
		}
	}
	return false
}

// byImportance orders pods most important first: higher priority, then
// started earlier.
func byImportance(a, b *framework.PodInfo) int {
	pa, pb := corev1helpers.PodPriority(a.Pod), corev1helpers.PodPriority(b.Pod)
	if pa != pb {
		return cmp.Compare(pb, pa)
	}
	return startTime(a.Pod).Compare(startTime(b.Pod))
}

// startTime is when the pod started, or was created if it has not.
func startTime(p *corev1.Pod) time.Time {
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	return p.CreationTimestamp.Time
}

// fits runs the filters for pod on a changed copy of a node, which holds
// the pods nominated there (Framework.AddNominated). When the pod has
// rules about other pods (affinity, spreading), their PreFilter state
// depends on where pods are, so it is computed again against a view of
// the cluster with this node replaced; else (samePreFilter) the cycle's
// state serves.
func fits(state *framework.CycleState, samePreFilter bool, pod *corev1.Pod, fwk *framework.Framework, snap framework.SharedLister, ni *framework.NodeInfo) bool {
	if samePreFilter {
		return fwk.RunFilter(state, pod, ni).IsSuccess()
	}
	view := &replacedNode{SharedLister: snap, node: ni}
	fresh := framework.NewCycleState()
	if !fwk.RunPreFilter(fresh, pod, view).IsSuccess() {
		return false
	}
	return fwk.RunFilter(fresh, pod, ni).IsSuccess()
}

// selectVictims finds the fewest, least important pods of lower priority
// whose removal lets pod fit on ni. Pods protected by a
// PodDisruptionBudget are given back first, so they are victims only when
// nothing else works; it returns how many victims break a budget.
func selectVictims(state *framework.CycleState, pod *corev1.Pod, fwk *framework.Framework, snap framework.SharedLister, ni *framework.NodeInfo, budgets budgets) ([]*corev1.Pod, int, bool) {
	prio := corev1helpers.PodPriority(pod)
	work, potential := ni.CloneWithout(func(p *framework.PodInfo) bool { return corev1helpers.PodPriority(p.Pod) < prio })
	if len(potential) == 0 {
		return nil, 0, false
	}
	fwk.AddNominated(pod, work) // once: the dry run below changes work many times
	samePreFilter := state.FilterSkipped(interpodaffinity.Name) && state.FilterSkipped(podtopologyspread.Name)
	if !fits(state, samePreFilter, pod, fwk, snap, work) {
		return nil, 0, false
	}
	slices.SortStableFunc(potential, byImportance)
	violating, nonViolating := budgets.split(potential)
	var victims []*corev1.Pod
	violations := 0
	reprieve := func(p *framework.PodInfo) bool {
		work.AddPodInfo(p) // the node's own PodInfo: nothing to compute again
		if fits(state, samePreFilter, pod, fwk, snap, work) {
			return true
		}
		work.RemovePod(p.Pod)
		victims = append(victims, p.Pod)
		return false
	}
	for _, p := range violating {
		if !reprieve(p) {
			violations++
		}
	}
	for _, p := range nonViolating {
		reprieve(p)
	}
	return victims, violations, len(victims) > 0
}

// budgets are the cluster's PodDisruptionBudgets with their selectors
// parsed, once per preemption rather than once per node tried. A budget
// with an empty or invalid selector protects nothing and is left out.
type budgets struct {
	pdbs      []*policyv1.PodDisruptionBudget
	selectors []labels.Selector
}

func parseBudgets(pdbs []*policyv1.PodDisruptionBudget) budgets {
	var b budgets
	for _, pdb := range pdbs {
		if pdb.Spec.Selector == nil {
			continue
		}
		if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err == nil && !sel.Empty() {
			b.pdbs, b.selectors = append(b.pdbs, pdb), append(b.selectors, sel)
		}
	}
	return b
}

// split separates the pods whose deletion (in this order) would take a
// budget below its allowed disruptions.
func (b budgets) split(pods []*framework.PodInfo) (violating, nonViolating []*framework.PodInfo) {
	if len(b.pdbs) == 0 {
		return nil, pods
	}
	allowed := make([]int32, len(b.pdbs))
	for i, pdb := range b.pdbs {
		allowed[i] = pdb.Status.DisruptionsAllowed
	}
	for _, p := range pods {
		broken := false
		for i, pdb := range b.pdbs {
			if pdb.Namespace != p.Pod.Namespace || !b.selectors[i].Matches(labels.Set(p.Pod.Labels)) {
				continue
			}
			if allowed[i]--; allowed[i] < 0 {
				broken = true
			}
		}
		if broken {
			violating = append(violating, p)
		} else {
			nonViolating = append(nonViolating, p)
		}
	}
	return violating, nonViolating
}

// pickOne chooses among candidates, by the rules in the package comment.
func pickOne(cs []candidate) candidate {
	key := func(c candidate) (violations int, highest int32, sum int64, n int, earliest time.Time) {
		highest = math.MinInt32
		for _, v := range c.victims {
			p := corev1helpers.PodPriority(v)
			// Offset so that negative priorities still add up sensibly.
			sum += int64(p) + math.MaxInt32 + 1
			highest = max(highest, p)
		}
		for _, v := range c.victims {
			if corev1helpers.PodPriority(v) == highest && (earliest.IsZero() || startTime(v).Before(earliest)) {
				earliest = startTime(v)
			}
		}
		return c.pdbViolations, highest, sum, len(c.victims), earliest
	}
	best := cs[0]
	bv, bh, bs, bn, bl := key(best)
	for _, c := range cs[1:] {
		v, h, s, n, l := key(c)
		better := false
		switch {
		case v != bv:
			better = v < bv
		case h != bh:
			better = h < bh
		case s != bs:
			better = s < bs
		case n != bn:
			better = n < bn
		default:
			better = l.After(bl)
		}
		if better {
			best, bv, bh, bs, bn, bl = c, v, h, s, n, l
		}
	}
	return best
}

// replacedNode is the snapshot with one node replaced by a changed copy.
type replacedNode struct {
	framework.SharedLister
	node *framework.NodeInfo
	list []*framework.NodeInfo
}

func (r *replacedNode) List() []*framework.NodeInfo {
	if r.list == nil {
		name := r.node.Node().Name
		for _, ni := range r.SharedLister.List() {
			if ni.Node().Name == name {
				ni = r.node
			}
			r.list = append(r.list, ni)
		}
	}
	return r.list
}

func (r *replacedNode) Get(name string) *framework.NodeInfo {
	if name == r.node.Node().Name {
		return r.node
	}
	return r.SharedLister.Get(name)
}

func (r *replacedNode) HavePodsWithAffinityList() []*framework.NodeInfo {
	return filterNodes(r.List(), func(ni *framework.NodeInfo) bool { return len(ni.PodsWithAffinity) > 0 })
}

func (r *replacedNode) HavePodsWithRequiredAntiAffinityList() []*framework.NodeInfo {
	return filterNodes(r.List(), func(ni *framework.NodeInfo) bool { return len(ni.PodsWithRequiredAntiAffinity) > 0 })
}

func filterNodes(in []*framework.NodeInfo, keep func(*framework.NodeInfo) bool) []*framework.NodeInfo {
	var out []*framework.NodeInfo
	for _, ni := range in {
		if keep(ni) {
			out = append(out, ni)
		}
	}
	return out
}
