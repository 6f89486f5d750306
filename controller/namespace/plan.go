package namespace

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/controller/framework"
)

// retryInterval is how soon a namespace with content left is looked at
// again (pods in their grace period, objects with finalizers).
const retryInterval = time.Second

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

// Output is one step for a namespace; RequeueAfter is set while content
// is left.
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
// left, either the conditions and a look again in retryInterval, or the
// finalize.
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
		cp.Status.Conditions = Conditions(*obs.Remaining, now)
		out.Actions = append(out.Actions, Action{Type: UpdateStatus, Namespace: cp})
		out.RequeueAfter = retryInterval
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

// Conditions returns the status conditions Kubernetes reports for r:
// NamespaceContentRemaining and NamespaceFinalizersRemaining.
func Conditions(r Remaining, now time.Time) []corev1.NamespaceCondition {
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
	return []corev1.NamespaceCondition{content, fins}
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
