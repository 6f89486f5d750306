package apiserver

import (
	"context"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik/apiserver/storage"
)

// view is an in-process reader of one resource that follow keeps
// current: the admission caches, the node authorizer's graph.
type view interface {
	// reset replaces the view's content with a full list at rev.
	reset(items []runtime.Object, rev int64)
	// apply takes one event after the list, in revision order.
	apply(ev *storage.Event)
	// unsync marks the view stale until the next reset.
	unsync()
}

// follow fills v from the store's watch cache and keeps it current until
// ctx ends: list once, then follow the events; when the watcher closes
// (too slow, etcd compacted past the cache) list again. It returns once
// the first list is in.
func follow(ctx context.Context, name string, store *storage.Store, v view) error {
	w, err := relist(ctx, store, v)
	if err != nil {
		return err
	}
	go func() {
		for {
			var batch []storage.Delivery
			for open := true; open; {
				select {
				case <-w.Ready():
				case <-ctx.Done():
					w.Stop()
					return
				}
				batch, open = w.Take(batch)
				for _, d := range batch {
					if d.Event != nil {
						v.apply(d.Event)
					}
				}
			}
			w.Stop()
			v.unsync()
			for {
				if ctx.Err() != nil {
					return
				}
				if w, err = relist(ctx, store, v); err == nil {
					break
				}
				slog.Warn("apiserver view relist failed", "view", name, "err", err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
			}
		}
	}()
	return nil
}

// relist resets v from a fresh list and returns a watcher for the changes
// after it.
func relist(ctx context.Context, store *storage.Store, v view) (*storage.Watcher, error) {
	list, err := store.List(ctx, storage.ListOptions{})
	if err != nil {
		return nil, err
	}
	w, err := store.Cache().Watch(list.ResourceVersion, func(ev *storage.Event) (watch.EventType, bool) { return ev.Type, true }, false)
	if err != nil {
		return nil, err
	}
	v.reset(list.Items, list.ResourceVersion)
	for _, ev := range w.Initial() {
		v.apply(ev)
	}
	return w, nil
}
