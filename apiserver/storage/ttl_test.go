package storage

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
)

// leaseOf returns the lease the stored key of ns/name is attached to.
func (s *podStore) leaseOf(t *testing.T, name string) clientv3.LeaseID {
	t.Helper()
	resp, err := s.client.Get(ctxT(t), s.Key("ns", name))
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("reading %s: %v (%d keys)", name, err, len(resp.Kvs))
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease)
}

func TestObjectsExpire(t *testing.T) {
	s := newPodStore(t, nil, 100)
	now := time.Unix(1_000_000, 0)
	s.SetTTL(time.Hour)
	s.ttl.now = func() time.Time { return now }

	s.create(t, makePod("a").Obj())
	s.create(t, makePod("b").Obj())
	first := s.leaseOf(t, "a")
	if first == 0 || s.leaseOf(t, "b") != first {
		t.Fatalf("a on lease %x, b on %x: want one lease for writes a moment apart", first, s.leaseOf(t, "b"))
	}
	ttl, err := s.client.TimeToLive(ctxT(t), first)
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Duration(ttl.GrantedTTL) * time.Second; got != time.Hour+time.Minute {
		t.Fatalf("lease granted for %v, want the TTL plus the minute it is handed out for", got)
	}

	t.Run("an update after the reuse window moves the object to a new lease", func(t *testing.T) {
		now = now.Add(time.Minute + time.Second)
		s.relabel(t, "a", "k", "v")
		if l := s.leaseOf(t, "a"); l == first || l == 0 {
			t.Fatalf("a still on lease %x after its update, want a new one", l)
		}
		if s.leaseOf(t, "b") != first {
			t.Fatal("b moved without being written")
		}
	})

	t.Run("the lease's end deletes its objects, and the watch cache sees it", func(t *testing.T) {
		w, err := s.Cache().Watch(s.Cache().LatestRevision(), everything, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.client.Revoke(ctxT(t), first); err != nil { // what its expiry does, now
			t.Fatal(err)
		}
		if _, err := s.Get(ctxT(t), "ns", "b"); !apierrors.IsNotFound(err) {
			t.Fatalf("b after its lease ended: %v, want NotFound", err)
		}
		// The cache may still be catching up with the writes above (under
		// load, even with the creations): skip them.
		for {
			d, ok := w.Next(ctxT(t))
			if !ok {
				t.Fatal("watch closed before b's DELETED")
			}
			name := d.Event.Object.(*corev1.Pod).Name
			if d.Type == watch.Deleted && name == "b" {
				break
			}
			if d.Type == watch.Deleted || name == "b" && d.Type != watch.Added {
				t.Fatalf("watch saw %s of %s, want b DELETED", d.Type, name)
			}
		}
		if _, err := s.Get(ctxT(t), "ns", "a"); err != nil {
			t.Fatalf("a went with b's lease: %v", err)
		}
	})

	t.Run("a write whose lease is gone is granted another", func(t *testing.T) {
		s.ttl.id, s.ttl.expires = first, now.Add(2*time.Hour) // as if still handed out
		s.create(t, makePod("c").Obj())
		if l := s.leaseOf(t, "c"); l == first || l == 0 {
			t.Fatalf("c on lease %x, want a live one", l)
		}
		s.ttl.id, s.ttl.expires = first, now.Add(2*time.Hour)
		s.relabel(t, "c", "k", "v")
		if l := s.leaseOf(t, "c"); l == first || l == 0 {
			t.Fatalf("updated c on lease %x, want a live one", l)
		}
	})
}

func TestExpireUnleased(t *testing.T) {
	s := newPodStore(t, nil, 100)
	defer func(page int64) { expirePage = page }(expirePage)
	expirePage = 2 // the old objects fill more than a page
	for _, name := range []string{"old", "old2", "old3"} {
		s.create(t, makePod(name).Obj()) // written before objects expired
	}
	if n, err := s.ExpireUnleased(ctxT(t)); n != 0 || err != nil {
		t.Fatalf("without a TTL: %d attached, %v", n, err)
	}
	s.SetTTL(time.Hour)
	s.create(t, makePod("new").Obj())
	newLease := s.leaseOf(t, "new")
	n, err := s.ExpireUnleased(ctxT(t))
	if err != nil || n != 3 {
		t.Fatalf("%d attached, %v; want the three old objects", n, err)
	}
	if s.leaseOf(t, "old") == 0 || s.leaseOf(t, "old3") == 0 || s.leaseOf(t, "new") != newLease {
		t.Fatalf("old on lease %x, new on %x (was %x)", s.leaseOf(t, "old"), s.leaseOf(t, "new"), newLease)
	}
	got, err := s.Get(ctxT(t), "ns", "old")
	if err != nil || got.(*corev1.Pod).Spec.Containers[0].Image != "busybox" {
		t.Fatalf("old object after its lease was attached: %v %v", got, err)
	}
	if n, _ := s.ExpireUnleased(ctxT(t)); n != 0 {
		t.Fatalf("a second pass attached %d", n)
	}
}
