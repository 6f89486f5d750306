// Package daemonset runs one pod of a DaemonSet on every eligible node:
//
//	ds/node/pod event ─▶ queue(ds) ─▶ Reconcile(ds, nodes, its pods by node, hash, now)
//	   eligible = nodeSelector ∧ required node affinity ∧ NoSchedule/NoExecute taints tolerated
//	   eligible, no pod        ─▶ create (pinned by node affinity metadata.name=NODE)
//	   not eligible any more   ─▶ delete (only an untolerated NoExecute taint evicts a running one)
//	   extra or failed pods    ─▶ delete
//	   RollingUpdate           ─▶ delete old-hash pods, at most maxUnavailable nodes down at once
//	   ─▶ status (desired/current/misscheduled/ready/available/updated)
package daemonset

import (
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik/controller/framework"
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
	if !framework.NodeMatchesPod(spec, node) {
		return false, false
	}
	tols := withDefaultTolerations(spec)
	if !framework.ToleratesAll(tols, node.Spec.Taints, corev1.TaintEffectNoExecute) {
		return false, false
	}
	return framework.ToleratesAll(tols, node.Spec.Taints, corev1.TaintEffectNoSchedule), true
}

// Plan is what one sync does.
type Plan struct {
	// CreateOn lists the nodes that need a pod.
	CreateOn []string
	Delete   []*corev1.Pod
	Status   appsv1.DaemonSetStatus
	// RequeueAfter is when a ready pod becomes available.
	RequeueAfter time.Duration
}

// Reconcile plans ds over nodes; podsByNode are its pods keyed by the node
// they are on (or pinned to).
func Reconcile(ds *appsv1.DaemonSet, nodes []*corev1.Node, podsByNode map[string][]*corev1.Pod, hash string, now time.Time) Plan {
	var plan Plan
	st := appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, CollisionCount: ds.Status.CollisionCount,
		Conditions: ds.Status.Conditions}
	minReady := ds.Spec.MinReadySeconds
	var oldAvailable, oldUnavailable []*corev1.Pod
	unavailableNodes := 0
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, node := range nodes {
		shouldRun, shouldContinue := eligibility(ds, node)
		var active []*corev1.Pod
		for _, p := range podsByNode[node.Name] {
			switch {
			case p.DeletionTimestamp != nil:
			case p.Status.Phase == corev1.PodFailed:
				plan.Delete = append(plan.Delete, p) // replaced on a later sync
			default:
				active = append(active, p)
			}
		}
		if shouldRun {
			st.DesiredNumberScheduled++
		}
		if !shouldContinue {
			plan.Delete = append(plan.Delete, active...)
			if len(active) > 0 {
				st.NumberMisscheduled++
			}
			continue
		}
		if len(active) == 0 {
			if shouldRun {
				plan.CreateOn = append(plan.CreateOn, node.Name)
				unavailableNodes++
			}
			continue
		}
		if !shouldRun {
			st.NumberMisscheduled++
		}
		// Keep the oldest pod; extras go.
		sort.Slice(active, func(i, j int) bool { return active[i].CreationTimestamp.Before(&active[j].CreationTimestamp) })
		plan.Delete = append(plan.Delete, active[1:]...)
		p := active[0]
		if !shouldRun {
			continue
		}
		st.CurrentNumberScheduled++
		if framework.IsPodReady(p) {
			st.NumberReady++
		}
		available := framework.IsPodAvailable(p, minReady, now)
		if available {
			st.NumberAvailable++
		} else {
			unavailableNodes++
		}
		if p.Labels[RevisionHashLabel] == hash {
			st.UpdatedNumberScheduled++
		} else if available {
			oldAvailable = append(oldAvailable, p)
		} else {
			oldUnavailable = append(oldUnavailable, p)
		}
	}
	st.NumberUnavailable = max(0, st.DesiredNumberScheduled-st.NumberAvailable)
	if ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
		maxUnavailable := 1
		if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
			if v, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, int(st.DesiredNumberScheduled), true); err == nil {
				maxUnavailable = v
			}
		}
		// Old pods that are down anyway can always go; available ones only
		// while fewer than maxUnavailable nodes are down.
		plan.Delete = append(plan.Delete, oldUnavailable...)
		budget := maxUnavailable - unavailableNodes
		for _, p := range oldAvailable {
			if budget <= 0 {
				break
			}
			plan.Delete = append(plan.Delete, p)
			budget--
		}
	}
	// Pods follow nodes: those of nodes that left go too.
	known := map[string]bool{}
	for _, n := range nodes {
		known[n.Name] = true
	}
	var ready []*corev1.Pod
	for node, ps := range podsByNode {
		ready = append(ready, ps...)
		if !known[node] {
			for _, p := range ps {
				if p.DeletionTimestamp == nil {
					plan.Delete = append(plan.Delete, p)
				}
			}
		}
	}
	plan.RequeueAfter = framework.NextAvailableIn(ready, minReady, now)
	plan.Status = st
	return plan
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
