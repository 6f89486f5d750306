package resourcequota

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik/client"
	"minik/client/informer"
	"minik/controller/framework"
	"minik/internal/quota"
)

// source is one counted kind as the controller reads it: its cache, how
// new the cache is, and a live list for when the cache is older than a
// quota or has not synced yet.
type source struct {
	kind Kind
	list func(namespace string) []runtime.Object
	rev  func() int64
	live func(ctx context.Context, namespace string) ([]runtime.Object, error)
	// synced reports whether the cache holds a whole list. The shared
	// informers have synced before the controller runs; a discovered
	// kind's own informer has not at first.
	synced func() bool
	// discovered is set for a kind read through its own metadata-only
	// informer (discover), not a shared one.
	discovered bool
}

// watch makes the source of inf: it queues the namespace of every
// change if a quota there names the kind, and lists api live.
func watch[T any](ctl *Controller, inf *informer.Informer[T], api *client.Typed[T]) *source {
	kind := Kind{api.Resource().Resource, api.Resource().Group}
	enqueue := func(o *T) {
		ns := any(o).(metav1.Object).GetNamespace()
		for _, q := range ctl.quotas.Store().ByIndex(informer.NamespaceIndex, ns) {
			if counts(q, kind) {
				ctl.queue.Add(ns)
				return
			}
		}
	}
	inf.AddHandler(informer.Handler[T]{OnAdd: enqueue, OnUpdate: func(_, o *T) { enqueue(o) }, OnDelete: enqueue})
	return &source{kind: kind,
		list: func(ns string) []runtime.Object {
			items := inf.Store().ByIndex(informer.NamespaceIndex, ns)
			out := make([]runtime.Object, len(items))
			for i, o := range items {
				out[i] = any(o).(runtime.Object)
			}
			return out
		},
		rev:    func() int64 { return parseRV(inf.LastResourceVersion()) },
		synced: func() bool { return true },
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

// rediscoverPeriod is how long discovery's answer about a kind is
// trusted (upstream's quota controller reads discovery every 30s): a
// CRD made or removed since is noticed by the next sync after it.
const rediscoverPeriod = 30 * time.Second

// discovered is what discovery last said of a kind that has no shared
// informer, at when: the resource it is served as and the source read
// through its own informer (nil: not served).
type discovered struct {
	res    client.Resource
	source *source
	stop   context.CancelFunc
	at     time.Time
}

// sourceOf returns where kind is read from: its shared informer, or for
// another kind whose objects use nothing but their count (a custom
// resource, count/leases.coordination.k8s.io, ...) a metadata-only
// informer of the controller's own, started the first time a quota
// names the kind. nil means the apiserver does not serve it (its names
// then keep their usage).
func (ctl *Controller) sourceOf(ctx context.Context, kind Kind, now time.Time) (*source, error) {
	if s, ok := ctl.shared[kind]; ok {
		return s, nil
	}
	if !quota.CountsOnly(kind.Resource, kind.Group) {
		return nil, nil // its usage needs the whole object: a shared informer, or not served
	}
	ctl.mu.Lock()
	d := ctl.discovered[kind]
	ctl.mu.Unlock()
	if d != nil && now.Sub(d.at) < rediscoverPeriod {
		return d.source, nil
	}
	// Discovery is asked without the lock, so that the other workers'
	// syncs do not wait on it; of two workers asking at once, the first
	// to come back decides.
	res, served, err := discover(ctx, ctl.client, kind)
	if err != nil {
		return nil, fmt.Errorf("discovery of %s: %w", kind.Resource, err)
	}
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	latest := ctl.discovered[kind]
	if latest != nil && latest != d {
		return latest.source, nil
	}
	d = latest // nil if the kind was forgotten meanwhile
	if d != nil && d.source != nil && served && d.res == res {
		d.at = now
		return d.source, nil
	}
	ctl.forget(kind)
	d = &discovered{res: res, at: now}
	if served {
		d.source, d.stop = ctl.startInformer(res)
	}
	ctl.discovered[kind] = d
	return d.source, nil
}

// startInformer starts a metadata-only informer of res for as long as
// the controller runs. Before Run (the driver tests) it is made but not
// started: its cache never syncs, and its kind is read by live lists.
func (ctl *Controller) startInformer(res client.Resource) (*source, context.CancelFunc) {
	inf := framework.NewMetadataInformer(ctl.client, res, ctl.log)
	s := watch(ctl, inf, client.For[metav1.PartialObjectMetadata](ctl.client, res))
	s.synced, s.discovered = inf.HasSynced, true
	if ctl.runCtx == nil {
		return s, func() {}
	}
	ctx, cancel := context.WithCancel(ctl.runCtx)
	go func() { _ = inf.Run(ctx) }()
	return s, cancel
}

// notServed records that kind is not served, as a live list answered
// NotFound (its CRD was removed).
func (ctl *Controller) notServed(kind Kind, now time.Time) {
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	ctl.forget(kind)
	ctl.discovered[kind] = &discovered{at: now}
}

// forgetUnnamed stops the informers of the discovered kinds that no
// quota names any more.
func (ctl *Controller) forgetUnnamed() {
	named := Kinds(ctl.quotas.Store().List())
	ctl.mu.Lock()
	defer ctl.mu.Unlock()
	for kind := range ctl.discovered {
		if !slices.Contains(named, kind) {
			ctl.forget(kind)
		}
	}
}

// forget stops kind's informer, if any, and drops what discovery said;
// ctl.mu is held.
func (ctl *Controller) forget(kind Kind) {
	if d := ctl.discovered[kind]; d != nil && d.stop != nil {
		d.stop()
	}
	delete(ctl.discovered, kind)
}

// discover asks the apiserver's discovery how kind is served
// (framework.DiscoverResources: its group's preferred version where
// served there), as a namespaced collection that can be listed and
// watched. served is false for a kind it does not serve so.
func discover(ctx context.Context, c *client.Client, kind Kind) (res client.Resource, served bool, err error) {
	resources, err := framework.DiscoverResources(ctx, c, kind.Group)
	if err != nil {
		return res, false, err
	}
	for _, r := range resources {
		if r.API.Resource == kind.Resource && r.API.Namespaced && r.Has("list", "watch") {
			return r.API, true, nil
		}
	}
	return res, false, nil
}
