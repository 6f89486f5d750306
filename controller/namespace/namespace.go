// Package namespace empties a namespace that is being deleted, then
// removes its "kubernetes" finalizer so that the apiserver deletes it:
//
//	ns deleted ─▶ phase Terminating, spec.finalizers [kubernetes]
//	   ─▶ DELETE every namespaced collection in it
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
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"minik/client"
	"minik/controller/framework"
)

// Name is the controller's name.
const Name = "namespace"

// ContentResources are the namespaced collections a namespace deletion
// empties, in the order it deletes them.
var ContentResources = []client.Resource{
	client.Deployments, client.DaemonSets, client.ReplicaSets, client.ReplicationControllers, client.Jobs,
	client.Pods, client.PodDisruptionBudgets, client.ConfigMaps, client.Secrets, client.ServiceAccounts,
	client.Leases, client.Events, client.RoleBindings, client.Roles, client.HorizontalPodAutoscalers,
}

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
	resources := ContentResources
	// The namespaced custom resources too, as upstream's namespace
	// controller deletes whatever discovery lists.
	var crds apiextv1.CustomResourceDefinitionList
	if err := nc.c.Do(ctx, "GET", framework.CRDs.Path("", ""), nil, nil, &crds); err != nil {
		return rem, fmt.Errorf("list customresourcedefinitions: %w", err)
	}
	for i := range crds.Items {
		if cr, ok := framework.ServedCustomResource(&crds.Items[i]); ok && cr.API.Namespaced {
			resources = append(slices.Clone(resources), cr.API)
		}
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
