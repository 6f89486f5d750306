package storage

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Objects that expire (Events, after kube-apiserver's --event-ttl): each
// create and update attaches the object's key to an etcd lease, and etcd
// deletes the key when the lease runs out; the watch cache sees a DELETED
// event as for any delete. As kube-apiserver does, one lease serves every
// write of a short window (leaseReuse), so a burst of events costs one
// LeaseGrant instead of one per event: the lease is granted for ttl plus
// that window, and an object lives between ttl and ttl+window after its
// last write.
//
//	create/update ─▶ lease still valid for ttl from now, and < leaseMaxObjects on it? ─yes─▶ reuse
//	                    │no
//	                    ▼
//	                 Grant(ttl + reuse window) ─▶ remember its expiry ─▶ Put(key, value, WithLease)

// leaseReuse bounds how long one lease is handed out: the window is 5% of
// the TTL, at most a minute (kube-apiserver's defaults).
const (
	leaseReusePercent = 0.05
	leaseReuseMax     = time.Minute
	// leaseMaxObjects bounds the keys one lease carries: its expiry
	// deletes them all in one etcd transaction.
	leaseMaxObjects = 1000
)

// ttlLeases hands out the lease a write attaches its key to.
type ttlLeases struct {
	client *clientv3.Client
	ttl    time.Duration
	now    func() time.Time

	mu       sync.Mutex
	id       clientv3.LeaseID
	expires  time.Time
	attached int
}

// reuseWindow is how long after its grant a lease is still handed out.
func (l *ttlLeases) reuseWindow() time.Duration {
	return min(time.Duration(leaseReusePercent*float64(l.ttl)), leaseReuseMax)
}

// lease returns the lease the next write attaches to, granting a new one
// when the current one would end before ttl from now or carries enough.
func (l *ttlLeases) lease(ctx context.Context) (clientv3.LeaseID, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if l.id != 0 && now.Add(l.ttl).Before(l.expires) && l.attached < leaseMaxObjects {
		l.attached++
		return l.id, nil
	}
	life := l.ttl + l.reuseWindow()
	// etcd counts a lease's TTL in whole seconds.
	seconds := int64((life + time.Second - 1) / time.Second)
	resp, err := l.client.Grant(ctx, seconds)
	if err != nil {
		return 0, storageError(err)
	}
	l.id, l.expires, l.attached = resp.ID, now.Add(time.Duration(seconds)*time.Second), 1
	return l.id, nil
}

// SetTTL makes every object this store writes from now on expire ttl
// (to ttl plus a minute) after its last create or update. Call it before
// serving.
func (s *Store) SetTTL(ttl time.Duration) {
	s.ttl = &ttlLeases{client: s.client, ttl: ttl, now: time.Now}
}

// putObject is the put that writes an object under key, attached to a
// lease when the store's objects expire (lease is 0 otherwise).
func (s *Store) putObject(ctx context.Context, key string, data []byte) (put clientv3.Op, lease clientv3.LeaseID, err error) {
	if s.ttl == nil {
		return clientv3.OpPut(key, string(data)), 0, nil
	}
	if lease, err = s.ttl.lease(ctx); err != nil {
		return clientv3.Op{}, 0, err
	}
	return clientv3.OpPut(key, string(data), clientv3.WithLease(lease)), lease, nil
}

// leaseLost reports whether a write failed with err because etcd no
// longer has its lease (revoked behind our back); the lease is then
// forgotten, so the write, tried again, is granted another.
func (s *Store) leaseLost(err error, lease clientv3.LeaseID) bool {
	if lease == 0 || !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return false
	}
	s.ttl.mu.Lock()
	defer s.ttl.mu.Unlock()
	if s.ttl.id == lease {
		s.ttl.id = 0
	}
	return true
}

// ExpireUnleased attaches the objects an earlier server stored without a
// lease (before this store's objects expired) to one lease of the store's
// TTL, so they too are gone a TTL after this start instead of never. It
// returns how many it attached; an object changed meanwhile is left to
// the write that changed it, which attached it already.
func (s *Store) ExpireUnleased(ctx context.Context) (int, error) {
	if s.ttl == nil {
		return 0, nil
	}
	n := 0
	// Page by page: an old cluster may hold many. (A keys-only read would
	// not say which keys have a lease.)
	from, end := s.prefix, clientv3.GetPrefixRangeEnd(s.prefix)
	for {
		resp, err := s.client.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(expirePage))
		if err != nil {
			return n, storageError(err)
		}
		for _, kv := range resp.Kvs {
			if kv.Lease != 0 {
				continue
			}
			lease, err := s.ttl.lease(ctx)
			if err != nil {
				return n, err
			}
			key := string(kv.Key)
			txn, err := s.client.Txn(ctx).
				If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).
				Then(clientv3.OpPut(key, "", clientv3.WithIgnoreValue(), clientv3.WithLease(lease))).
				Commit()
			if err != nil {
				return n, storageError(err)
			}
			if txn.Succeeded {
				n++
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return n, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// expirePage is how many objects ExpireUnleased reads at a time.
var expirePage int64 = 500
