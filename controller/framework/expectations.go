package framework

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// ExpectationsTimeout is how long unfulfilled expectations hold back a
// controller: after it, a lost watch event can no longer block it forever.
// Kubernetes uses 5 minutes.
const ExpectationsTimeout = 5 * time.Minute

// Expectations records, per controller key, how many creations it still
// expects to see and which deletions (by pod UID). Until they are seen in
// the informer (or time out), the controller must not act on its count of
// pods, which may be stale: that is how a slow watch never causes extra
// pods.
type Expectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	m     map[string]*expectation
}

type expectation struct {
	adds    int
	deletes map[types.UID]bool
	since   time.Time
}

// NewExpectations returns empty expectations on clk (nil: real time).
func NewExpectations(clk clock.PassiveClock) *Expectations {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Expectations{clock: clk, m: map[string]*expectation{}}
}

// Satisfied reports whether key has nothing outstanding (or its
// expectations are older than ExpectationsTimeout).
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.m[key]
	if x == nil || (x.adds <= 0 && len(x.deletes) == 0) {
		return true
	}
	return e.clock.Since(x.since) > ExpectationsTimeout
}

// Expect replaces key's expectations: adds creations and the deletion of
// the pods with uids.
func (e *Expectations) Expect(key string, adds int, uids []types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := &expectation{adds: adds, deletes: map[types.UID]bool{}, since: e.clock.Now()}
	for _, u := range uids {
		x.deletes[u] = true
	}
	e.m[key] = x
}

// CreationObserved lowers key's expected creations by one: the informer
// saw a new pod, or a create failed and will never be seen.
func (e *Expectations) CreationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x := e.m[key]; x != nil && x.adds > 0 {
		x.adds--
	}
}

// DeletionObserved marks the deletion of uid as seen (or failed).
func (e *Expectations) DeletionObserved(key string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x := e.m[key]; x != nil {
		delete(x.deletes, uid)
	}
}

// Delete forgets key, when its object is gone.
func (e *Expectations) Delete(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
