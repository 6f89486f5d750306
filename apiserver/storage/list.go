package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"
	"weak"

	"github.com/google/btree"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/encoding/protowire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// A LIST is answered as kube-apiserver's cacher answers it (its
// delegator): from the watch cache's objects unless only etcd can.
//
//	resourceVersionMatch=Exact, or a limit with resourceVersion=N (legacy exact) ─▶ etcd at revision N
//	continue=TOKEN ─▶ etcd at the token's revision (410 once compacted)
//	resourceVersion="" (consistent) ─▶ etcd's current revision (one key read) ─▶ cache waits
//	      until it has seen that revision (≤ freshTimeout) ─▶ cache; not in time ─▶ etcd
//	resourceVersion="0" (any) ─▶ cache as it is
//	resourceVersion=N, NotOlderThan ─▶ cache once it has seen N (504 "Too large resource version" if not in time)
//
// The cache answers at its latest revision, in key order as etcd does; a
// page's continue token names that revision and the next key, so the
// following pages read etcd at the same revision.

// freshTimeout bounds how long a list waits for the cache to catch up
// (upstream's 3s).
const freshTimeout = 3 * time.Second

// cachedObject is one object in the watch cache, kept as etcd stores it:
// a list decodes objects as it writes them, so the cache costs the
// stored bytes, not decoded objects.
type cachedObject struct {
	key  string
	data []byte
	rev  int64 // ModRevision: the object's resourceVersion
	// pbSize is the size of the object's protobuf with its
	// resourceVersion (0 when it has none), so that a protobuf list can
	// write its length before its items.
	pbSize int
	// event brought data, and holds it decoded while the watch window
	// or a watcher keeps it: an update then starts from that object
	// instead of decoding data again. Weak, so that the cache holds
	// only the bytes of objects nobody wrote lately.
	event weak.Pointer[Event]
}

func newObjectTree() *btree.BTreeG[*cachedObject] {
	return btree.NewG(32, func(a, b *cachedObject) bool { return a.key < b.key })
}

// newCachedObject makes a cache entry; obj is the decoded object (with its
// resourceVersion), or nil when it did not decode.
func newCachedObject(key string, data []byte, rev int64, obj runtime.Object) *cachedObject {
	o := &cachedObject{key: key, data: data, rev: rev}
	if sized, ok := obj.(interface{ Size() int }); ok {
		o.pbSize = sized.Size()
	}
	return o
}

// load reads every object under the store's prefix at one revision.
func (c *WatchCache) load(ctx context.Context) (*btree.BTreeG[*cachedObject], int64, error) {
	objects := newObjectTree()
	prefix := c.store.prefix
	end := clientv3.GetPrefixRangeEnd(prefix)
	start, rev := prefix, int64(0)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(1000)}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := c.store.client.Get(ctx, start, opts...)
		if err != nil {
			return nil, 0, storageError(err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			obj, err := c.store.Decode(kv.Value, kv.ModRevision)
			if err != nil {
				slog.Error("undecodable object in etcd", "key", string(kv.Key), "err", err)
			}
			objects.ReplaceOrInsert(newCachedObject(string(kv.Key), kv.Value, kv.ModRevision, obj))
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return objects, rev, nil
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// snapshot returns the objects at the latest revision. The copy is lazy
// (copy on write): later events do not change it, and it costs nothing
// until they do.
func (c *WatchCache) snapshot() (*btree.BTreeG[*cachedObject], int64) {
	c.mu.Lock() // Clone changes the tree's copy-on-write state
	defer c.mu.Unlock()
	return c.objects.Clone(), c.latest
}

// waitFresh waits until the cache has seen revision rev, for at most
// timeout. When no event is coming, a progress request makes etcd report
// the revision the watch has reached.
func (c *WatchCache) waitFresh(ctx context.Context, rev int64, timeout time.Duration) bool {
	<-c.ready
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	requested := false
	for {
		c.mu.RLock()
		latest, advanced := c.latest, c.advanced
		c.mu.RUnlock()
		if latest >= rev {
			return true
		}
		if !requested {
			_ = c.store.client.RequestProgress(c.watchCtx)
			requested = true
		}
		select {
		case <-advanced:
		case <-tick.C:
			requested = false // etcd answers only once every watch on the stream is synced: ask again
		case <-deadline.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// Page is the answer to a LIST: its list metadata and its items, which
// are read one at a time while they are written out when the list is
// large (Each).
type Page struct {
	ResourceVersion    int64
	Continue           string
	RemainingItemCount *int64
	// FromCache says the watch cache answered (else etcd).
	FromCache bool

	items []runtime.Object // a page read in full (a limit or a selector)
	// each yields the items one at a time when they were not read in full.
	each func(yield func(runtime.Object) error) error
	// pbSize is the items' protobuf size, when known without encoding them.
	pbSize int
	sized  bool
	// eachProtobuf yields the items' protobuf made from the stored bytes
	// (a whole list from the cache).
	eachProtobuf func(yield func([]byte) error) error
}

// Each calls yield with every item in key order, stopping at the first
// error.
func (p *Page) Each(yield func(runtime.Object) error) error {
	if p.each != nil {
		return p.each(yield)
	}
	for _, obj := range p.items {
		if err := yield(obj); err != nil {
			return err
		}
	}
	return nil
}

// EachProtobuf returns, for a whole list from the cache, a function that
// calls yield with every item's protobuf in key order, made from the
// stored bytes without decoding them (each is what Marshal gives for the
// item Each yields); nil otherwise. yield must not keep the slice.
func (p *Page) EachProtobuf() func(yield func([]byte) error) error { return p.eachProtobuf }

// ProtobufSize returns the size of the items as a Kubernetes list's
// protobuf holds them (its field 2, repeated: a tag, a length and the
// object's protobuf, each), when the cache knows it without reading them
// (a whole list from the cache).
func (p *Page) ProtobufSize() (int, bool) { return p.pbSize, p.sized }

// ServeList answers a LIST request, from the watch cache where
// kube-apiserver's does, else from etcd (see the top of this file).
func (s *Store) ServeList(ctx context.Context, opts ListOptions) (*Page, error) {
	rv, err := ParseRV(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if !fromCache(opts) {
		return s.listEtcd(ctx, opts)
	}
	c := s.cache
	if opts.ResourceVersion == "" {
		// A consistent read: the cache must have seen every write that
		// etcd committed before this request.
		current, err := s.CurrentRevision(ctx)
		if err != nil {
			return nil, err
		}
		if !c.waitFresh(ctx, current, freshTimeout) {
			if err := ctx.Err(); err != nil {
				return nil, storageError(err)
			}
			slog.Warn("watch cache behind etcd: listing from etcd", "prefix", s.prefix, "want", current, "have", c.LatestRevision())
			return s.listEtcd(ctx, opts)
		}
	} else if rv > 0 && !c.waitFresh(ctx, rv, freshTimeout) {
		if err := ctx.Err(); err != nil {
			return nil, storageError(err)
		}
		return nil, tooLargeRV(rv, c.LatestRevision())
	}
	return c.list(opts), nil
}

// fromCache reports whether the watch cache may answer a list, as
// upstream's delegator decides.
func fromCache(opts ListOptions) bool {
	switch opts.ResourceVersionMatch {
	case metav1.ResourceVersionMatchExact:
		return false
	case metav1.ResourceVersionMatchNotOlderThan:
		return true
	}
	if opts.Continue != "" {
		return false
	}
	// A limit with resourceVersion=N is the legacy "exact" match.
	return !(opts.Limit > 0 && opts.ResourceVersion != "" && opts.ResourceVersion != "0")
}

// exactRevision returns the revision an etcd list must read at (0: the
// latest): resourceVersionMatch=Exact, or the legacy exact match.
func exactRevision(opts ListOptions) (int64, error) {
	exact := opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact ||
		opts.ResourceVersionMatch == "" && opts.Limit > 0
	if !exact || opts.Continue != "" {
		return 0, nil
	}
	return ParseRV(opts.ResourceVersion)
}

// list answers from the cache's objects at its latest revision.
func (c *WatchCache) list(opts ListOptions) *Page {
	objects, rev := c.snapshot()
	prefix := c.store.listPrefix(opts.Namespace)
	from, to := &cachedObject{key: prefix}, &cachedObject{key: clientv3.GetPrefixRangeEnd(prefix)}
	page := &Page{ResourceVersion: rev, FromCache: true}
	if opts.Limit == 0 && opts.Match == nil {
		// The whole list: items are decoded as they are written out.
		page.sized = true
		objects.AscendRange(from, to, func(o *cachedObject) bool {
			page.pbSize += protowire.SizeTag(2) + protowire.SizeBytes(o.pbSize)
			page.sized = page.sized && o.pbSize > 0
			return true
		})
		page.each = func(yield func(runtime.Object) error) error {
			var err error
			objects.AscendRange(from, to, func(o *cachedObject) bool {
				var obj runtime.Object
				if obj, err = c.store.Decode(o.data, o.rev); err == nil {
					err = yield(obj)
				}
				return err == nil
			})
			return err
		}
		page.eachProtobuf = func(yield func([]byte) error) error {
			var err error
			var buf []byte
			objects.AscendRange(from, to, func(o *cachedObject) bool {
				// Stored bytes holding a field this build's types do not
				// know (written by another version) differ in size from
				// the decoded object's encoding: that one is decoded.
				var ok bool
				if buf, ok = appendItemProtobuf(buf[:0], o.data, o.rev); !ok || len(buf) != o.pbSize {
					buf, err = c.store.decodeProtobuf(o.data, o.rev)
				}
				if err == nil {
					err = yield(buf)
				}
				return err == nil
			})
			return err
		}
		return page
	}
	// A page or a selection: read the items in full (at most a limit's
	// worth, or the matches).
	var err error
	var last string
	var remaining int64
	objects.AscendRange(from, to, func(o *cachedObject) bool {
		if opts.Limit > 0 && int64(len(page.items)) >= opts.Limit {
			if page.Continue == "" {
				page.Continue = encodeContinue(continueToken{RV: rev, Start: last + "\x00"})
			}
			remaining++
			return opts.Match == nil // only an unfiltered page counts what is left
		}
		var obj runtime.Object
		if obj, err = c.store.Decode(o.data, o.rev); err != nil {
			return false
		}
		if opts.Match == nil || opts.Match(obj) {
			page.items = append(page.items, obj)
			last = o.key
		}
		return true
	})
	if err != nil {
		page.each = func(func(runtime.Object) error) error { return err }
	}
	if page.Continue != "" && opts.Match == nil {
		page.RemainingItemCount = &remaining
	}
	return page
}

// listEtcd answers from etcd: a page as List reads it, or a whole list
// read in batches of 1000 while it is written out.
func (s *Store) listEtcd(ctx context.Context, opts ListOptions) (*Page, error) {
	if opts.Limit > 0 || opts.Continue != "" {
		res, err := s.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		return &Page{ResourceVersion: res.ResourceVersion, Continue: res.Continue,
			RemainingItemCount: res.RemainingItemCount, items: res.Items}, nil
	}
	rev, err := exactRevision(opts)
	if err != nil {
		return nil, err
	}
	prefix := s.listPrefix(opts.Namespace)
	end := clientv3.GetPrefixRangeEnd(prefix)
	get := func(start string) (*clientv3.GetResponse, error) {
		defer s.observe(opList, time.Now())
		getOpts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(1000)}
		if rev > 0 {
			getOpts = append(getOpts, clientv3.WithRev(rev))
		}
		resp, err := s.client.Get(ctx, start, getOpts...)
		if err != nil {
			return nil, listError(err, rev, false)
		}
		return resp, nil
	}
	first, err := get(prefix)
	if err != nil {
		return nil, err
	}
	if rev == 0 {
		rev = first.Header.Revision
	}
	page := &Page{ResourceVersion: rev}
	page.each = func(yield func(runtime.Object) error) error {
		resp := first
		for {
			for _, kv := range resp.Kvs {
				obj, err := s.Decode(kv.Value, kv.ModRevision)
				if err != nil {
					return err
				}
				if opts.Match != nil && !opts.Match(obj) {
					continue
				}
				if err := yield(obj); err != nil {
					return err
				}
			}
			if !resp.More || len(resp.Kvs) == 0 {
				return nil
			}
			if resp, err = get(string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"); err != nil {
				return err
			}
		}
	}
	return page, nil
}

// listError maps etcd's answer to a list read at revision rev.
func listError(err error, rev int64, paging bool) error {
	switch {
	case errors.Is(err, rpctypes.ErrCompacted) && paging:
		return apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
	case errors.Is(err, rpctypes.ErrCompacted):
		return apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
	case errors.Is(err, rpctypes.ErrFutureRev):
		return tooLargeRV(rev, 0)
	}
	return storageError(err)
}

// tooLargeRV is upstream's answer to a resourceVersion the cache (or
// etcd) has not reached: 504 with the cause ResourceVersionTooLarge, which
// clients retry.
func tooLargeRV(rev, current int64) error {
	msg := "Too large resource version: " + strconv.FormatInt(rev, 10)
	if current > 0 {
		msg += fmt.Sprintf(", current: %d", current)
	}
	err := apierrors.NewTimeoutError(msg, 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}
