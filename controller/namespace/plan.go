package namespace

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/controller/framework"
)

// finalizerEstimate is how long objects with finalizers are expected to
// take to go, as upstream's finalizerEstimateSeconds.
const finalizerEstimate = 15 * time.Second

// ActionType says what an Action does.
type ActionType string

// The writes of a sync.
const (
	// DeleteCollection deletes every object of Resource in the namespace.
	DeleteCollection ActionType = "DeleteCollection"
	// UpdateStatus writes the namespace's conditions: what is left.
	UpdateStatus ActionType = "UpdateStatus"
	// Finalize removes the "kubernetes" finalizer (PUT .../finalize),
	// which lets the apiserver delete the namespace.
	Finalize ActionType = "Finalize"
)

// Action is one write for a Terminating namespace.
type Action struct {
	Type ActionType
	// Namespace is the namespace (for UpdateStatus and Finalize, the copy
	// to write).
	Namespace *corev1.Namespace
	// Resource is the collection DeleteCollection empties.
	Resource client.Resource
}

// String names the action, its namespace and collection, as
// "DeleteCollection doomed deployments.apps".
func (a Action) String() string {
	if a.Type == DeleteCollection {
		return string(a.Type) + " " + a.Namespace.Name + " " + a.Resource.GroupResource().String()
	}
	return string(a.Type) + " " + a.Namespace.Name
}

// Output is one step for a namespace; while content is left, it has
// RequeueAfter or, when nothing left gives an estimate, Backoff.
type Output = framework.Output[Action]

// Observed is what the driver read from the apiserver for a namespace.
type Observed struct {
	// Collections are what discovery lists to empty, workloads first
	// (ContentResources).
	Collections []client.Resource
	// Remaining is what the lists found left after the deletes; nil
	// before them.
	Remaining *Remaining
}

// Finalizing reports whether ns is being deleted and still waits for
// this controller (its "kubernetes" finalizer).
func Finalizing(ns *corev1.Namespace) bool {
	return ns != nil && ns.DeletionTimestamp != nil && slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
}

// Plan is one step of a namespace's deletion. A sync steps twice: the
// deletes of every collection, then, once the lists counted what is
// left, either the conditions (written if they changed) and a look again
// (Remaining.estimate), or the finalize.
func Plan(ns *corev1.Namespace, obs Observed, now time.Time) Output {
	var out Output
	if !Finalizing(ns) {
		return out
	}
	if obs.Remaining == nil {
		for _, r := range obs.Collections {
			out.Actions = append(out.Actions, Action{Type: DeleteCollection, Namespace: ns, Resource: r})
		}
		return out
	}
	cp := ns.DeepCopy()
	if !obs.Remaining.Empty() {
		// Written only when it changed: a namespace waiting for its pods
		// is looked at again and again.
		if conds := Conditions(ns.Status.Conditions, *obs.Remaining, now); !apiequality.Semantic.DeepEqual(conds, ns.Status.Conditions) {
			cp.Status.Conditions = conds
			out.Actions = append(out.Actions, Action{Type: UpdateStatus, Namespace: cp})
		}
		// As upstream's: half the estimate plus a second, or without one
		// the queue's backoff (upstream's sync fails with "unexpected
		// items still remain"), from 5ms up to a minute.
		if estimate := obs.Remaining.estimate(now.Sub(ns.DeletionTimestamp.Time)); estimate > 0 {
			out.RequeueAfter = (estimate/time.Second/2)*time.Second + time.Second
		} else {
			out.Backoff = true
		}
		return out
	}
	cp.Spec.Finalizers = slices.DeleteFunc(cp.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
	cp.APIVersion, cp.Kind = "v1", "Namespace"
	out.Actions = append(out.Actions, Action{Type: Finalize, Namespace: cp})
	return out
}

// Remaining is what a namespace still holds after a deletion pass.
type Remaining struct {
	// Counts has the number of objects left per resource ("pods").
	Counts map[string]int
	// Finalizers has the number of objects left per finalizer name.
	Finalizers map[string]int
	// PodGrace is the longest grace period the pods left were deleted
	// with (metadata.deletionGracePeriodSeconds), 0 if none.
	PodGrace time.Duration
}

// estimate is how long r should take to go, terminating being how long
// ago the namespace's deletion began: as upstream's, the longest grace
// period of the pods left while that long has not passed since the
// deletion, at least finalizerEstimate while objects with finalizers
// are left, and otherwise 0 (no estimate).
func (r Remaining) estimate(terminating time.Duration) time.Duration {
	var estimate time.Duration
	if terminating < r.PodGrace {
		estimate = r.PodGrace
	}
	for _, n := range r.Finalizers {
		if n > 0 {
			estimate = max(estimate, finalizerEstimate)
		}
	}
	return estimate
}

// Empty reports whether nothing is left.
func (r Remaining) Empty() bool {
	for _, n := range r.Counts {
		if n > 0 {
			return false
		}
	}
	return true
}

// Conditions returns the status conditions Kubernetes reports for r,
// NamespaceContentRemaining and NamespaceFinalizersRemaining, in place of
// those in prev (the namespace's), whose other conditions are kept. A
// condition whose status did not change keeps its lastTransitionTime.
func Conditions(prev []corev1.NamespaceCondition, r Remaining, now time.Time) []corev1.NamespaceCondition {
	t := metav1.NewTime(now)
	content := corev1.NamespaceCondition{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionFalse,
		Reason: "ContentRemoved", Message: "All content successfully removed", LastTransitionTime: t}
	if msg := summarize(r.Counts, "%s has %d resource instances"); msg != "" {
		content.Status, content.Reason, content.Message = corev1.ConditionTrue, "SomeResourcesRemain", "Some resources are remaining: "+msg
	}
	fins := corev1.NamespaceCondition{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionFalse,
		Reason: "ContentHasNoFinalizers", Message: "All content-preserving finalizers finished", LastTransitionTime: t}
	if msg := summarize(r.Finalizers, "%s in %d resource instances"); msg != "" {
		fins.Status, fins.Reason, fins.Message = corev1.ConditionTrue, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: "+msg
	}
	out := slices.Clone(prev)
	for _, c := range []corev1.NamespaceCondition{content, fins} {
		i := slices.IndexFunc(out, func(o corev1.NamespaceCondition) bool { return o.Type == c.Type })
		if i < 0 {
			out = append(out, c)
			continue
		}
		if out[i].Status == c.Status {
			c.LastTransitionTime = out[i].LastTransitionTime
		}
		out[i] = c
	}
	return out
}

// summarize renders counts as Kubernetes does, e.g. "pods has 2 resource
// instances, secrets has 1 resource instances", sorted.
func summarize(counts map[string]int, format string) string {
	var parts []string
	for k, n := range counts {
		if n > 0 {
			parts = append(parts, fmt.Sprintf(format, k, n))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
