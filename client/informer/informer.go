// Package informer keeps a local, indexed copy of one kind of API object up
// to date and tells handlers about every change: the list-watch pattern at
// the heart of every Kubernetes controller.
//
//  1. List the collection; the list's resourceVersion is the point in
//     history the copy now reflects.
//  2. Watch from that resourceVersion: every later change arrives as an
//     event, applied to the cache and handed to the handlers in order.
//  3. If the stream drops, watch again from the last resourceVersion seen
//     (events and bookmarks both advance it), after a capped, jittered
//     exponential backoff.
//  4. If the server answers 410 Gone, that point is no longer in its
//     history: list again, and reconcile the cache with the new list,
//     turning the differences into add, update and delete events.
//
// See client/README.md for a diagram.
package informer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"minik/client"
)

// Handler receives the changes an informer sees. Any of its funcs may be
// nil. They are called from one goroutine, one at a time, in the order the
// changes happened; objects are shared with the cache and must not be
// modified.
type Handler[T any] struct {
	OnAdd func(obj *T)
	// OnUpdate gets the previous and the new state. On a resync, old and
	// new are the same object.
	OnUpdate func(old, new *T)
	// OnDelete gets the last state the informer knew.
	OnDelete func(obj *T)
}

// Config configures an Informer. The zero value watches all namespaces,
// never resyncs and uses the defaults below.
type Config struct {
	// Namespace limits the informer to one namespace; "" means all.
	Namespace string
	// LabelSelector and FieldSelector filter the objects, as in kubectl.
	LabelSelector string
	FieldSelector string
	// ResyncPeriod, if positive, makes the informer call OnUpdate(obj, obj)
	// for every cached object this often, so that handlers that missed or
	// failed on something get another chance. Default 0: off.
	ResyncPeriod time.Duration
	// PageSize is the number of objects asked for per list request.
	// Default 500.
	PageSize int64
	// WatchTimeout is the shortest time the server keeps a watch open before
	// closing it cleanly; each watch asks for a random time between it and
	// twice it, so that clients reconnect at different moments.
	// Default 5 minutes.
	WatchTimeout time.Duration
	// Backoff spaces retries after failed lists and dropped watches.
	Backoff Backoff
	// KeysOnly makes the cache keep each object's key and resourceVersion,
	// not the object, for a reader that keeps what it needs from the
	// handlers itself (the DNS keeps records, not Services). Store() then
	// finds no object; OnUpdate's old object, and OnDelete's after a
	// relist, are stand-ins holding only namespace, name and
	// resourceVersion; a resync has nothing to replay.
	KeysOnly bool
	// Clock defaults to the real time.
	Clock clock.Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// minHealthyWatch is how long a watch that delivered nothing must have
// lasted for its end to count as normal. A server that closes every watch
// at once would otherwise be hammered in a tight loop.
const minHealthyWatch = time.Second

// Informer lists and watches one resource and keeps a Store of it.
type Informer[T any] struct {
	src *client.Typed[T]
	cfg Config
	// transformFn is SetTransform's function, nil for none.
	transformFn func(*T) *T
	// fed is set on a child of a Split, which has no src of its own.
	fed      *feed
	log      *slog.Logger
	store    *Store[T]
	handlers []Handler[T]
	queue    queue[T]

	started atomic.Bool
	synced  chan struct{} // closed once handlers got the first list
	lastRV  atomic.Value  // string

	// State of the Run goroutine.
	hasListed bool
	resyncC   <-chan time.Time
}

// New returns an informer for src; start it with Run.
func New[T any](src *client.Typed[T], cfg Config) *Informer[T] {
	if cfg.PageSize <= 0 {
		cfg.PageSize = 500
	}
	if cfg.WatchTimeout <= 0 {
		cfg.WatchTimeout = 5 * time.Minute
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	inf := &Informer[T]{
		src:    src,
		cfg:    cfg,
		log:    cfg.Logger,
		store:  newStore[T](),
		synced: make(chan struct{}),
	}
	if cfg.KeysOnly {
		inf.store = newKeysOnlyStore[T]()
	}
	if src != nil {
		inf.log = cfg.Logger.With("informer", src.Resource().Resource, "namespace", cfg.Namespace)
	}
	inf.queue.signal = make(chan struct{}, 1)
	inf.lastRV.Store("")
	return inf
}

// AddHandler registers h. Call it before Run, so that h sees every object
// from the first list on; it panics afterwards.
func (inf *Informer[T]) AddHandler(h Handler[T]) {
	if inf.started.Load() {
		panic("informer: AddHandler after Run")
	}
	inf.handlers = append(inf.handlers, h)
}

// AddIndex adds an index to the store under name, e.g. pods by owner.
// It fails if name is taken; NamespaceIndex always is, and NodeNameIndex for
// pods.
func (inf *Informer[T]) AddIndex(name string, fn IndexFunc[T]) error {
	return inf.store.addIndex(name, fn)
}

// Store returns the local cache. Before Synced it may be incomplete.
func (inf *Informer[T]) Store() *Store[T] { return inf.store }

// Synced returns a channel that is closed once the handlers have been given
// every object of the first list.
func (inf *Informer[T]) Synced() <-chan struct{} { return inf.synced }

// HasSynced reports whether Synced is closed.
func (inf *Informer[T]) HasSynced() bool {
	select {
	case <-inf.synced:
		return true
	default:
		return false
	}
}

// LastResourceVersion returns the resourceVersion the cache reflects.
func (inf *Informer[T]) LastResourceVersion() string { return inf.lastRV.Load().(string) }

// Run lists, watches and calls handlers until ctx is done. It returns nil
// when ctx is done, having stopped calling handlers, or an error if it was
// already started.
func (inf *Informer[T]) Run(ctx context.Context) error {
	if inf.started.Swap(true) {
		return errors.New("informer: Run called twice")
	}
	var wg sync.WaitGroup
	wg.Go(func() { inf.dispatch(ctx) })
	defer wg.Wait()
	if inf.fed != nil {
		inf.runFed(ctx)
		return nil
	}

	backoff := inf.cfg.Backoff
	rv := "" // "" means: list first
	for ctx.Err() == nil {
		if rv == "" {
			var err error
			if rv, err = inf.list(ctx); err != nil {
				if ctx.Err() != nil {
					break
				}
				d := backoff.Next()
				inf.log.Warn("list failed", "err", err, "retryIn", d)
				inf.sleep(ctx, d)
				continue
			}
			backoff.Reset()
		}

		delivered, err := inf.watch(ctx, &rv)
		switch {
		case ctx.Err() != nil:
			// Stopping.
		case client.IsGone(err):
			// The server no longer has history back to rv: start over.
			inf.log.Info("resourceVersion too old, listing again", "resourceVersion", rv, "err", err)
			rv = ""
		case err != nil:
			if delivered {
				backoff.Reset()
			}
			d := backoff.Next()
			inf.log.Warn("watch ended, reconnecting", "err", err, "resourceVersion", rv, "retryIn", d)
			inf.sleep(ctx, d)
		default:
			// The server closed the watch on time; carry on from rv.
			backoff.Reset()
		}
	}
	return nil
}

// list reads every page of the collection, reconciles the store with it
// and returns the list's resourceVersion.
func (inf *Informer[T]) list(ctx context.Context) (string, error) {
	opts := metav1.ListOptions{
		LabelSelector: inf.cfg.LabelSelector,
		FieldSelector: inf.cfg.FieldSelector,
		Limit:         inf.cfg.PageSize,
	}
	var items []*T
	var rv string
	for {
		page, err := inf.src.List(ctx, inf.cfg.Namespace, opts)
		if err != nil {
			return "", err
		}
		for i := range page.Items {
			items = append(items, &page.Items[i])
		}
		// Every page comes from the same snapshot, so any page's
		// resourceVersion is the list's.
		rv = page.ResourceVersion
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	if rv == "" {
		return "", errors.New("informer: list answer has no resourceVersion")
	}
	inf.replace(items)
	inf.lastRV.Store(rv)
	if !inf.hasListed {
		inf.hasListed = true
		inf.queue.push(notification[T]{kind: kindSynced})
		inf.armResync()
	}
	inf.log.Debug("listed", "count", len(items), "resourceVersion", rv)
	return rv, nil
}

// Replace makes the cache hold exactly items, as a list does: tests of
// a controller's driver fill its caches with it, without an apiserver.
func (inf *Informer[T]) Replace(items []*T) { inf.replace(items) }

// replace makes the store hold exactly items and queues the differences:
// adds and updates in list order, then deletes in key order. Objects whose
// resourceVersion did not change are not reported.
func (inf *Informer[T]) replace(items []*T) {
	seen := make(map[string]bool, len(items))
	for _, obj := range items {
		obj = inf.transform(obj)
		seen[KeyOf(obj)] = true
		old := inf.store.upsert(obj)
		switch {
		case old == nil:
			inf.queue.push(notification[T]{kind: kindAdd, new: obj})
		case resourceVersion(old) != resourceVersion(obj):
			inf.queue.push(notification[T]{kind: kindUpdate, old: old, new: obj})
		}
	}
	var gone []string
	for _, key := range inf.store.Keys() {
		if !seen[key] {
			gone = append(gone, key)
		}
	}
	slices.Sort(gone)
	for _, key := range gone {
		if old := inf.store.remove(key); old != nil {
			inf.queue.push(notification[T]{kind: kindDelete, old: old})
		}
	}
}

// watch streams changes from *rv on, applying each to the store and
// advancing *rv, until the stream ends. It reports whether any object or
// bookmark arrived, which shows that the connection was healthy.
func (inf *Informer[T]) watch(ctx context.Context, rv *string) (delivered bool, err error) {
	start := inf.cfg.Clock.Now()
	timeout := int64((inf.cfg.WatchTimeout + time.Duration(rand.Int64N(int64(inf.cfg.WatchTimeout)))) / time.Second)
	w, err := inf.src.Watch(ctx, inf.cfg.Namespace, metav1.ListOptions{
		LabelSelector:       inf.cfg.LabelSelector,
		FieldSelector:       inf.cfg.FieldSelector,
		ResourceVersion:     *rv,
		AllowWatchBookmarks: true,
		TimeoutSeconds:      &timeout,
	})
	if err != nil {
		return false, err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return delivered, ctx.Err()
		case <-inf.resyncC:
			inf.resync()
		case ev, ok := <-w.Events():
			if !ok {
				err := w.Err()
				if err == nil && !delivered && inf.cfg.Clock.Now().Sub(start) < minHealthyWatch {
					err = errors.New("watch closed at once without events")
				}
				return delivered, err
			}
			if ev.Type == watch.Error {
				return delivered, ev.Err()
			}
			delivered = true
			inf.apply(ev)
			*rv = resourceVersion(ev.Object)
			inf.lastRV.Store(*rv)
		}
	}
}

// SetTransform makes the informer apply fn to every object before it is
// cached and handed to handlers, as client-go's SetTransform: a reader
// that needs a few fields drops the rest (managedFields, annotations) so
// the cache holds less. fn may change the object in place and must keep
// its namespace, name and resourceVersion. Call it before Run.
func (inf *Informer[T]) SetTransform(fn func(*T) *T) { inf.transformFn = fn }

func (inf *Informer[T]) transform(obj *T) *T {
	if inf.transformFn == nil || obj == nil {
		return obj
	}
	return inf.transformFn(obj)
}

// apply puts one watch event into the store and queues it for handlers.
// Whether an object is new is decided by the store, not the event type, so
// a replayed ADDED for a known object becomes an update.
func (inf *Informer[T]) apply(ev client.Event[T]) {
	ev.Object = inf.transform(ev.Object)
	switch ev.Type {
	case watch.Added, watch.Modified:
		inf.feedUpsert(ev.Object)
	case watch.Deleted:
		inf.feedDelete(ev.Object)
	case watch.Bookmark:
		// Only moves the resourceVersion on.
	}
}

// resync queues OnUpdate(obj, obj) for every cached object.
func (inf *Informer[T]) resync() {
	for _, obj := range inf.store.List() {
		inf.queue.push(notification[T]{kind: kindUpdate, old: obj, new: obj})
	}
	inf.armResync()
}

func (inf *Informer[T]) armResync() {
	if inf.cfg.ResyncPeriod > 0 {
		inf.resyncC = inf.cfg.Clock.After(inf.cfg.ResyncPeriod)
	}
}

// sleep waits d, or less if ctx ends first.
func (inf *Informer[T]) sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-inf.cfg.Clock.After(d):
	}
}

// dispatch calls handlers for queued notifications, one at a time, until
// ctx is done. Running handlers here rather than in the watch loop keeps a
// slow handler from stalling the stream.
func (inf *Informer[T]) dispatch(ctx context.Context) {
	for {
		n, ok := inf.queue.pop(ctx)
		if !ok {
			return
		}
		switch n.kind {
		case kindSynced:
			close(inf.synced)
		case kindAdd:
			for _, h := range inf.handlers {
				if h.OnAdd != nil {
					h.OnAdd(n.new)
				}
			}
		case kindUpdate:
			for _, h := range inf.handlers {
				if h.OnUpdate != nil {
					h.OnUpdate(n.old, n.new)
				}
			}
		case kindDelete:
			for _, h := range inf.handlers {
				if h.OnDelete != nil {
					h.OnDelete(n.old)
				}
			}
		default:
			panic(fmt.Sprintf("informer: unknown notification %d", n.kind))
		}
	}
}

type notificationKind int

const (
	kindAdd notificationKind = iota
	kindUpdate
	kindDelete
	kindSynced // marker: everything from the first list was handed out
)

type notification[T any] struct {
	kind     notificationKind
	old, new *T
}

// queue is an unbounded FIFO between the watch loop and the dispatcher.
// Unbounded, because blocking the watch loop on a slow handler would let
// the server's send buffer fill and the watch be dropped.
type queue[T any] struct {
	mu     sync.Mutex
	items  []notification[T]
	signal chan struct{} // holds a token while items may be non-empty
}

func (q *queue[T]) push(n notification[T]) {
	q.mu.Lock()
	q.items = append(q.items, n)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// pop returns the oldest notification, waiting for one; false once ctx is
// done.
func (q *queue[T]) pop(ctx context.Context) (notification[T], bool) {
	for {
		if ctx.Err() != nil {
			return notification[T]{}, false
		}
		q.mu.Lock()
		if len(q.items) > 0 {
			n := q.items[0]
			q.items[0] = notification[T]{} // let the object be collected
			q.items = q.items[1:]
			q.mu.Unlock()
			return n, true
		}
		q.mu.Unlock()
		select {
		case <-q.signal:
		case <-ctx.Done():
			return notification[T]{}, false
		}
	}
}
