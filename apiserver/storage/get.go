package storage

import (
	"context"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// ServeGet answers a GET of one object as kube-apiserver's watch cache
// does, by its resourceVersion parameter:
//
//	""  the newest: a read from etcd
//	"0" any version: the watch cache as it is (no etcd round trip)
//	"N" not older than N: the watch cache once it has seen N (at most 3s,
//	    else 504 "Too large resource version")
func (s *Store) ServeGet(ctx context.Context, namespace, name, resourceVersion string) (runtime.Object, error) {
	if resourceVersion == "" {
		return s.Get(ctx, namespace, name)
	}
	rv, err := ParseRV(resourceVersion)
	if err != nil {
		return nil, err
	}
	c := s.cache
	if rv > 0 && !c.waitFresh(ctx, rv, freshTimeout) {
		if err := ctx.Err(); err != nil {
			return nil, storageError(err)
		}
		return nil, tooLargeRV(rv, c.LatestRevision())
	}
	select {
	case <-c.ready:
	case <-ctx.Done():
		return nil, storageError(ctx.Err())
	}
	c.mu.RLock()
	o, ok := c.objects.Get(&cachedObject{key: s.Key(namespace, name)})
	c.mu.RUnlock()
	if !ok {
		return nil, apierrors.NewNotFound(s.gr, name)
	}
	return s.Decode(o.data, o.rev)
}

// cachedRead answers a read of key from the watch cache, as etcd would
// (the bytes it stores and their ModRevision), or nil when the cache is
// not loaded yet or holds no such key. It may be behind etcd. With it
// comes the object decoded from those bytes while the event that brought
// them is still in memory (nil once it is not): shared with every
// watcher, so read only.
func (c *WatchCache) cachedRead(key string) (*clientv3.GetResponse, runtime.Object) {
	select {
	case <-c.ready:
	default:
		return nil, nil
	}
	c.mu.RLock()
	o, ok := c.objects.Get(&cachedObject{key: key})
	c.mu.RUnlock()
	if !ok {
		return nil, nil
	}
	resp := &clientv3.GetResponse{Kvs: []*mvccpb.KeyValue{{Key: []byte(key), Value: o.data, ModRevision: o.rev}}}
	if ev := o.event.Value(); ev != nil {
		return resp, ev.Object
	}
	return resp, nil
}
