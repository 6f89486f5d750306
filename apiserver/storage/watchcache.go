package storage

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"weak"

	"github.com/google/btree"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Event is one change to one object, shared read-only by every watcher.
// Its encodings are computed once, on first use, and reused by all
// watchers that want the same form.
type Event struct {
	Type   watch.EventType // Added, Modified or Deleted (as etcd saw it)
	Rev    int64
	Object runtime.Object // the new object; for Deleted, the last state

	key      string
	cached   *cachedObject // the object's new cache entry (nil for Deleted)
	prevData []byte        // stored bytes before the change (Modified only)
	prevRev  int64
	store    *Store
	prevOnce sync.Once
	prev     runtime.Object

	fieldsOnce sync.Once
	fields     [2]fields.Set // of Object and of Prev()

	mu     sync.Mutex
	frames map[string][]byte
}

// Prev returns the object before a Modified event, decoded on first use
// (only selector-filtered watchers need it).
func (e *Event) Prev() runtime.Object {
	e.prevOnce.Do(func() {
		if e.prevData != nil {
			e.prev, _ = e.store.Decode(e.prevData, e.prevRev)
		}
	})
	return e.prev
}

// FieldSets returns the selectable fields of Object and of Prev() (nil
// when there is no previous object), computed with fn on first use. Every
// field-selector watcher of a resource passes the same fn, so a pod event
// seen by a hundred kubelets' watches builds its field sets once, not a
// hundred times.
func (e *Event) FieldSets(fn func(runtime.Object) fields.Set) (cur, prev fields.Set) {
	e.fieldsOnce.Do(func() {
		e.fields[0] = fn(e.Object)
		if e.Type == watch.Modified {
			if p := e.Prev(); p != nil {
				e.fields[1] = fn(p)
			}
		}
	})
	return e.fields[0], e.fields[1]
}

// Frame returns the encoding of this event for key, computing it with
// encode the first time. Watchers asking for the same key share bytes.
func (e *Event) Frame(key string, encode func() []byte) []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	if b, ok := e.frames[key]; ok {
		return b
	}
	b := encode()
	if e.frames == nil {
		e.frames = make(map[string][]byte, 2)
	}
	e.frames[key] = b
	return b
}

// Delivery is what a watcher receives: an event seen through the
// watcher's selector (its type may differ from the etcd event's), or a
// bookmark when Event is nil.
type Delivery struct {
	Type  watch.EventType
	Event *Event
	Rev   int64 // for bookmarks
}

// Filter decides how a watcher sees an event; it returns false to drop it.
type Filter func(ev *Event) (watch.EventType, bool)

// Watcher receives events from a WatchCache in revision order. Its
// deliveries queue in a slice that grows as they come, up to the cache's
// limit (a full watcher is closed): an idle watcher costs nothing, where a
// channel of that size would hold its buffer for its whole life.
type Watcher struct {
	id        int
	fromRev   int64
	filter    Filter
	bookmarks bool
	initial   []*Event
	cache     *WatchCache

	mu     sync.Mutex
	queue  []Delivery
	limit  int
	closed bool
	ready  chan struct{} // a token when the queue gains deliveries or the watcher closes
	// Overflowed is set when the watcher fell too far behind and was
	// closed; read it once Take said the watcher is closed.
	Overflowed bool
}

// Initial returns the backlog events the watcher must see before its
// queue: those after its starting revision that the cache still held.
func (w *Watcher) Initial() []*Event { return w.initial }

// Filter returns the watcher's filter.
func (w *Watcher) Filter() Filter { return w.filter }

// Ready has a value when Take has something to say: deliveries, or that
// the watcher closed.
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// Take returns the queued deliveries, in order, and whether the watcher
// is still open; once it is closed (by Stop, or for overflow) the
// deliveries queued before are still returned, with open false. buf is
// the previous batch, whose array the next one reuses.
func (w *Watcher) Take(buf []Delivery) (batch []Delivery, open bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	batch, w.queue = w.queue, buf[:0]
	return batch, !w.closed
}

// Next waits for the next delivery; false once the watcher is closed and
// drained, or ctx ended. For readers that take one at a time (tests).
func (w *Watcher) Next(ctx context.Context) (Delivery, bool) {
	for {
		w.mu.Lock()
		if len(w.queue) > 0 {
			d := w.queue[0]
			w.queue = w.queue[1:]
			w.mu.Unlock()
			return d, true
		}
		closed := w.closed
		w.mu.Unlock()
		if closed {
			return Delivery{}, false
		}
		select {
		case <-w.ready:
		case <-ctx.Done():
			return Delivery{}, false
		}
	}
}

// deliver queues d, or closes a watcher whose queue is full; false if the
// watcher is (now) closed.
func (w *Watcher) deliver(d Delivery) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	if len(w.queue) >= w.limit {
		w.Overflowed, w.closed = true, true
	} else {
		w.queue = append(w.queue, d)
	}
	w.signal()
	return !w.closed
}

// close ends the watcher; what it queued can still be taken.
func (w *Watcher) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closed = true
		w.signal()
	}
}

// signal leaves a token in ready unless one is already there. w.mu held.
func (w *Watcher) signal() {
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// Stop unregisters the watcher.
func (w *Watcher) Stop() {
	w.cache.remove(w)
}

// WatchCache holds the current objects of one resource and a window of
// recent events, and fans the events out to watchers. It keeps a single
// etcd watch whatever the number of watchers, and never blocks on a slow
// watcher: one whose buffer is full is closed and will re-watch or
// re-list. Lists are answered from its objects (list.go).
type WatchCache struct {
	store   *Store
	size    int
	bufSize int

	mu          sync.RWMutex
	objects     *btree.BTreeG[*cachedObject] // every object at revision latest, by key
	ring        []*Event
	head, count int
	windowStart int64         // a watch from rev >= windowStart can be served
	latest      int64         // the newest revision the cache has seen
	advanced    chan struct{} // closed (and replaced) when latest moves
	watchers    map[int]*Watcher
	nextID      int
	ready       chan struct{}
	// watchCtx is the etcd watch's context: progress requests must go
	// to the gRPC stream the watch uses, which etcd picks by its metadata.
	watchCtx context.Context
}

func newWatchCache(s *Store, size int) *WatchCache {
	if size <= 0 {
		size = 1000
	}
	// The ring grows to size as events come: most resources see few, and
	// a full ring of every resource would cost megabytes at start.
	return &WatchCache{store: s, size: size, bufSize: 1024, ring: make([]*Event, min(size, 64)),
		objects: newObjectTree(), advanced: make(chan struct{}),
		watchers: map[int]*Watcher{}, ready: make(chan struct{})}
}

// LatestRevision returns the newest revision the cache has seen.
func (c *WatchCache) LatestRevision() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.latest
}

// start reads every object at one revision, then follows etcd from there.
func (c *WatchCache) start(ctx context.Context) error {
	objects, rev, err := c.load(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.objects = objects
	c.windowStart, c.latest = rev, rev
	c.watchCtx = clientv3.WithRequireLeader(ctx)
	c.mu.Unlock()
	close(c.ready)
	go c.run(ctx, rev)
	return nil
}

// run follows etcd from rev, restarting the etcd watch if it breaks.
func (c *WatchCache) run(ctx context.Context, rev int64) {
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(c.watchCtx)
		wch := c.store.client.Watch(wctx, c.store.prefix, clientv3.WithPrefix(), clientv3.WithPrevKV(),
			clientv3.WithRev(rev+1), clientv3.WithProgressNotify())
		for resp := range wch {
			if err := resp.Err(); err != nil {
				slog.Warn("etcd watch broke", "prefix", c.store.prefix, "err", err)
				if resp.CompactRevision > 0 {
					// We fell behind compaction: the events in between are
					// gone, so read every object again.
					rev = c.reload(ctx)
				}
				break
			}
			if resp.IsProgressNotify() {
				c.progress(resp.Header.Revision)
				continue
			}
			for _, e := range resp.Events {
				c.add(c.toEvent(e))
				rev = e.Kv.ModRevision
			}
		}
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	c.closeAll()
}

// toEvent decodes an etcd event. Its Object is nil when etcd holds
// something undecodable: the cache's objects still follow it.
func (c *WatchCache) toEvent(e *clientv3.Event) *Event {
	ev := &Event{Rev: e.Kv.ModRevision, store: c.store, key: string(e.Kv.Key)}
	var err error
	switch {
	case e.Type == mvccpb.DELETE:
		ev.Type = watch.Deleted
		if e.PrevKv != nil {
			ev.Object, err = c.store.Decode(e.PrevKv.Value, e.Kv.ModRevision)
		}
	case e.IsCreate():
		ev.Type = watch.Added
		ev.Object, err = c.store.Decode(e.Kv.Value, e.Kv.ModRevision)
	default:
		ev.Type = watch.Modified
		ev.Object, err = c.store.Decode(e.Kv.Value, e.Kv.ModRevision)
		if e.PrevKv != nil {
			ev.prevData, ev.prevRev = e.PrevKv.Value, e.PrevKv.ModRevision
		}
	}
	if ev.Type != watch.Deleted {
		ev.cached = newCachedObject(ev.key, e.Kv.Value, ev.Rev, ev.Object)
		ev.cached.event = weak.Make(ev)
	}
	if err != nil || ev.Object == nil {
		slog.Error("undecodable object in etcd", "key", ev.key, "err", err)
		ev.Object = nil
	}
	return ev
}

// add applies an event to the objects, appends it to the window and
// hands it to every watcher.
func (c *WatchCache) add(ev *Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.cached != nil {
		c.objects.ReplaceOrInsert(ev.cached)
	} else {
		c.objects.Delete(&cachedObject{key: ev.key})
	}
	c.advance(ev.Rev)
	if ev.Object == nil {
		return // undecodable: no watcher can be sent it
	}
	if c.count == len(c.ring) && len(c.ring) < c.size {
		grown := make([]*Event, min(2*len(c.ring), c.size))
		n := copy(grown, c.ring[c.head:])
		copy(grown[n:], c.ring[:c.head])
		c.ring, c.head = grown, 0
	}
	idx := (c.head + c.count) % len(c.ring)
	if c.count == len(c.ring) {
		// The oldest event falls out of the window.
		c.windowStart = c.ring[c.head].Rev
		c.head = (c.head + 1) % len(c.ring)
	} else {
		c.count++
	}
	c.ring[idx] = ev
	for _, w := range c.watchers {
		if ev.Rev <= w.fromRev {
			continue
		}
		typ, ok := w.filter(ev)
		if !ok {
			continue
		}
		c.send(w, Delivery{Type: typ, Event: ev})
	}
}

// send must be called with c.mu held. A watcher too slow to keep up is
// closed rather than let it block everyone else or grow without bound.
func (c *WatchCache) send(w *Watcher, d Delivery) {
	if !w.deliver(d) {
		delete(c.watchers, w.id)
	}
}

func (c *WatchCache) progress(rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advance(rev)
}

// advance moves latest to rev and wakes the lists waiting for it. c.mu
// must be held.
func (c *WatchCache) advance(rev int64) {
	if rev <= c.latest {
		return
	}
	c.latest = rev
	close(c.advanced)
	c.advanced = make(chan struct{})
}

// Bookmark sends every bookmark-enabled watcher the latest revision. It
// goes through the same channel as events, so it never overtakes one.
func (c *WatchCache) Bookmark() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range c.watchers {
		if w.bookmarks && c.latest > w.fromRev {
			c.send(w, Delivery{Type: watch.Bookmark, Rev: c.latest})
		}
	}
}

// reload reads every object again after etcd compacted past the events
// the cache had not seen yet, forgets the window and closes every watcher
// so that its client re-lists. It returns the revision read.
func (c *WatchCache) reload(ctx context.Context) int64 {
	for {
		objects, rev, err := c.load(ctx)
		if err == nil {
			c.mu.Lock()
			c.objects = objects
			c.head, c.count = 0, 0
			c.windowStart = rev
			c.advance(rev)
			c.mu.Unlock()
			c.closeAll()
			return rev
		}
		slog.Warn("re-reading the watch cache's objects", "prefix", c.store.prefix, "err", err)
		select {
		case <-ctx.Done():
			return c.LatestRevision()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *WatchCache) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, w := range c.watchers {
		delete(c.watchers, id)
		w.close()
	}
}

func (c *WatchCache) remove(w *Watcher) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.watchers, w.id)
	w.close()
}

// Watch registers a watcher for events after fromRev. It answers 410 Gone
// when fromRev is older than the window the cache still holds.
func (c *WatchCache) Watch(fromRev int64, filter Filter, bookmarks bool) (*Watcher, error) {
	<-c.ready
	c.mu.Lock()
	defer c.mu.Unlock()
	if fromRev < c.windowStart {
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", fromRev, c.windowStart))
	}
	w := &Watcher{id: c.nextID, fromRev: fromRev, filter: filter, bookmarks: bookmarks,
		limit: c.bufSize, ready: make(chan struct{}, 1), cache: c}
	c.nextID++
	for i := 0; i < c.count; i++ {
		ev := c.ring[(c.head+i)%len(c.ring)]
		if ev.Rev <= fromRev {
			continue
		}
		w.initial = append(w.initial, ev)
	}
	if len(w.initial) > 0 {
		w.fromRev = c.latest // channel events start after the backlog
	}
	c.watchers[w.id] = w
	return w, nil
}

// ParseRV parses a resourceVersion string; "" and "0" give 0.
func ParseRV(rv string) (int64, error) {
	if rv == "" || rv == "0" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rv))
	}
	return n, nil
}
