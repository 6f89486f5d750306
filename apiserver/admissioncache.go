package apiserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik/apiserver/storage"
)

// objectCache keeps the current objects of one resource (namespaces and
// priority classes for admission, the RBAC objects for the authorizer),
// fed by the resource's watch cache: list once, then follow its events.
//
// Admission reads it to save an etcd read per create, under two rules
// that keep the answers exactly those of reading etcd:
//   - the cache may only say yes: any rejection is decided again on
//     fresh reads from etcd;
//   - what a yes relied on goes into the write as storage.Guards, so
//     the write fails instead of committing on stale facts, and the
//     create is admitted again on fresh reads.
type objectCache struct {
	name  string // the resource, for logs
	store *storage.Store

	mu     sync.RWMutex
	objs   map[string]cachedObject // by namespace/name
	rev    int64                   // every change up to rev is in objs
	synced bool
	// changed is closed and replaced on every change (waitUntil).
	changed chan struct{}
}

type cachedObject struct {
	obj runtime.Object // shared: read only
	rev int64          // its ModRevision
}

func newObjectCache(name string, store *storage.Store) *objectCache {
	return &objectCache{name: name, store: store, changed: make(chan struct{})}
}

// start fills the cache and keeps it current until ctx ends. It returns
// once the first list is in.
func (c *objectCache) start(ctx context.Context) error {
	return follow(ctx, c.name, c.store, c)
}

func (c *objectCache) reset(items []runtime.Object, rev int64) {
	objs := make(map[string]cachedObject, len(items))
	for _, obj := range items {
		m, _ := meta.Accessor(obj)
		rev, _ := storage.ParseRV(m.GetResourceVersion())
		objs[cacheKey(m.GetNamespace(), m.GetName())] = cachedObject{obj: obj, rev: rev}
	}
	c.mu.Lock()
	c.objs, c.rev, c.synced = objs, rev, true
	c.notify()
	c.mu.Unlock()
}

func (c *objectCache) unsync() {
	c.mu.Lock()
	c.synced = false
	c.mu.Unlock()
}

func (c *objectCache) apply(ev *storage.Event) {
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.Rev <= c.rev {
		return
	}
	key := cacheKey(m.GetNamespace(), m.GetName())
	if ev.Type == watch.Deleted {
		delete(c.objs, key)
	} else {
		c.objs[key] = cachedObject{obj: ev.Object, rev: ev.Rev}
	}
	c.rev = ev.Rev
	c.notify()
}

// notify wakes waitUntil (mu held).
func (c *objectCache) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// waitUntil waits until the cache holds the object, or ctx ends.
func (c *objectCache) waitUntil(ctx context.Context, namespace, name string) error {
	for {
		c.mu.RLock()
		_, ok := c.objs[cacheKey(namespace, name)]
		ch := c.changed
		c.mu.RUnlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s %s/%s in the %s cache: %w", c.name, namespace, name, c.name, ctx.Err())
		}
	}
}

// get returns the cached object and its ModRevision; ok is false when
// the cache does not have it or is not synced. namespace is "" for
// cluster-scoped objects.
func (c *objectCache) get(namespace, name string) (obj runtime.Object, rev int64, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.synced {
		return nil, 0, false
	}
	o, ok := c.objs[cacheKey(namespace, name)]
	return o.obj, o.rev, ok
}

// lookup returns the last known object, synced or not (the authorizer
// answers from what it knows, as an informer-fed authorizer does).
func (c *objectCache) lookup(namespace, name string) (runtime.Object, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	o, ok := c.objs[cacheKey(namespace, name)]
	return o.obj, ok
}

// each calls fn on every last known object until fn returns false.
func (c *objectCache) each(fn func(runtime.Object) bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, o := range c.objs {
		if !fn(o.obj) {
			return
		}
	}
}

func cacheKey(namespace, name string) string { return namespace + "/" + name }

// all calls fn on every cached object and returns the revision the cache
// is complete up to; ok is false when the cache is not synced.
func (c *objectCache) all(fn func(runtime.Object)) (rev int64, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.synced {
		return 0, false
	}
	for _, o := range c.objs {
		fn(o.obj)
	}
	return c.rev, true
}

// admissionReads is where one admission of a create reads namespaces,
// priority classes and service accounts: etcd, or (cached) the objectCaches, recording the
// guards its write must commit under.
type admissionReads struct {
	srv    *Server
	cached bool
	guards []storage.Guard
}

func (r *admissionReads) namespace(ctx context.Context, name string) (runtime.Object, error) {
	if r.cached {
		if obj, rev, ok := r.srv.namespaceCache.get("", name); ok {
			r.guards = append(r.guards, storage.Guard{Key: r.srv.namespaces.Key("", name), ModRevision: rev})
			return obj, nil
		}
	}
	return r.srv.namespaces.Get(ctx, "", name)
}

func (r *admissionReads) priorityClass(ctx context.Context, name string) (runtime.Object, error) {
	if r.cached {
		if obj, rev, ok := r.srv.priorityClassCache.get("", name); ok {
			r.guards = append(r.guards, storage.Guard{Key: r.srv.priorityClasses.Key("", name), ModRevision: rev})
			return obj, nil
		}
	}
	return r.srv.priorityClasses.Get(ctx, "", name)
}

func (r *admissionReads) globalDefaultPriorityClass(ctx context.Context) (*schedulingv1.PriorityClass, error) {
	if r.cached {
		var items []runtime.Object
		if rev, ok := r.srv.priorityClassCache.all(func(o runtime.Object) { items = append(items, o) }); ok {
			// No class may have been created or changed since: a new
			// default would change the answer.
			r.guards = append(r.guards, storage.Guard{Key: r.srv.priorityClasses.Key("", ""), Prefix: true, ModRevision: rev})
			best := globalDefault(items)
			if best != nil {
				// Nor deleted.
				bestRev, _ := storage.ParseRV(best.ResourceVersion)
				r.guards = append(r.guards, storage.Guard{Key: r.srv.priorityClasses.Key("", best.Name), ModRevision: bestRev})
			}
			return best, nil
		}
	}
	return r.srv.globalDefaultPriorityClass(ctx)
}

// serviceAccount reads the account a pod runs as. On the fresh path a
// missing `default` is looked for again for about 1.5s, as kube-apiserver's
// ServiceAccount plugin does (10 tries, 100-200ms apart), since the
// serviceaccount controller creates it just after its namespace; the
// cached path never waits: a miss is decided again on the fresh path.
func (r *admissionReads) serviceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	if r.cached {
		if obj, rev, ok := r.srv.serviceAccountCache.get(namespace, name); ok {
			r.guards = append(r.guards, storage.Guard{Key: r.srv.serviceAccounts.Key(namespace, name), ModRevision: rev})
			return obj.(*corev1.ServiceAccount), nil
		}
	}
	attempts := 1
	if name == defaultServiceAccountName && !r.cached {
		attempts = 10
	}
	interval := time.Duration(100+rand.Int64N(100)) * time.Millisecond
	for i := 0; ; i++ {
		obj, err := r.srv.serviceAccounts.Get(ctx, namespace, name)
		if err == nil {
			return obj.(*corev1.ServiceAccount), nil
		}
		if !apierrors.IsNotFound(err) || i+1 >= attempts {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(interval):
		}
	}
}
