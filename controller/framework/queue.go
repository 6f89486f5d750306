// Package framework holds what every minik controller is built from:
//
//	informer handlers ──key──▶ Queue (dedup, rate-limited retries, delays)
//	                              │ Get
//	                              ▼
//	                        worker: sync(key) ── reads caches ──▶ pure step ──▶ actions
//	                              │                                              │
//	                              │ error: AddRateLimited        driver: API calls (the IO)
//	                              ▼ ok: Forget
//
// and Expectations, which remember the creations and deletions a
// controller asked for until its informer has seen them, so a slow watch
// never makes it act twice.
package framework

import (
	"context"
	"math"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
)

// Queue is a work queue of keys ("namespace/name"). A key is held at most
// once while waiting, and never handed to two workers at once: a key added
// while it is being processed is handed out again after Done. Retries back
// off per key, exponentially from BaseDelay to MaxDelay.
type Queue struct {
	clock     clock.Clock
	baseDelay time.Duration
	maxDelay  time.Duration

	mu         sync.Mutex
	cond       *sync.Cond
	items      []string
	dirty      map[string]bool // waiting in items, or to be re-added after Done
	processing map[string]bool
	failures   map[string]int
	waiting    map[string]time.Time // delayed adds: key → earliest due time
	timer      clock.Timer
	timerStop  chan struct{} // closed when timer is replaced: its goroutine ends
	shutdown   bool
	metrics    *queueMetrics // nil without a name
}

// QueueConfig configures a Queue. Zero fields take the defaults.
type QueueConfig struct {
	// BaseDelay is the first retry delay of a failing key. Default 5ms.
	BaseDelay time.Duration
	// MaxDelay caps the retry delay. Default 1000s, as in Kubernetes.
	MaxDelay time.Duration
	// Clock defaults to the real clock.
	Clock clock.Clock
	// Name labels the queue's metrics (workqueue_*{name}); the
	// controller's name. Without it the queue is not measured.
	Name string
}

// NewQueue returns an empty queue.
func NewQueue(cfg QueueConfig) *Queue {
	if cfg.BaseDelay <= 0 {
		cfg.BaseDelay = 5 * time.Millisecond
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = 1000 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	q := &Queue{clock: cfg.Clock, baseDelay: cfg.BaseDelay, maxDelay: cfg.MaxDelay,
		dirty: map[string]bool{}, processing: map[string]bool{}, failures: map[string]int{},
		waiting: map[string]time.Time{}, metrics: newQueueMetrics(cfg.Name)}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// Add queues key now.
func (q *Queue) Add(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addLocked(key)
}

func (q *Queue) addLocked(key string) {
	if q.shutdown || q.dirty[key] {
		return
	}
	q.dirty[key] = true
	q.metrics.added()
	if q.processing[key] {
		return // re-added by Done
	}
	q.items = append(q.items, key)
	q.metrics.queued(key, q.clock.Now())
	q.cond.Signal()
}

// AddAfter queues key once d has passed (at once if d <= 0). Of several
// delayed adds of one key, the earliest wins.
func (q *Queue) AddAfter(key string, d time.Duration) {
	if d <= 0 {
		q.Add(key)
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	due := q.clock.Now().Add(d)
	if cur, ok := q.waiting[key]; ok && !due.Before(cur) {
		return
	}
	q.waiting[key] = due
	q.armLocked()
}

// armLocked sets the timer for the earliest delayed key.
// The goroutine that waits on a timer ends when the timer is replaced
// (a stopped timer's channel never fires), so at most one is alive.
func (q *Queue) armLocked() {
	q.disarmLocked()
	if len(q.waiting) == 0 || q.shutdown {
		return
	}
	var first time.Time
	for _, due := range q.waiting {
		if first.IsZero() || due.Before(first) {
			first = due
		}
	}
	t := q.clock.NewTimer(first.Sub(q.clock.Now()))
	stop := make(chan struct{})
	q.timer, q.timerStop = t, stop
	go func() {
		select {
		case <-t.C():
			q.fireDue()
		case <-stop:
		}
	}()
}

func (q *Queue) disarmLocked() {
	if q.timer != nil {
		q.timer.Stop()
		close(q.timerStop)
		q.timer, q.timerStop = nil, nil
	}
}

// fireDue moves every delayed key that is due into the queue.
func (q *Queue) fireDue() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	for key, due := range q.waiting {
		if !due.After(now) {
			delete(q.waiting, key)
			q.addLocked(key)
		}
	}
	q.armLocked()
}

// AddRateLimited queues key after its backoff: BaseDelay·2^failures,
// capped at MaxDelay. Forget resets it.
func (q *Queue) AddRateLimited(key string) {
	q.mu.Lock()
	n := q.failures[key]
	q.failures[key] = n + 1
	q.mu.Unlock()
	d := time.Duration(float64(q.baseDelay) * math.Pow(2, float64(n)))
	if d > q.maxDelay || d <= 0 {
		d = q.maxDelay
	}
	q.AddAfter(key, d)
}

// Forget clears key's failure count, after a successful sync.
func (q *Queue) Forget(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.failures, key)
}

// NumRequeues returns how often key failed since its last Forget.
func (q *Queue) NumRequeues(key string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.failures[key]
}

// Get waits for a key and marks it as being processed; the caller must
// call Done(key). It returns false once the queue is shut down.
func (q *Queue) Get() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.shutdown {
		q.cond.Wait()
	}
	if q.shutdown {
		return "", false
	}
	key := q.items[0]
	q.items[0] = ""
	q.items = q.items[1:]
	delete(q.dirty, key)
	q.processing[key] = true
	q.metrics.taken(key, q.clock.Now())
	return key, true
}

// Done marks key as processed; if it was added meanwhile it is queued again.
func (q *Queue) Done(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, key)
	if q.dirty[key] && !q.shutdown {
		q.items = append(q.items, key)
		q.metrics.queued(key, q.clock.Now())
		q.cond.Signal()
	}
}

// Len returns the number of keys ready to be processed.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// ShutDown wakes every Get with false; later adds are ignored.
func (q *Queue) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutdown = true
	q.disarmLocked()
	q.cond.Broadcast()
}

// Result tells the worker what to do with a key after a successful sync.
type Result struct {
	// RequeueAfter, if positive, syncs the key again after this long
	// (e.g. when minReadySeconds or a toleration runs out).
	RequeueAfter time.Duration
	// Backoff syncs the key again after its backoff, as a failure does,
	// without reporting one: work is left that gives no estimate of when
	// it ends (where upstream's controllers return an error to wait).
	Backoff bool
}

// SyncFunc reconciles the object with key. An error retries the key with
// backoff.
type SyncFunc func(ctx context.Context, key string) (Result, error)

// RunWorkers processes q with n goroutines until ctx ends, then shuts q
// down and waits for them. A failed sync is retried with backoff and
// reported to onError, unless it failed on a write conflict.
func RunWorkers(ctx context.Context, q *Queue, n int, syncFn SyncFunc, onError func(key string, err error)) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				key, ok := q.Get()
				if !ok {
					return
				}
				res, err := syncFn(ctx, key)
				switch {
				case err != nil && ctx.Err() == nil:
					// A conflict only means the cache was behind: the retry
					// sees the newer object, so it is not worth a warning.
					if onError != nil && !apierrors.IsConflict(err) {
						onError(key, err)
					}
					q.AddRateLimited(key)
				case err == nil && res.Backoff:
					q.AddRateLimited(key)
				case err == nil:
					q.Forget(key)
					if res.RequeueAfter > 0 {
						q.AddAfter(key, res.RequeueAfter)
					}
				}
				q.Done(key)
			}
		})
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
}
