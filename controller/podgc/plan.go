// Package podgc is the pod garbage collector, as Kubernetes' PodGC: every
// 20 s it force-deletes the pods nothing else will ever clean up.
//
//	every CheckPeriod (20s):
//	  pods, nodes (caches) ─▶ Quarantine(state, pods, nodes, now)
//	     a pod's node missing from the cache ─▶ quarantined since now
//	     quarantined ≥ QuarantineTime (40s) ─▶ due ─▶ live GET node
//	                                             404 ─▶ gone
//	                                             found ─▶ quarantined again
//	  Collect(pods, nodes, gone, threshold) ─▶ deletes, in this order:
//	     terminated (Succeeded/Failed) over the threshold: evicted, then oldest first
//	     terminating on a NotReady node with the out-of-service taint
//	     bound to a gone node (condition DisruptionTarget, DeletionByPodGC)
//	     terminating and never scheduled
//	  each delete ─▶ phase Failed unless terminal (+ condition) ─▶ DELETE, grace 0
package podgc

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Upstream's timing (kube-controller-manager's PodGC).
const (
	// DefaultCheckPeriod is how often the collector runs.
	DefaultCheckPeriod = 20 * time.Second
	// DefaultQuarantineTime is how long a node may be missing from the
	// cache before a live GET decides whether it is gone.
	DefaultQuarantineTime = 40 * time.Second
	// DefaultTerminatedPodThreshold is --terminated-pod-gc-threshold.
	DefaultTerminatedPodThreshold = 12500
)

// Reason says why a pod is collected.
type Reason string

// The reasons, in the order Collect considers them.
const (
	Terminated              Reason = "terminated pods over the threshold"
	TerminatingOutOfService Reason = "terminating on a not-ready node with the out-of-service taint"
	Orphaned                Reason = "bound to a node that no longer exists"
	TerminatingUnscheduled  Reason = "terminating and never scheduled"
)

// Delete is one pod to force-delete.
type Delete struct {
	Pod    *corev1.Pod
	Reason Reason
	// Condition is added to the pod's status (with phase Failed) before
	// the delete, unless the pod already ended; nil for none.
	Condition *corev1.PodCondition
}

// Quarantine is the collector's own state: since when each node that pods
// name has been missing from the node cache.
type Quarantine map[string]time.Time

// Step advances the quarantine: a node that pods name and the cache lacks
// enters it at now; a node back in the cache, or named by no pod, leaves
// it. It returns the new state, the nodes whose quarantine is over (to be
// confirmed gone with a live GET, in name order) and when the next one
// will be over (zero if none).
func (q Quarantine) Step(pods []*corev1.Pod, nodes map[string]*corev1.Node, now time.Time, quarantine time.Duration) (Quarantine, []string, time.Time) {
	next := Quarantine{}
	for _, p := range pods {
		n := p.Spec.NodeName
		if n == "" || nodes[n] != nil {
			continue
		}
		if _, ok := next[n]; ok {
			continue
		}
		if since, ok := q[n]; ok {
			next[n] = since
		} else {
			next[n] = now
		}
	}
	var due []string
	var wake time.Time
	for n, since := range next {
		at := since.Add(quarantine)
		if !at.After(now) {
			due = append(due, n)
		} else if wake.IsZero() || at.Before(wake) {
			wake = at
		}
	}
	slices.Sort(due)
	return next, due, wake
}

// Requarantine restarts node's quarantine at now: a live GET found it,
// so only the cache was behind.
func (q Quarantine) Requarantine(node string, now time.Time) {
	if _, ok := q[node]; ok {
		q[node] = now
	}
}

// Collect returns the pods to force-delete: pods is every pod, nodes the
// node cache by name, gone the nodes confirmed deleted, threshold the
// number of terminated pods kept (0: no limit). A pod is listed once, for
// the first reason it meets.
func Collect(pods []*corev1.Pod, nodes map[string]*corev1.Node, gone map[string]bool, threshold int) []Delete {
	var out []Delete
	seen := map[*corev1.Pod]bool{}
	add := func(p *corev1.Pod, r Reason, c *corev1.PodCondition) {
		if !seen[p] {
			seen[p] = true
			out = append(out, Delete{Pod: p, Reason: r, Condition: c})
		}
	}
	if threshold > 0 {
		var terminated []*corev1.Pod
		for _, p := range pods {
			if isTerminated(p) {
				terminated = append(terminated, p)
			}
		}
		if n := len(terminated) - threshold; n > 0 {
			slices.SortStableFunc(terminated, evictedThenOldest)
			for _, p := range terminated[:n] {
				add(p, Terminated, nil)
			}
		}
	}
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			continue
		}
		if n := nodes[p.Spec.NodeName]; n != nil && !nodeReady(n) && hasTaintKey(n, corev1.TaintNodeOutOfService) {
			add(p, TerminatingOutOfService, nil)
		}
	}
	for _, p := range pods {
		if p.Spec.NodeName != "" && gone[p.Spec.NodeName] && nodes[p.Spec.NodeName] == nil {
			add(p, Orphaned, &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
				Reason: "DeletionByPodGC", Message: "PodGC: node no longer exists"})
		}
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil && p.Spec.NodeName == "" {
			add(p, TerminatingUnscheduled, nil)
		}
	}
	return out
}

// isTerminated: the pod ended (its phase is neither Pending, Running nor
// Unknown).
func isTerminated(p *corev1.Pod) bool {
	switch p.Status.Phase {
	case corev1.PodPending, corev1.PodRunning, corev1.PodUnknown:
		return false
	}
	return true
}

// isEvicted: the kubelet's eviction manager failed the pod.
func isEvicted(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted"
}

// evictedThenOldest orders evicted pods first (they are nobody's record of
// work done), then by creation time, then by name.
func evictedThenOldest(a, b *corev1.Pod) int {
	if ea, eb := isEvicted(a), isEvicted(b); ea != eb {
		if ea {
			return -1
		}
		return 1
	}
	if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasTaintKey(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// FailedStatus returns the status to write before deleting p: phase
// Failed with c merged in, or nil when p already ended.
func FailedStatus(p *corev1.Pod, c *corev1.PodCondition, now time.Time) *corev1.PodStatus {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return nil
	}
	st := p.Status.DeepCopy()
	st.Phase = corev1.PodFailed
	if c == nil {
		return st
	}
	cond := *c
	cond.LastTransitionTime = metav1.NewTime(now)
	for i := range st.Conditions {
		if st.Conditions[i].Type == cond.Type {
			if st.Conditions[i].Status == cond.Status {
				cond.LastTransitionTime = st.Conditions[i].LastTransitionTime
			}
			st.Conditions[i] = cond
			return st
		}
	}
	st.Conditions = append(st.Conditions, cond)
	return st
}
