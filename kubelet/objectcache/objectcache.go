// Package objectcache keeps the ConfigMaps and Secrets a node's pods use,
// each through a list-watch of that one object, as the kubelet's
// watch-based managers (configMapAndSecretChangeDetectionStrategy: Watch)
// do: a pod's volumes and environment are read from memory instead of a
// GET per pod, and an object changed in the API reaches its volumes at
// the next sync.
//
//	pod seen (podUpdated) ─▶ RegisterPod: +1 per object it names (podrefs)
//	                           first reference ─▶ informer ns, metadata.name=NAME
//	pod gone (worker ends) ─▶ UnregisterPod: −1; last reference ─▶ watch stops
//	Get(ns, name) ─▶ registered: wait for its first list, answer from the store
//	                 (gone: NotFound); not registered: a GET
package objectcache

import (
	"context"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"minik/client"
	"minik/client/informer"
	"minik/internal/podrefs"
)

// syncWait bounds how long Get waits for a new watch's first list before
// reading the object with a GET instead.
const syncWait = 2 * time.Second

// Cache is the objects of one resource that registered pods name.
type Cache[T any] struct {
	api *client.Typed[T]
	// unwatched caches nothing: every Get is a GET (NewUnwatched).
	unwatched bool
	ctx       context.Context
	clock     clock.Clock
	log       *slog.Logger

	mu      sync.Mutex
	objects map[key]*entry[T]
	pods    map[types.UID][]key
}

type key struct{ namespace, name string }

// entry is one watched object and the number of pods that name it.
type entry[T any] struct {
	refs int
	inf  *informer.Informer[T]
	stop context.CancelFunc
}

// New returns a cache of api's objects; its watches end with ctx.
func New[T any](ctx context.Context, api *client.Typed[T], clk clock.Clock, log *slog.Logger) *Cache[T] {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Cache[T]{api: api, ctx: ctx, clock: clk, log: log, objects: map[key]*entry[T]{}, pods: map[types.UID][]key{}}
}

// NewUnwatched returns a cache that watches nothing: each Get is a GET,
// for an identity that may read the objects but not list them.
func NewUnwatched[T any](api *client.Typed[T]) *Cache[T] {
	return &Cache[T]{api: api, unwatched: true}
}

// NewConfigMaps and NewSecrets are the two caches a kubelet keeps.
func NewConfigMaps(ctx context.Context, c *client.Client, clk clock.Clock, log *slog.Logger) *Cache[corev1.ConfigMap] {
	return New(ctx, c.ConfigMaps(), clk, log)
}

// NewSecrets: see NewConfigMaps.
func NewSecrets(ctx context.Context, c *client.Client, clk clock.Clock, log *slog.Logger) *Cache[corev1.Secret] {
	return New(ctx, c.Secrets(), clk, log)
}

// RegisterPod records the objects pod names (again, after an update: the
// ones it no longer names are released).
func (c *Cache[T]) RegisterPod(pod *corev1.Pod) {
	if c.unwatched {
		return
	}
	names := podrefs.Names(pod, c.api.Resource().Resource)
	keys := make([]key, len(names))
	for i, n := range names {
		keys[i] = key{pod.Namespace, n}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		c.acquireLocked(k)
	}
	for _, k := range c.pods[pod.UID] {
		c.releaseLocked(k)
	}
	if len(keys) == 0 {
		delete(c.pods, pod.UID)
		return
	}
	c.pods[pod.UID] = keys
}

// UnregisterPod releases the objects pod uid named.
func (c *Cache[T]) UnregisterPod(uid types.UID) {
	if c.unwatched {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.pods[uid] {
		c.releaseLocked(k)
	}
	delete(c.pods, uid)
}

func (c *Cache[T]) acquireLocked(k key) {
	if e := c.objects[k]; e != nil {
		e.refs++
		return
	}
	ctx, stop := context.WithCancel(c.ctx)
	inf := informer.New(c.api, informer.Config{Namespace: k.namespace, FieldSelector: "metadata.name=" + k.name,
		Clock: c.clock, Logger: c.log})
	c.objects[k] = &entry[T]{refs: 1, inf: inf, stop: stop}
	go func() {
		if err := inf.Run(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("watching an object pods use", "resource", c.api.Resource().Resource,
				"namespace", k.namespace, "name", k.name, "err", err)
		}
	}()
}

func (c *Cache[T]) releaseLocked(k key) {
	e := c.objects[k]
	if e == nil {
		return
	}
	if e.refs--; e.refs == 0 {
		e.stop()
		delete(c.objects, k)
	}
}

// Watched reports how many objects the cache watches.
func (c *Cache[T]) Watched() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.objects)
}

// Get returns object name of namespace ns: from its watch if a registered
// pod names it (NotFound if it does not exist), else by a GET.
func (c *Cache[T]) Get(ctx context.Context, ns, name string) (*T, error) {
	c.mu.Lock()
	e := c.objects[key{ns, name}]
	c.mu.Unlock()
	if e == nil {
		return c.api.Get(ctx, ns, name, metav1.GetOptions{})
	}
	timer := c.clock.NewTimer(syncWait)
	defer timer.Stop()
	select {
	case <-e.inf.Synced():
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C():
		// The watch cannot list it yet (apiserver busy, access not yet
		// granted): a GET says what the API holds now.
		return c.api.Get(ctx, ns, name, metav1.GetOptions{})
	}
	if obj, ok := e.inf.Store().Get(ns, name); ok {
		return obj, nil
	}
	r := c.api.Resource()
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: r.Group, Resource: r.Resource}, name)
}
