// Package namespace empties a namespace that is being deleted, then
// removes its "kubernetes" finalizer so that the apiserver deletes it:
//
//	ns deleted ─▶ phase Terminating, spec.finalizers [kubernetes]
//	   ─▶ discovery: every namespaced resource that has deletecollection
//	   ─▶ DELETE each collection in it, workloads first
//	   ─▶ LIST them again ─▶ something left? status conditions, retry soon
//	   ─▶ nothing left ─▶ PUT namespaces/NAME/finalize without "kubernetes"
package namespace

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"minik/client"
	"minik/controller/framework"
)

// Name is the controller's name.
const Name = "namespace"

// deleteFirst are the workload collections a namespace deletion empties
// before the rest, so that their controllers stop replacing the pods
// being deleted.
var deleteFirst = []string{"deployments.apps", "statefulsets.apps", "daemonsets.apps", "replicasets.apps",
	"replicationcontrollers", "cronjobs.batch", "jobs.batch"}

// retryInterval is how soon a namespace with content left is looked at
// again (pods in their grace period, objects with finalizers).
const retryInterval = time.Second

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

// Controller is the namespace controller.
type Controller struct {
	c     *client.Client
	inf   *framework.Informers
	log   *slog.Logger
	clock clock.Clock
	queue *framework.Queue
}

// New registers the controller on inf's namespace and pod informers.
func New(c *client.Client, inf *framework.Informers, clk clock.Clock, log *slog.Logger) *Controller {
	nc := &Controller{c: c, inf: inf, log: log.With("controller", Name), clock: clk,
		queue: framework.NewQueue(framework.QueueConfig{Name: Name, Clock: clk})}
	inf.Namespaces.AddHandler(framework.Handler[corev1.Namespace](nc.queue))
	return nc
}

// Run processes namespaces until ctx ends.
func (nc *Controller) Run(ctx context.Context, workers int) {
	framework.RunWorkers(ctx, nc.queue, workers, nc.sync, func(key string, err error) {
		nc.log.Warn("sync failed", "namespace", key, "err", err)
	})
}

func (nc *Controller) sync(ctx context.Context, key string) (framework.Result, error) {
	ns, ok := nc.inf.Namespaces.Store().Get("", key)
	if !ok || ns.DeletionTimestamp == nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		return framework.Result{}, nil
	}
	rem, err := nc.deleteContent(ctx, ns.Name)
	if err != nil {
		return framework.Result{}, err
	}
	if !rem.Empty() {
		cp := ns.DeepCopy()
		cp.Status.Conditions = Conditions(rem, nc.clock.Now())
		if _, err := nc.c.Namespaces().UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
			nc.log.Debug("status update failed", "namespace", ns.Name, "err", err)
		}
		return framework.Result{RequeueAfter: retryInterval}, nil
	}
	cp := ns.DeepCopy()
	cp.Spec.Finalizers = slices.DeleteFunc(cp.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
	cp.APIVersion, cp.Kind = "v1", "Namespace"
	err = nc.c.Do(ctx, "PUT", client.Namespaces.Path("", ns.Name, "finalize"), nil, cp, nil)
	if apierrors.IsNotFound(err) {
		return framework.Result{}, nil
	}
	if err == nil {
		nc.log.Info("namespace emptied and finalized", "namespace", ns.Name)
	}
	return framework.Result{}, err
}

// deleteContent deletes every collection in ns and counts what is left.
func (nc *Controller) deleteContent(ctx context.Context, ns string) (Remaining, error) {
	rem := Remaining{Counts: map[string]int{}, Finalizers: map[string]int{}}
	resources, err := ContentResources(ctx, nc.c)
	if err != nil {
		return rem, err
	}
	for _, r := range resources {
		err := nc.c.Do(ctx, "DELETE", r.Path(ns, ""), nil, nil, nil)
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
			return rem, fmt.Errorf("delete %s: %w", r.Resource, err)
		}
		var list metav1.PartialObjectMetadataList
		if err := nc.c.Do(ctx, "GET", r.Path(ns, ""), nil, nil, &list); err != nil {
			return rem, fmt.Errorf("list %s: %w", r.Resource, err)
		}
		name := r.GroupResource().String()
		rem.Counts[name] = len(list.Items)
		for _, it := range list.Items {
			for _, f := range it.Finalizers {
				rem.Finalizers[f]++
			}
		}
	}
	return rem, nil
}

// ContentResources discovers what a namespace deletion empties, as
// upstream's namespace controller does: every namespaced resource of each
// group's preferred version (custom resources too) that can be listed and
// deleted as a collection, the workloads of deleteFirst first.
func ContentResources(ctx context.Context, c *client.Client) ([]client.Resource, error) {
	groupVersions := []string{"/api/v1"}
	var groups metav1.APIGroupList
	if err := c.Do(ctx, "GET", "/apis", nil, nil, &groups); err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	for _, g := range groups.Groups {
		groupVersions = append(groupVersions, "/apis/"+g.PreferredVersion.GroupVersion)
	}
	var out []client.Resource
	for _, path := range groupVersions {
		var list metav1.APIResourceList
		if err := c.Do(ctx, "GET", path, nil, nil, &list); err != nil {
			return nil, fmt.Errorf("discovery of %s: %w", path, err)
		}
		out = append(out, collections(&list)...)
	}
	first := func(r client.Resource) int {
		if i := slices.Index(deleteFirst, r.GroupResource().String()); i >= 0 {
			return i
		}
		return len(deleteFirst)
	}
	slices.SortStableFunc(out, func(a, b client.Resource) int { return first(a) - first(b) })
	return out, nil
}

// collections returns the namespaced resources of list (no subresources)
// whose collections can be listed and deleted.
func collections(list *metav1.APIResourceList) []client.Resource {
	gv, err := schema.ParseGroupVersion(list.GroupVersion)
	if err != nil {
		return nil
	}
	var out []client.Resource
	for _, ar := range list.APIResources {
		if !ar.Namespaced || strings.Contains(ar.Name, "/") ||
			!slices.Contains(ar.Verbs, "list") || !slices.Contains(ar.Verbs, "deletecollection") {
			continue
		}
		out = append(out, client.Resource{Group: gv.Group, Version: gv.Version, Resource: ar.Name, Namespaced: true})
	}
	return out
}
