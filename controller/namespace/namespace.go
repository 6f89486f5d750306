// Package namespace empties a namespace that is being deleted, then
// removes its "kubernetes" finalizer so that the apiserver deletes it:
//
//	ns deleted ─▶ phase Terminating, spec.finalizers [kubernetes]
//	   ─▶ discovery: every namespaced resource that has deletecollection
//	   ─▶ Plan ─▶ DeleteCollection of each in it, workloads first
//	   ─▶ LIST them again ─▶ Plan ─▶ something left? UpdateStatus (conditions, if changed), retry soon
//	                             ─▶ nothing left? Finalize: PUT namespaces/NAME/finalize without "kubernetes"
//
// The discovery and the lists are the driver's reads; Plan is pure and
// the driver's sink performs its actions (framework.Execute).
package namespace

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// Controller is the namespace controller.
type Controller struct {
	c     *client.Client // discovery and the lists
	inf   *framework.Informers
	log   *slog.Logger
	clock clock.Clock
	queue *framework.Queue
	// sink performs the writes (apiSink; a FakeSink in tests).
	sink framework.Sink[Action]
}

// New registers the controller on inf's namespace informer; what a
// namespace holds it reads live (discovery and lists), from no informer.
func New(c *client.Client, inf *framework.Informers, clk clock.Clock, log *slog.Logger) *Controller {
	nc := &Controller{c: c, inf: inf, log: log.With("controller", Name), clock: clk,
		// Backoff (content left with no estimate) waits at most a
		// minute, as upstream's namespace controller's rate limiter.
		queue: framework.NewQueue(framework.QueueConfig{Name: Name, Clock: clk, MaxDelay: time.Minute})}
	nc.sink = apiSink{c: c, log: nc.log}
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
	ns, _ := nc.inf.Namespaces.Store().Get("", key)
	if !Finalizing(ns) {
		return framework.Result{}, nil // nothing to read for
	}
	resources, err := ContentResources(ctx, nc.c)
	if err != nil {
		return framework.Result{}, err
	}
	obs := Observed{Collections: resources}
	if err := framework.Execute(ctx, nc.sink, Plan(ns, obs, nc.clock.Now()).Actions); err != nil {
		return framework.Result{}, err
	}
	rem, err := remaining(ctx, nc.c, ns.Name, resources)
	if err != nil {
		return framework.Result{}, err
	}
	obs.Remaining = &rem
	out := Plan(ns, obs, nc.clock.Now())
	return framework.Result{RequeueAfter: out.RequeueAfter, Backoff: out.Backoff}, framework.Execute(ctx, nc.sink, out.Actions)
}

// remaining lists every collection in ns and counts what is left, and
// the longest grace period of the pods left.
func remaining(ctx context.Context, c *client.Client, ns string, resources []client.Resource) (Remaining, error) {
	rem := Remaining{Counts: map[string]int{}, Finalizers: map[string]int{}}
	for _, r := range resources {
		var list metav1.PartialObjectMetadataList
		if err := c.Do(ctx, "GET", r.Path(ns, ""), nil, nil, &list); err != nil {
			return rem, fmt.Errorf("list %s: %w", r.Resource, err)
		}
		rem.Counts[r.GroupResource().String()] = len(list.Items)
		for _, it := range list.Items {
			for _, f := range it.Finalizers {
				rem.Finalizers[f]++
			}
			if r.Group == "" && r.Resource == "pods" && it.DeletionGracePeriodSeconds != nil {
				rem.PodGrace = max(rem.PodGrace, time.Duration(*it.DeletionGracePeriodSeconds)*time.Second)
			}
		}
	}
	return rem, nil
}

// apiSink performs the actions through the apiserver.
type apiSink struct {
	c   *client.Client
	log *slog.Logger
}

func (s apiSink) Do(ctx context.Context, a Action) error {
	ns := a.Namespace
	switch a.Type {
	case DeleteCollection:
		err := s.c.Do(ctx, "DELETE", a.Resource.Path(ns.Name, ""), nil, nil, nil)
		if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
			return nil // gone with its CRD, or a kind that cannot be deleted as a collection
		}
		return err
	case UpdateStatus:
		// Only logged: the namespace is looked at again soon (Plan's RequeueAfter or Backoff).
		if _, err := s.c.Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
			s.log.Debug("status update failed", "namespace", ns.Name, "err", err)
		}
		return nil
	case Finalize:
		err := s.c.Do(ctx, "PUT", client.Namespaces.Path("", ns.Name, "finalize"), nil, ns, nil)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			s.log.Info("namespace emptied and finalized", "namespace", ns.Name)
		}
		return err
	}
	return nil
}

// ContentResources discovers what a namespace deletion empties, as
// upstream's namespace controller does: every namespaced resource that
// can be listed and deleted as a collection, in its group's preferred
// version where served there (framework.DiscoverResources; custom
// resources too), the workloads of deleteFirst first.
func ContentResources(ctx context.Context, c *client.Client) ([]client.Resource, error) {
	rs, err := framework.DiscoverResources(ctx, c)
	if err != nil {
		return nil, err
	}
	out := collections(rs)
	first := func(r client.Resource) int {
		if i := slices.Index(deleteFirst, r.GroupResource().String()); i >= 0 {
			return i
		}
		return len(deleteFirst)
	}
	slices.SortStableFunc(out, func(a, b client.Resource) int { return first(a) - first(b) })
	return out, nil
}

// collections returns the namespaced resources of rs whose collections
// can be listed and deleted.
func collections(rs []framework.APIResource) []client.Resource {
	var out []client.Resource
	for _, r := range rs {
		if r.API.Namespaced && r.Has("list", "deletecollection") {
			out = append(out, r.API)
		}
	}
	return out
}
