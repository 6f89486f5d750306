package svcutil

import (
	"strconv"
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/client/informer"
)

// SliceTracker remembers, per Service, the resourceVersion of each slice a
// controller wrote and the slices it deleted, until the cache shows them
// (Kubernetes' EndpointSliceTracker, which counts generations).
type SliceTracker struct {
	mu  sync.Mutex
	svc map[string]map[types.UID]uint64 // 0: deletion expected
	key map[types.UID]string            // slice → Service key
}

// NewSliceTracker returns an empty tracker.
func NewSliceTracker() *SliceTracker {
	return &SliceTracker{svc: map[string]map[types.UID]uint64{}, key: map[types.UID]string{}}
}

func rv(s *discoveryv1.EndpointSlice) uint64 {
	n, _ := strconv.ParseUint(s.ResourceVersion, 10, 64)
	return n
}

func (t *SliceTracker) set(key string, uid types.UID, v uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.svc[key]
	if m == nil {
		m = map[types.UID]uint64{}
		t.svc[key] = m
	}
	m[uid] = v
	t.key[uid] = key
}

// Expect records a slice as written (created or updated) for key.
func (t *SliceTracker) Expect(key string, s *discoveryv1.EndpointSlice) {
	if v := rv(s); v > 0 {
		t.set(key, s.UID, v)
	}
}

// ExpectDeletion records a slice of key as deleted.
func (t *SliceTracker) ExpectDeletion(key string, s *discoveryv1.EndpointSlice) { t.set(key, s.UID, 0) }

// Own reports whether s, as an informer event carries it, is this
// controller's own last write: no need to sync for it.
func (t *SliceTracker) Own(s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.svc[t.key[s.UID]][s.UID]
	return ok && v != 0 && v == rv(s)
}

// Deleted handles a slice's deletion event: true if this controller
// deleted it. Either way it is no longer tracked.
func (t *SliceTracker) Deleted(s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	key, ok := t.key[s.UID]
	if !ok {
		return false
	}
	v, ok := t.svc[key][s.UID]
	delete(t.svc[key], s.UID)
	delete(t.key, s.UID)
	return ok && v == 0
}

// Stale reports whether the cached slices of key lag behind the writes
// tracked; writes the cache shows are no longer tracked.
func (t *SliceTracker) Stale(key string, cached []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.svc[key]
	if len(m) == 0 {
		return false
	}
	seen := make(map[types.UID]bool, len(cached))
	stale := false
	for _, s := range cached {
		seen[s.UID] = true
		v, ok := m[s.UID]
		switch {
		case !ok:
		case v == 0 || rv(s) < v:
			stale = true
		default:
			delete(m, s.UID)
			delete(t.key, s.UID)
		}
	}
	for uid, v := range m {
		if seen[uid] {
			continue
		}
		if v != 0 {
			stale = true // written, not seen yet
		} else {
			delete(m, uid) // deleted, and gone
			delete(t.key, uid)
		}
	}
	return stale
}

// ForgetService forgets key, a Service that is gone.
func (t *SliceTracker) ForgetService(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for uid := range t.svc[key] {
		delete(t.key, uid)
	}
	delete(t.svc, key)
}

// SliceHandler is the EndpointSlice handler of a controller that owns
// the slices labelled managed-by managedBy: a slice change the tracker
// did not expect (someone else's write, a deletion, a slice moved to
// another Service or taken over) re-queues the Service it belongs, or
// belonged, to, as "namespace/service".
func SliceHandler(managedBy string, tracker *SliceTracker, enqueue func(key string)) informer.Handler[discoveryv1.EndpointSlice] {
	managed := func(s *discoveryv1.EndpointSlice) bool { return ManagedBy(s, managedBy) }
	queue := func(s *discoveryv1.EndpointSlice) {
		enqueue(s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName])
	}
	return informer.Handler[discoveryv1.EndpointSlice]{
		OnAdd: func(s *discoveryv1.EndpointSlice) {
			if managed(s) && !tracker.Own(s) {
				queue(s)
			}
		},
		OnUpdate: func(old, s *discoveryv1.EndpointSlice) {
			if managed(old) && (!managed(s) || old.Labels[discoveryv1.LabelServiceName] != s.Labels[discoveryv1.LabelServiceName]) {
				tracker.Deleted(old) // no longer among the old Service's slices
				queue(old)
			}
			if managed(s) && !tracker.Own(s) {
				queue(s)
			}
		},
		OnDelete: func(s *discoveryv1.EndpointSlice) {
			if managed(s) && !tracker.Deleted(s) {
				queue(s)
			}
		},
	}
}

// ManagedBy reports whether the slice is managedBy's and names its Service.
func ManagedBy(s *discoveryv1.EndpointSlice, managedBy string) bool {
	return s.Labels[discoveryv1.LabelManagedBy] == managedBy && s.Labels[discoveryv1.LabelServiceName] != ""
}
