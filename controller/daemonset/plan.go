// Package daemonset runs one pod of a DaemonSet on every eligible node:
//
//	ds/node/pod event ─▶ queue(ds) ─▶ Plan(ds, nodes, its pods by node, hash, now)
//	   eligible = nodeSelector ∧ required node affinity ∧ NoSchedule/NoExecute taints tolerated
//	   eligible, no pod        ─▶ create (pinned by node affinity metadata.name=NODE)
//	   not eligible any more   ─▶ delete (only an untolerated NoExecute taint evicts a running one)
//	   extra or failed pods    ─▶ delete
//	   (only when none of the above is needed, one RollingUpdate step:)
//	   maxUnavailable          ─▶ delete old-hash pods, at most maxUnavailable nodes down at once
//	   maxSurge                ─▶ start the updated pod beside the old one on up to maxSurge nodes;
//	                              delete the old one once the new is available (minReadySeconds)
//	   ─▶ status (desired/current/misscheduled/ready/available/updated; a node's oldest pod counts)
//	─▶ actions ManagePods (creates and deletes together; none while expectations are
//	   unmet), UpdateStatus (if it changed) ─▶ framework.ExecuteAll(apiSink): expectations,
//	   creates in parallel (SuccessfulCreate / FailedCreate), deletes, status
//	(before the plan, the driver keeps the ControllerRevisions: syncRevisions)
package daemonset

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"minik/controller/framework"
	"minik/internal/nodeaffinity"
)

// RevisionHashLabel marks a DaemonSet pod with its template's hash.
const RevisionHashLabel = appsv1.DefaultDaemonSetUniqueLabelKey // controller-revision-hash

// DefaultTolerations are what Kubernetes adds to every DaemonSet pod, so
// that daemons keep running on troubled and cordoned nodes.
func DefaultTolerations(hostNetwork bool) []corev1.Toleration {
	out := []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	if hostNetwork {
		out = append(out, corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	return out
}

// withDefaultTolerations returns tols plus the defaults it lacks.
func withDefaultTolerations(spec *corev1.PodSpec) []corev1.Toleration {
	out := append([]corev1.Toleration(nil), spec.Tolerations...)
	for _, d := range DefaultTolerations(spec.HostNetwork) {
		has := false
		for _, t := range out {
			if t.Key == d.Key && t.Effect == d.Effect && t.Operator == d.Operator {
				has = true
				break
			}
		}
		if !has {
			out = append(out, d)
		}
	}
	return out
}

// Eligibility of one node.
func eligibility(ds *appsv1.DaemonSet, node *corev1.Node) (shouldRun, shouldContinue bool) {
	spec := &ds.Spec.Template.Spec
	if match, _ := nodeaffinity.NewRequiredNodeAffinity(spec.NodeSelector, spec.Affinity).Match(node); !match {
		return false, false
	}
	tols := withDefaultTolerations(spec)
	if untolerated(tols, node.Spec.Taints, corev1.TaintEffectNoExecute) {
		return false, false
	}
	return !untolerated(tols, node.Spec.Taints, corev1.TaintEffectNoSchedule), true
}

// untolerated reports whether a taint with effect is not tolerated.
func untolerated(tols []corev1.Toleration, taints []corev1.Taint, effect corev1.TaintEffect) bool {
	_, found := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), taints, tols, func(t *corev1.Taint) bool {
		return t.Effect == effect
	}, false)
	return found
}

// ActionType says what an Action does.
type ActionType string

const (
	// ManagePods creates a pod on each node of CreateOn and deletes Pods,
	// all at once: the expectations cover them together.
	ManagePods ActionType = "ManagePods"
	// UpdateStatus writes Status.
	UpdateStatus ActionType = "UpdateStatus"
)

// Action is one write of a sync.
type Action struct {
	Type ActionType
	// CreateOn lists the nodes that need a pod.
	CreateOn []string
	// Pods are the pods to delete.
	Pods   []*corev1.Pod
	Status appsv1.DaemonSetStatus
}

// String names the action by its type and target, for errors and tests.
func (a Action) String() string {
	if a.Type == ManagePods {
		names := make([]string, len(a.Pods))
		for i, p := range a.Pods {
			names[i] = p.Name
		}
		return fmt.Sprintf("%s create on [%s] delete [%s]", a.Type, strings.Join(a.CreateOn, ","), strings.Join(names, ","))
	}
	return fmt.Sprintf("%s desired=%d updated=%d", a.Type, a.Status.DesiredNumberScheduled, a.Status.UpdatedNumberScheduled)
}

// Output is the plan of one sync; RequeueAfter is when a ready pod
// becomes available.
type Output = framework.Output[Action]

// Plan plans ds over nodes; podsByNode are its pods keyed by the node
// they are on (or pinned to). As in Kubernetes, a sync first makes every
// node run the right number of pods (the manage step); only when that has
// nothing to do does it take one step of a RollingUpdate. With
// unsatisfied expectations it creates and deletes nothing (its pods may
// be stale) but still writes the status.
func Plan(ds *appsv1.DaemonSet, nodes []*corev1.Node, podsByNode map[string][]*corev1.Pod, hash string, expectationsSatisfied bool, now time.Time) Output {
	var plan struct {
		createOn []string
		delete   []*corev1.Pod
	}
	st := appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, CollisionCount: ds.Status.CollisionCount,
		Conditions: ds.Status.Conditions}
	minReady := ds.Spec.MinReadySeconds
	surge := allowsSurge(ds)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	// running holds the pods of the nodes the DaemonSet may stay on,
	// oldest first, for the rolling update.
	running := map[string][]*corev1.Pod{}
	shouldRunOn := map[string]bool{}
	for _, node := range nodes {
		shouldRun, shouldContinue := eligibility(ds, node)
		shouldRunOn[node.Name] = shouldRun
		var active []*corev1.Pod
		for _, p := range podsByNode[node.Name] {
			switch {
			case p.DeletionTimestamp != nil:
			case p.Status.Phase == corev1.PodFailed:
				plan.delete = append(plan.delete, p) // replaced on a later sync
			default:
				active = append(active, p)
			}
		}
		sort.SliceStable(active, func(i, j int) bool { return olderPod(active[i], active[j]) })
		if shouldRun {
			st.DesiredNumberScheduled++
		}
		switch {
		case !shouldContinue:
			plan.delete = append(plan.delete, active...)
			if len(active) > 0 {
				st.NumberMisscheduled++
			}
			continue
		case len(active) == 0:
			if shouldRun {
				plan.createOn = append(plan.createOn, node.Name)
			}
			continue
		}
		running[node.Name] = active
		plan.delete = append(plan.delete, extraPods(active, hash, surge, minReady, now)...)
		if !shouldRun {
			st.NumberMisscheduled++
			continue
		}
		// The node's oldest pod speaks for it, as in Kubernetes.
		p := active[0]
		st.CurrentNumberScheduled++
		if framework.IsPodReady(p) {
			st.NumberReady++
		}
		if framework.IsPodAvailable(p, minReady, now) {
			st.NumberAvailable++
		}
		if p.Labels[RevisionHashLabel] == hash {
			st.UpdatedNumberScheduled++
		}
	}
	st.NumberUnavailable = max(0, st.DesiredNumberScheduled-st.NumberAvailable)

	// Pods follow nodes: those of nodes that left go too.
	known := map[string]bool{}
	for _, n := range nodes {
		known[n.Name] = true
	}
	var all []*corev1.Pod
	for node, ps := range podsByNode {
		all = append(all, ps...)
		if !known[node] {
			for _, p := range ps {
				if p.DeletionTimestamp == nil {
					plan.delete = append(plan.delete, p)
				}
			}
		}
	}

	if len(plan.createOn) == 0 && len(plan.delete) == 0 && ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
		desired := int(st.DesiredNumberScheduled)
		maxSurge, maxUnavailable := surgeCount(ds, desired), unavailableCount(ds, desired)
		if desired > 0 && maxSurge == 0 && maxUnavailable == 0 {
			// Validation forbids it; obey the default rather than stall.
			maxUnavailable = 1
		}
		if surge {
			plan.createOn, plan.delete = surgeStep(running, shouldRunOn, hash, maxSurge, desired, minReady, now)
		} else {
			plan.delete = unavailableStep(running, hash, maxUnavailable, minReady, now)
		}
	}
	var out Output
	if expectationsSatisfied && len(plan.createOn)+len(plan.delete) > 0 {
		out.Actions = append(out.Actions, Action{Type: ManagePods, CreateOn: plan.createOn, Pods: plan.delete})
	}
	if statusChanged(ds.Status, st) {
		out.Actions = append(out.Actions, Action{Type: UpdateStatus, Status: st})
	}
	out.RequeueAfter = framework.NextAvailableIn(all, minReady, now)
	return out
}

// statusChanged reports whether the counts the plan computes differ
// from the object's.
func statusChanged(cur, st appsv1.DaemonSetStatus) bool {
	return st.DesiredNumberScheduled != cur.DesiredNumberScheduled || st.CurrentNumberScheduled != cur.CurrentNumberScheduled ||
		st.NumberMisscheduled != cur.NumberMisscheduled || st.NumberReady != cur.NumberReady ||
		st.UpdatedNumberScheduled != cur.UpdatedNumberScheduled || st.NumberAvailable != cur.NumberAvailable ||
		st.NumberUnavailable != cur.NumberUnavailable || st.ObservedGeneration != cur.ObservedGeneration
}

// olderPod orders a node's pods oldest first, as Kubernetes keeps the
// oldest: by creation, running before pending on a tie, then by name.
func olderPod(a, b *corev1.Pod) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if ra, rb := a.Status.Phase == corev1.PodRunning, b.Status.Phase == corev1.PodRunning; ra != rb {
		return ra
	}
	return a.Name < b.Name
}

// extraPods returns the pods a node has too many of (active, oldest
// first). Without surge the oldest pod stays. With surge a node may run
// one old and one updated pod: the oldest of each stay while the new one
// is not yet available and the old one still ready; any other goes.
func extraPods(active []*corev1.Pod, hash string, surge bool, minReady int32, now time.Time) []*corev1.Pod {
	if len(active) <= 1 {
		return nil
	}
	if !surge {
		return active[1:]
	}
	var extra []*corev1.Pod
	var oldestNew, oldestOld *corev1.Pod
	for _, p := range active {
		switch {
		case p.Labels[RevisionHashLabel] == hash && oldestNew == nil:
			oldestNew = p
		case p.Labels[RevisionHashLabel] != hash && oldestOld == nil:
			oldestOld = p
		default:
			extra = append(extra, p)
		}
	}
	if oldestNew != nil && oldestOld != nil &&
		(!framework.IsPodReady(oldestOld) || framework.IsPodAvailable(oldestNew, minReady, now)) {
		extra = append(extra, oldestOld)
	}
	return extra
}

// updatedAndOld returns a node's updated and old pod, or ok=false when it
// has more than one of either (the manage step cleans that up first).
func updatedAndOld(pods []*corev1.Pod, hash string) (updated, old *corev1.Pod, ok bool) {
	for _, p := range pods {
		if p.Labels[RevisionHashLabel] == hash {
			if updated != nil {
				return nil, nil, false
			}
			updated = p
		} else {
			if old != nil {
				return nil, nil, false
			}
			old = p
		}
	}
	return updated, old, true
}

// unavailableStep is a RollingUpdate step without surge: it deletes old
// pods (the manage step then creates their replacements) while fewer than
// maxUnavailable nodes are without an available pod; old pods that are
// not available anyway always go.
func unavailableStep(running map[string][]*corev1.Pod, hash string, maxUnavailable int, minReady int32, now time.Time) []*corev1.Pod {
	var replace, candidates []*corev1.Pod
	unavailable := 0
	for _, node := range slices.Sorted(maps.Keys(running)) {
		updated, old, ok := updatedAndOld(running[node], hash)
		switch {
		case !ok || updated != nil && old != nil:
			unavailable++
		case updated != nil:
			if !framework.IsPodAvailable(updated, minReady, now) {
				unavailable++
			}
		case !framework.IsPodAvailable(old, minReady, now):
			replace = append(replace, old)
			unavailable++
		case unavailable < maxUnavailable:
			candidates = append(candidates, old)
		}
	}
	budget := min(max(0, maxUnavailable-unavailable), len(candidates))
	return append(replace, candidates[:budget]...)
}

// surgeStep is a RollingUpdate step with maxSurge: it starts an updated
// pod next to an old one on up to maxSurge nodes at a time (at once where
// the old pod is not available anyway), and deletes an old pod once the
// updated pod beside it is available, so the node never goes without.
// Old pods on nodes the DaemonSet should no longer run on go only while
// more pods are available than desired.
func surgeStep(running map[string][]*corev1.Pod, shouldRun map[string]bool, hash string, maxSurge, desired int, minReady int32, now time.Time) (createOn []string, del []*corev1.Pod) {
	var candidates, offNodes []string
	var offPods []*corev1.Pod
	surging, available := 0, 0
	for _, node := range slices.Sorted(maps.Keys(running)) {
		updated, old, ok := updatedAndOld(running[node], hash)
		if !ok {
			surging++
			continue
		}
		if old != nil && framework.IsPodAvailable(old, minReady, now) || old == nil && framework.IsPodAvailable(updated, minReady, now) {
			available++
		}
		switch {
		case old == nil:
			// Up to date; the manage step looks after it.
		case updated == nil && !framework.IsPodAvailable(old, minReady, now):
			if !shouldRun[node] {
				del = append(del, old)
				continue
			}
			createOn = append(createOn, node)
		case updated == nil:
			if !shouldRun[node] {
				offNodes = append(offNodes, node)
				offPods = append(offPods, old)
				continue
			}
			if surging < maxSurge {
				candidates = append(candidates, node)
			}
		case !framework.IsPodAvailable(updated, minReady, now):
			surging++
		default:
			del = append(del, old)
		}
	}
	if spare := available - desired; spare > 0 {
		del = append(del, offPods[:min(spare, len(offPods))]...)
	}
	budget := min(max(0, maxSurge-surging), len(candidates))
	return append(createOn, candidates[:budget]...), del
}

// surgeCount is the RollingUpdate's maxSurge scaled to desired nodes
// (percentages round up); 0 without one.
func surgeCount(ds *appsv1.DaemonSet, desired int) int {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType || ru == nil || ru.MaxSurge == nil {
		return 0
	}
	v, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, desired, true)
	if err != nil {
		return 0
	}
	return v
}

// unavailableCount is the RollingUpdate's maxUnavailable scaled the same
// way; 0 without one.
func unavailableCount(ds *appsv1.DaemonSet, desired int) int {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru == nil || ru.MaxUnavailable == nil {
		return 0
	}
	v, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, desired, true)
	if err != nil {
		return 0
	}
	return v
}

// allowsSurge says whether ds rolls out by surging; as in Kubernetes,
// any non-zero maxSurge does, even a percentage of few nodes.
func allowsSurge(ds *appsv1.DaemonSet) bool {
	return surgeCount(ds, 1) > 0
}

// PinnedNode returns the node a DaemonSet pod runs on or is pinned to by
// its node affinity (matchFields metadata.name).
func PinnedNode(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range t.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// NewPod returns ds's pod for node: its template with the hash label, the
// default tolerations, and a required node affinity for node alone (which
// replaces any matchFields of the template, as in Kubernetes).
func NewPod(ds *appsv1.DaemonSet, node, hash string) *corev1.Pod {
	t := ds.Spec.Template.DeepCopy()
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[RevisionHashLabel] = hash
	spec := t.Spec
	spec.Tolerations = withDefaultTolerations(&spec)
	pin := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{pin}}}}
	} else {
		terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		for i := range terms {
			terms[i].MatchFields = []corev1.NodeSelectorRequirement{pin}
		}
	}
	pod := &corev1.Pod{Spec: spec}
	pod.GenerateName = ds.Name + "-"
	pod.Namespace = ds.Namespace
	pod.Labels = t.Labels
	pod.Annotations = t.Annotations
	pod.OwnerReferences = append(pod.OwnerReferences, framework.ControllerRef(ds, "apps/v1", "DaemonSet"))
	return pod
}
