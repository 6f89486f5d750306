// Package resourcequota keeps every ResourceQuota's status current, as
// kube-controller-manager's resource quota controller:
//
//	quota added/changed, counted object added/changed/deleted ─▶ queue namespace
//	  ─▶ the namespace's cached objects (a live list where NeedsLiveList)
//	  ─▶ Plan: per quota, Status(quota, objects) differs? ─▶ UpdateStatus
//	  ─▶ framework.Execute through the sink; again in ResyncPeriod
//
// Admission charges each create to status.used in the create's own etcd
// transaction (apiserver/admission_quota.go); this controller gives back
// what deletions and ended pods free, and fills in a new quota's status.
// It lowers a usage only from what is at least as new as the quota it
// read (its cache, or else a live list), so it never undoes a charge for
// an object its caches have not seen yet; raising one is always safe.
package resourcequota

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

var resourceQuotas = client.Resource{Version: "v1", Resource: "resourcequotas", Namespaced: true}

const nsIndex = "resourcequota/namespace"

// source is one counted kind: its cache, how new the cache is, and a
// live list for when the cache is older than a quota.
type source struct {
	kind Kind
	list func(namespace string) []runtime.Object
	rev  func() int64
	live func(ctx context.Context, namespace string) ([]runtime.Object, error)
}

// Controller recomputes quota usage.
type Controller struct {
	quotas  *informer.Informer[corev1.ResourceQuota]
	sources []source
	queue   *framework.Queue
	log     *slog.Logger
	clock   clock.Clock
	// sink performs the writes (apiSink; a FakeSink in tests).
	sink framework.Sink[Action]
}

// New registers the controller on the shared informers; it runs its own
// ResourceQuota informer.
func New(c *client.Client, inf *framework.Informers, clk clock.Clock, log *slog.Logger) *Controller {
	api := client.For[corev1.ResourceQuota](c, resourceQuotas)
	ctl := &Controller{quotas: informer.New(api, informer.Config{Logger: log}), sink: apiSink{api},
		queue: framework.NewQueue(framework.QueueConfig{Name: Name}), log: log.With("controller", Name), clock: clk}
	ctl.quotas.AddHandler(informer.Handler[corev1.ResourceQuota]{
		OnAdd:    func(q *corev1.ResourceQuota) { ctl.queue.Add(q.Namespace) },
		OnUpdate: func(_, q *corev1.ResourceQuota) { ctl.queue.Add(q.Namespace) },
	})
	_ = ctl.quotas.AddIndex(nsIndex, func(q *corev1.ResourceQuota) []string { return []string{q.Namespace} })
	ctl.sources = []source{
		watch(ctl, inf.Pods, client.For[corev1.Pod](c, client.Pods)),
		watch(ctl, inf.ConfigMaps, client.For[corev1.ConfigMap](c, client.ConfigMaps)),
		watch(ctl, inf.Secrets, client.For[corev1.Secret](c, client.Secrets)),
		watch(ctl, inf.ServiceAccounts, client.For[corev1.ServiceAccount](c, client.ServiceAccounts)),
		watch(ctl, inf.ReplicationControllers, client.For[corev1.ReplicationController](c, client.ReplicationControllers)),
		watch(ctl, inf.ReplicaSets, client.For[appsv1.ReplicaSet](c, client.ReplicaSets)),
		watch(ctl, inf.Deployments, client.For[appsv1.Deployment](c, client.Deployments)),
		watch(ctl, inf.DaemonSets, client.For[appsv1.DaemonSet](c, client.DaemonSets)),
		watch(ctl, inf.Jobs, client.For[batchv1.Job](c, client.Jobs)),
		watch(ctl, inf.PodDisruptionBudgets, client.For[policyv1.PodDisruptionBudget](c, client.PodDisruptionBudgets)),
		watch(ctl, ctl.quotas, api),
	}
	if inf.Services != nil { // when the apiserver serves them
		ctl.sources = append(ctl.sources, watch(ctl, inf.Services, client.For[corev1.Service](c, framework.ServicesResource)))
	}
	return ctl
}

// watch indexes a shared informer by namespace and queues the namespace
// of every change, if it has quotas.
func watch[T any](ctl *Controller, inf *informer.Informer[T], api *client.Typed[T]) source {
	kind := Kind{api.Resource().Resource, api.Resource().Group}
	if kind.Resource != "resourcequotas" { // indexed in New
		_ = inf.AddIndex(nsIndex, func(o *T) []string { return []string{any(o).(metav1.Object).GetNamespace()} })
	}
	enqueue := func(o *T) {
		ns := any(o).(metav1.Object).GetNamespace()
		if len(ctl.quotas.Store().ByIndex(nsIndex, ns)) > 0 {
			ctl.queue.Add(ns)
		}
	}
	inf.AddHandler(informer.Handler[T]{OnAdd: enqueue, OnUpdate: func(_, o *T) { enqueue(o) }, OnDelete: enqueue})
	return source{kind: kind,
		list: func(ns string) []runtime.Object {
			items := inf.Store().ByIndex(nsIndex, ns)
			out := make([]runtime.Object, len(items))
			for i, o := range items {
				out[i] = any(o).(runtime.Object)
			}
			return out
		},
		rev: func() int64 { return parseRV(inf.LastResourceVersion()) },
		live: func(ctx context.Context, ns string) ([]runtime.Object, error) {
			list, err := api.List(ctx, ns, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			out := make([]runtime.Object, len(list.Items))
			for i := range list.Items {
				out[i] = any(&list.Items[i]).(runtime.Object)
			}
			return out, nil
		}}
}

func parseRV(rv string) int64 {
	n, _ := strconv.ParseInt(rv, 10, 64)
	return n
}

// Run works until ctx ends.
func (ctl *Controller) Run(ctx context.Context, workers int) {
	go func() { _ = ctl.quotas.Run(ctx) }()
	select {
	case <-ctl.quotas.Synced():
	case <-ctx.Done():
		return
	}
	framework.RunWorkers(ctx, ctl.queue, workers, ctl.sync, func(key string, err error) {
		ctl.log.Warn("sync failed", "namespace", key, "err", err)
	})
}

// conflictRetry is how soon a sync whose status write met a newer quota
// (or none) runs again: the newer quota is on its way to the cache.
const conflictRetry = 100 * time.Millisecond

func (ctl *Controller) sync(ctx context.Context, ns string) (framework.Result, error) {
	quotas := ctl.quotas.Store().ByIndex(nsIndex, ns)
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

// observe returns the objects of ns: the cached ones, and a live list of
// each kind NeedsLiveList names for one of quotas.
func (ctl *Controller) observe(ctx context.Context, ns string, quotas []*corev1.ResourceQuota, now time.Time) (Objects, error) {
	objs := Objects{}
	for _, s := range ctl.sources {
		objs[s.kind] = s.list(ns)
	}
	live := map[Kind]bool{}
	for _, q := range quotas {
		want := Status(q, objs, now)
		for _, s := range ctl.sources {
			if live[s.kind] || !NeedsLiveList(q, want, s.kind, s.rev()) {
				continue
			}
			items, err := s.live(ctx, ns)
			if err != nil {
				return nil, fmt.Errorf("listing %s: %w", s.kind.Resource, err)
			}
			objs[s.kind], live[s.kind] = items, true
			want = Status(q, objs, now)
		}
	}
	return objs, nil
}

// apiSink performs the actions through the apiserver.
type apiSink struct {
	api *client.Typed[corev1.ResourceQuota]
}

func (s apiSink) Do(ctx context.Context, a Action) error {
	_, err := s.api.UpdateStatus(ctx, a.Quota, metav1.UpdateOptions{})
	return err
}
