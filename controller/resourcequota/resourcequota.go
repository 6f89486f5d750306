// Package resourcequota keeps every ResourceQuota's status current, as
// kube-controller-manager's resource quota controller:
//
//	quota added/changed, counted object added/changed/deleted ─▶ queue namespace
//	  ─▶ the namespace's cached objects of each kind its quotas name (a live
//	     list where NeedsLiveList, or where the kind's own cache has not synced)
//	  ─▶ Plan: per quota, Status(quota, objects) differs? ─▶ UpdateStatus
//	  ─▶ framework.Execute through the sink; again in ResyncPeriod
//
// Admission charges each create to status.used in the create's own etcd
// transaction (apiserver/admission_quota.go); this controller gives back
// what deletions and ended pods free, and fills in a new quota's status.
// It lowers a usage only from what is at least as new as the quota it
// read (its cache, or else a live list), so it never undoes a charge for
// an object its caches have not seen yet; raising one is always safe.
//
// It counts every kind admission charges: the kinds of the shared
// informers from their caches, and any other kind a quota names
// (count/<resource>.<group>, custom resources too) through a
// metadata-only informer it starts for it, found by discovery.
package resourcequota

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"minik/client"
	"minik/client/informer"
	"minik/controller/framework"
)

// Name is the controller's name.
const Name = "resourcequota"

// ResyncPeriod is how often every quota is recomputed anyway (upstream's
// --resource-quota-sync-period default).
const ResyncPeriod = 5 * time.Minute

// Controller recomputes quota usage.
type Controller struct {
	client *client.Client
	quotas *informer.Informer[corev1.ResourceQuota]
	// shared are the kinds read from the shared informers (and the
	// controller's own quota informer), fixed by New.
	shared map[Kind]*source
	queue  *framework.Queue
	log    *slog.Logger
	clock  clock.Clock
	// sink performs the writes (apiSink; a FakeSink in tests).
	sink framework.Sink[Action]

	mu sync.Mutex
	// discovered holds what discovery said of each other kind a quota
	// named, and its source (sourceOf).
	discovered map[Kind]*discovered
	// runCtx is Run's: the discovered kinds' informers run under it.
	runCtx context.Context
}

// New registers the controller on the shared informers, its quotas'
// among them.
func New(c *client.Client, inf *framework.Informers, clk clock.Clock, log *slog.Logger) *Controller {
	api := client.For[corev1.ResourceQuota](c, client.ResourceQuotas)
	ctl := &Controller{client: c, quotas: inf.ResourceQuotas, sink: apiSink{api},
		queue: framework.NewQueue(framework.QueueConfig{Name: Name}), log: log.With("controller", Name), clock: clk,
		discovered: map[Kind]*discovered{}}
	ctl.quotas.AddHandler(informer.Handler[corev1.ResourceQuota]{
		OnAdd: func(q *corev1.ResourceQuota) { ctl.queue.Add(q.Namespace) },
		OnUpdate: func(old, q *corev1.ResourceQuota) {
			ctl.queue.Add(q.Namespace)
			if !equality.Semantic.DeepEqual(old.Spec.Hard, q.Spec.Hard) {
				ctl.forgetUnnamed()
			}
		},
		OnDelete: func(*corev1.ResourceQuota) { ctl.forgetUnnamed() },
	})
	shared := []*source{
		watch(ctl, inf.Pods, client.For[corev1.Pod](c, client.Pods)),
		watch(ctl, inf.ConfigMaps, client.For[corev1.ConfigMap](c, client.ConfigMaps)),
		watch(ctl, inf.Secrets, client.For[corev1.Secret](c, client.Secrets)),
		watch(ctl, inf.ServiceAccounts, client.For[corev1.ServiceAccount](c, client.ServiceAccounts)),
		watch(ctl, inf.ReplicationControllers, client.For[corev1.ReplicationController](c, client.ReplicationControllers)),
		watch(ctl, inf.PersistentVolumeClaims, client.For[corev1.PersistentVolumeClaim](c, client.PersistentVolumeClaims)),
		watch(ctl, inf.ReplicaSets, client.For[appsv1.ReplicaSet](c, client.ReplicaSets)),
		watch(ctl, inf.Deployments, client.For[appsv1.Deployment](c, client.Deployments)),
		watch(ctl, inf.DaemonSets, client.For[appsv1.DaemonSet](c, client.DaemonSets)),
		watch(ctl, inf.StatefulSets, client.For[appsv1.StatefulSet](c, client.StatefulSets)),
		watch(ctl, inf.ControllerRevisions, client.For[appsv1.ControllerRevision](c, client.ControllerRevisions)),
		watch(ctl, inf.Jobs, client.For[batchv1.Job](c, client.Jobs)),
		watch(ctl, inf.CronJobs, client.For[batchv1.CronJob](c, client.CronJobs)),
		watch(ctl, inf.PodDisruptionBudgets, client.For[policyv1.PodDisruptionBudget](c, client.PodDisruptionBudgets)),
		watch(ctl, ctl.quotas, api),
	}
	if inf.Services != nil { // when the apiserver serves them
		shared = append(shared,
			watch(ctl, inf.Services, client.For[corev1.Service](c, framework.ServicesResource)),
			watch(ctl, inf.Endpoints, client.For[corev1.Endpoints](c, framework.EndpointsResource)),
			watch(ctl, inf.EndpointSlices, client.For[discoveryv1.EndpointSlice](c, framework.EndpointSlicesResource)))
	}
	ctl.shared = map[Kind]*source{}
	for _, s := range shared {
		ctl.shared[s.kind] = s
	}
	return ctl
}

// Run works until ctx ends (the shared informers have synced).
func (ctl *Controller) Run(ctx context.Context, workers int) {
	ctl.mu.Lock()
	ctl.runCtx = ctx
	ctl.mu.Unlock()
	framework.RunWorkers(ctx, ctl.queue, workers, ctl.sync, func(key string, err error) {
		ctl.log.Warn("sync failed", "namespace", key, "err", err)
	})
}

// conflictRetry is how soon a sync whose status write met a newer quota
// (or none) runs again: the newer quota is on its way to the cache.
const conflictRetry = 100 * time.Millisecond

func (ctl *Controller) sync(ctx context.Context, ns string) (framework.Result, error) {
	quotas := ctl.quotas.Store().ByIndex(informer.NamespaceIndex, ns)
	now := ctl.clock.Now()
	objs, err := ctl.observe(ctx, ns, quotas, now)
	if err != nil {
		return framework.Result{}, err
	}
	out := Plan(quotas, objs, now)
	err = framework.Execute(ctx, ctl.sink, out.Actions)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return framework.Result{RequeueAfter: conflictRetry}, nil
	}
	if err != nil {
		return framework.Result{}, err
	}
	return framework.Result{RequeueAfter: out.RequeueAfter}, nil
}

// observe returns the objects of ns of every kind its quotas name: the
// cached ones, and a live list of each kind whose own cache has not
// synced yet or that NeedsLiveList names for one of quotas. A kind the
// apiserver does not serve is left out.
func (ctl *Controller) observe(ctx context.Context, ns string, quotas []*corev1.ResourceQuota, now time.Time) (Objects, error) {
	objs := Objects{}
	var cached []*source
	for _, kind := range Kinds(quotas) {
		s, err := ctl.sourceOf(ctx, kind, now)
		if err != nil {
			return nil, err
		}
		if s == nil {
			continue
		}
		if !s.synced() {
			if err := ctl.readLive(ctx, s, ns, objs, now); err != nil {
				return nil, err
			}
			continue
		}
		objs[kind] = s.list(ns)
		cached = append(cached, s)
	}
	live := map[Kind]bool{}
	for _, q := range quotas {
		want := Status(q, objs, now)
		for _, s := range cached {
			if live[s.kind] || !NeedsLiveList(q, want, s.kind, s.rev()) {
				continue
			}
			if err := ctl.readLive(ctx, s, ns, objs, now); err != nil {
				return nil, err
			}
			live[s.kind] = true
			want = Status(q, objs, now)
		}
	}
	return objs, nil
}

// readLive lists the objects of s's kind in ns into objs. A discovered
// kind the apiserver answers NotFound for (its CRD was removed) is not
// served: it is left out of objs and its informer stopped.
func (ctl *Controller) readLive(ctx context.Context, s *source, ns string, objs Objects, now time.Time) error {
	items, err := s.live(ctx, ns)
	switch {
	case err == nil:
		objs[s.kind] = items
	case s.discovered && apierrors.IsNotFound(err):
		ctl.notServed(s.kind, now)
		delete(objs, s.kind)
	default:
		return fmt.Errorf("listing %s: %w", s.kind.Resource, err)
	}
	return nil
}

// apiSink performs the actions through the apiserver.
type apiSink struct {
	api *client.Typed[corev1.ResourceQuota]
}

func (s apiSink) Do(ctx context.Context, a Action) error {
	_, err := s.api.UpdateStatus(ctx, a.Quota, metav1.UpdateOptions{})
	return err
}
