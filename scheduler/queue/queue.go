// Package queue is the scheduling queue: the pods waiting for a node.
//
//	     Add ──▶ activeQ (priority, then age) ──Pop──▶ scheduling cycle
//	               ▲           ▲                          │ failed
//	backoff over ──┘           │ cluster event            ▼
//	(flushed by Run)   unschedulable pods ◀──── no node fits the pod
//	     backoffQ ◀────────────┘ (event during the
//	                              pod's backoff)
//
// A pod that failed waits 1s, then 2s, 4s... up to 10s before it may be
// tried again (backoff), counted in whole-second windows. A pod that fit
// no node waits among the unschedulable pods until a cluster event that
// could help it (a node added or changed, a pod deleted), then goes back
// to activeQ (or backoffQ if its backoff is not over). When activeQ is
// empty, Pop takes the next pod from backoffQ at once instead of idling,
// as kube-scheduler does (SchedulerPopFromBackoffQ, on by default since
// 1.33); a pod that failed with an error waits its whole backoff. Run also
// flushes pods that have waited 60s, as a safety net. Time comes from an
// injected Clock.
//
// A held pod (Hold; a preemptor whose victims are being deleted) waits
// among the unschedulable pods whatever event comes, until Release (or the
// 60s flush), as upstream's DefaultPreemption keeps it out with PreEnqueue;
// then the next event moves it.
package queue

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/utils/clock"

	"minik/scheduler/framework"
)

// Event is a cluster change that may make unschedulable pods schedulable.
type Event string

// The events that requeue unschedulable pods.
const (
	NodeAdd           Event = "NodeAdd"
	NodeUpdate        Event = "NodeUpdate" // labels, taints, allocatable or unschedulable changed
	AssignedPodDelete Event = "AssignedPodDelete"
	AssignedPodAdd    Event = "AssignedPodAdd"    // may satisfy pod affinity
	AssignedPodUpdate Event = "AssignedPodUpdate" // labels changed: may change pod affinity
	NamespaceUpdate   Event = "NamespaceUpdate"   // labels changed: may change namespaceSelector
	StorageChange     Event = "StorageChange"     // a claim, volume or class changed
)

// Config tunes a Queue. Zero fields take the defaults.
type Config struct {
	// InitialBackoff is the wait after the first failure. Default 1s.
	InitialBackoff time.Duration
	// MaxBackoff caps the doubling wait. Default 10s.
	MaxBackoff time.Duration
	// UnschedulableFlush is how long a pod may wait for an event before it
	// is retried anyway. Default 60s.
	UnschedulableFlush time.Duration
	// Clock defaults to the real time.
	Clock clock.Clock
}

// QueuedPodInfo is a pod in the queue with its scheduling history.
type QueuedPodInfo struct {
	*framework.PodInfo
	key string
	// Timestamp is when the pod was last added or failed.
	Timestamp time.Time
	// InitialAttemptTimestamp is when the pod was first popped.
	InitialAttemptTimestamp time.Time
	// Attempts counts scheduling cycles.
	Attempts int
	// UnschedulablePlugins names the plugins that rejected the pod in its
	// last cycle; events that cannot help them do not requeue it.
	UnschedulablePlugins sets.Set[string]
}

// Key returns namespace/name.
func (p *QueuedPodInfo) Key() string { return p.key }

func keyOf(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// ErrClosed is returned by Pop once the queue is closed.
var ErrClosed = errors.New("queue: closed")

// Queue is safe for concurrent use.
type Queue struct {
	cfg Config

	mu     sync.Mutex
	active *podHeap
	// backoff holds pods rejected by plugins, by backoff window, then as
	// activeQ orders them: Pop may take them early. errorBackoff holds pods
	// that failed with an error: they wait their whole backoff.
	backoff       *podHeap
	errorBackoff  *podHeap
	unschedulable map[string]*QueuedPodInfo
	// held pods stay unschedulable until Release.
	held sets.Set[string]
	// schedulingCycle counts Pops. A pod that failed in a cycle at or
	// before an event that would have moved it goes to backoffQ, not to wait
	// for an event that already happened (kube-scheduler checks the events
	// during a pod's cycle against its rejecting plugins the same way).
	// moveRequestCycle is the cycle of the last event for every pod,
	// anyEventCycle of the last event of any kind (for pods no plugin
	// rejected), pluginEventCycle per plugin of the last event for the
	// pods that plugin rejected.
	schedulingCycle  int64
	moveRequestCycle int64
	anyEventCycle    int64
	pluginEventCycle map[string]int64
	closed           bool
	wake             chan struct{} // signalled when activeQ gets a pod
	kick             chan struct{} // signalled when backoffQ gets an earlier pod
}

// New returns an empty queue.
func New(cfg Config) *Queue {
	if cfg.InitialBackoff <= 0 {
		cfg.InitialBackoff = time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 10 * time.Second
	}
	if cfg.UnschedulableFlush <= 0 {
		cfg.UnschedulableFlush = 60 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	q := &Queue{
		cfg:              cfg,
		unschedulable:    map[string]*QueuedPodInfo{},
		held:             sets.New[string](),
		pluginEventCycle: map[string]int64{},
		wake:             make(chan struct{}, 1),
		kick:             make(chan struct{}, 1),
	}
	q.active = newPodHeap(activeLess)
	q.backoff = newPodHeap(func(a, b *QueuedPodInfo) bool {
		if ea, eb := q.backoffExpiry(a), q.backoffExpiry(b); !ea.Equal(eb) {
			return ea.Before(eb)
		}
		return activeLess(a, b)
	})
	q.errorBackoff = newPodHeap(func(a, b *QueuedPodInfo) bool {
		return q.backoffExpiry(a).Before(q.backoffExpiry(b))
	})
	return q
}

// activeLess orders activeQ: higher priority first, then older first.
func activeLess(a, b *QueuedPodInfo) bool {
	pa, pb := corev1helpers.PodPriority(a.Pod), corev1helpers.PodPriority(b.Pod)
	if pa != pb {
		return pa > pb
	}
	return a.Timestamp.Before(b.Timestamp)
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Add puts a new pending pod into activeQ.
func (q *Queue) Add(pod *corev1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := keyOf(pod)
	delete(q.unschedulable, key)
	q.held.Delete(key)
	q.removeFromBackoff(key)
	q.active.addOrUpdate(&QueuedPodInfo{PodInfo: framework.NewPodInfo(pod), key: key, Timestamp: q.cfg.Clock.Now()})
	signal(q.wake)
}

// Update replaces a queued pod. A pod waiting as unschedulable whose spec
// or labels changed is given another try; status-only changes (such as
// the scheduler's own condition) leave it waiting.
func (q *Queue) Update(old, pod *corev1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := keyOf(pod)
	if p, ok := q.active.get(key); ok {
		p.PodInfo = framework.NewPodInfo(pod)
		q.active.addOrUpdate(p)
		return
	}
	for _, h := range []*podHeap{q.backoff, q.errorBackoff} {
		if p, ok := h.get(key); ok {
			p.PodInfo = framework.NewPodInfo(pod)
			h.addOrUpdate(p)
			return
		}
	}
	if p, ok := q.unschedulable[key]; ok {
		p.PodInfo = framework.NewPodInfo(pod)
		if !q.held.Has(key) && old != nil && (!equality.Semantic.DeepEqual(old.Spec, pod.Spec) || !equality.Semantic.DeepEqual(old.Labels, pod.Labels)) {
			delete(q.unschedulable, key)
			q.requeue(p)
		}
		return
	}
	// Not queued (e.g. being scheduled right now): it will come back through
	// AddUnschedulable if it fails.
}

// Delete removes a pod from the queue.
func (q *Queue) Delete(pod *corev1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := keyOf(pod)
	q.active.remove(key)
	q.removeFromBackoff(key)
	delete(q.unschedulable, key)
	q.held.Delete(key)
}

// Hold keeps pod among the unschedulable pods, once it is put back, until
// Release: no event or update moves it (only the UnschedulableFlush
// safety net does).
func (q *Queue) Hold(pod *corev1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.held.Insert(keyOf(pod))
}

// Release ends Hold. With retry, a waiting pod goes to activeQ (or
// backoffQ if its backoff is not over); without, it waits for the next
// cluster event as any unschedulable pod, as kube-scheduler's PreEnqueue
// gate only lets the next event move it.
func (q *Queue) Release(pod *corev1.Pod, retry bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := keyOf(pod)
	if !q.held.Has(key) {
		return
	}
	q.held.Delete(key)
	if p, ok := q.unschedulable[key]; ok && retry {
		delete(q.unschedulable, key)
		q.requeue(p)
	}
}

// Pop blocks until a pod is in activeQ, or in backoffQ (not errorBackoff)
// while activeQ is empty, and returns it; or it returns ErrClosed or ctx's
// error. It starts a new scheduling cycle.
func (q *Queue) Pop(ctx context.Context) (*QueuedPodInfo, error) {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return nil, ErrClosed
		}
		p := q.active.pop()
		if p == nil {
			p = q.backoff.pop()
		}
		if p != nil {
			q.schedulingCycle++
			p.Attempts++
			if p.InitialAttemptTimestamp.IsZero() {
				p.InitialAttemptTimestamp = q.cfg.Clock.Now()
			}
			q.mu.Unlock()
			return p, nil
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// SchedulingCycle returns the number of Pops so far.
func (q *Queue) SchedulingCycle() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.schedulingCycle
}

// AddUnschedulable puts back a pod that failed in podCycle. A pod that was
// rejected (unschedulable) waits for a cluster event; a pod that failed
// for another reason (an error), or that missed an event during its cycle,
// goes to backoffQ.
func (q *Queue) AddUnschedulable(p *QueuedPodInfo, podCycle int64, rejected bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.active.get(p.key); ok {
		return // re-added by an update meanwhile
	}
	p.Timestamp = q.cfg.Clock.Now()
	if !q.held.Has(p.key) && (!rejected || q.missedEvent(p, podCycle)) {
		q.toBackoff(p)
		return
	}
	q.unschedulable[p.key] = p
}

// MoveAllToActiveOrBackoff is called on a cluster event: unschedulable
// pods go to activeQ, or to backoffQ if their backoff is not over. With
// plugins given, only pods rejected by one of them (or by nothing known)
// move: an event that only helps pod affinity leaves pods waiting for
// cpu alone.
func (q *Queue) MoveAllToActiveOrBackoff(ev Event, plugins ...string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.anyEventCycle = q.schedulingCycle
	if len(plugins) == 0 {
		q.moveRequestCycle = q.schedulingCycle
	}
	for _, pl := range plugins {
		q.pluginEventCycle[pl] = q.schedulingCycle
	}
	for key, p := range q.unschedulable {
		if q.held.Has(key) {
			continue
		}
		if len(plugins) > 0 && p.UnschedulablePlugins.Len() > 0 && !p.UnschedulablePlugins.HasAny(plugins...) {
			continue
		}
		delete(q.unschedulable, key)
		q.requeue(p)
	}
}

// missedEvent reports whether an event that would have moved p came
// during or after its cycle podCycle.
func (q *Queue) missedEvent(p *QueuedPodInfo, podCycle int64) bool {
	if q.moveRequestCycle >= podCycle {
		return true
	}
	if p.UnschedulablePlugins.Len() == 0 {
		return q.anyEventCycle >= podCycle
	}
	for pl := range p.UnschedulablePlugins {
		if q.pluginEventCycle[pl] >= podCycle {
			return true
		}
	}
	return false
}

// requeue puts p into activeQ or, if it is still backing off, backoffQ.
func (q *Queue) requeue(p *QueuedPodInfo) {
	if q.isBackingOff(p) {
		q.toBackoff(p)
		return
	}
	q.active.addOrUpdate(p)
	signal(q.wake)
}

// toBackoff puts p into backoffQ, or errorBackoff if no plugin rejected
// it (it failed with an error).
func (q *Queue) toBackoff(p *QueuedPodInfo) {
	if p.UnschedulablePlugins.Len() == 0 {
		q.errorBackoff.addOrUpdate(p)
	} else {
		q.backoff.addOrUpdate(p)
		signal(q.wake) // an idle Pop takes it
	}
	signal(q.kick)
}

func (q *Queue) removeFromBackoff(key string) {
	q.backoff.remove(key)
	q.errorBackoff.remove(key)
}

// backoffWindow is the grain of backoff expiries: pods whose backoff ends
// in the same second leave backoffQ together, in activeQ's order (as
// kube-scheduler's backoffQOrderingWindowDuration).
const backoffWindow = time.Second

// BackoffDuration is the wait after a pod's Attempts-th failure: the
// initial backoff, doubled per attempt, capped; none before a first try.
func (q *Queue) BackoffDuration(p *QueuedPodInfo) time.Duration {
	if p.Attempts == 0 {
		return 0
	}
	d := q.cfg.InitialBackoff
	for i := 1; i < p.Attempts; i++ {
		if d >= q.cfg.MaxBackoff/2 {
			return q.cfg.MaxBackoff
		}
		d *= 2
	}
	return min(d, q.cfg.MaxBackoff)
}

// backoffExpiry is the window in which p's backoff ends; p backs off
// until that window is over.
func (q *Queue) backoffExpiry(p *QueuedPodInfo) time.Time {
	if p.Attempts == 0 {
		return time.Time{}
	}
	return p.Timestamp.Add(q.BackoffDuration(p)).Truncate(backoffWindow)
}

func (q *Queue) isBackingOff(p *QueuedPodInfo) bool {
	return p.Attempts > 0 && !q.backoffExpiry(p).Before(q.cfg.Clock.Now().Truncate(backoffWindow))
}

// FlushBackoffCompleted moves pods whose backoff is over to activeQ and
// returns when the next one's ends (zero if none is waiting).
func (q *Queue) FlushBackoffCompleted() time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	var next time.Time
	for _, h := range []*podHeap{q.backoff, q.errorBackoff} {
		for p := h.peek(); p != nil; p = h.peek() {
			if q.isBackingOff(p) {
				if end := q.backoffExpiry(p).Add(backoffWindow); next.IsZero() || end.Before(next) {
					next = end
				}
				break
			}
			h.pop()
			q.active.addOrUpdate(p)
			signal(q.wake)
		}
	}
	return next
}

// FlushUnschedulableLeftover requeues pods that have waited longer than
// UnschedulableFlush for an event.
func (q *Queue) FlushUnschedulableLeftover() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.cfg.Clock.Now()
	for key, p := range q.unschedulable {
		if now.Sub(p.Timestamp) >= q.cfg.UnschedulableFlush {
			delete(q.unschedulable, key)
			q.held.Delete(key) // a safety net for a hold never released, too
			q.requeue(p)
		}
	}
}

// Run moves pods out of backoffQ when their backoff ends and flushes
// long-waiting unschedulable pods, until ctx is done; then it closes the
// queue.
func (q *Queue) Run(ctx context.Context) {
	defer q.Close()
	// Unschedulable pods are checked a few times per flush period, so that
	// none waits much longer than UnschedulableFlush.
	flushEvery := q.cfg.UnschedulableFlush / 4
	nextFlush := q.cfg.Clock.Now().Add(flushEvery)
	for {
		next := q.FlushBackoffCompleted()
		now := q.cfg.Clock.Now()
		if !now.Before(nextFlush) {
			q.FlushUnschedulableLeftover()
			nextFlush = now.Add(flushEvery)
		}
		wait := nextFlush.Sub(now)
		if !next.IsZero() && next.Sub(now) < wait {
			wait = next.Sub(now)
		}
		select {
		case <-ctx.Done():
			return
		case <-q.cfg.Clock.After(wait):
		case <-q.kick:
		}
	}
}

// Close makes Pop return ErrClosed.
func (q *Queue) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	signal(q.wake)
}

// Len returns the number of pods in activeQ, backoffQ and unschedulable.
func (q *Queue) Len() (active, backoff, unschedulable int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.active.Len(), q.backoff.Len() + q.errorBackoff.Len(), len(q.unschedulable)
}

// PendingPods returns the keys of every queued pod, sorted.
func (q *Queue) PendingPods() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for _, p := range q.active.items {
		out = append(out, p.key)
	}
	for _, p := range slices.Concat(q.backoff.items, q.errorBackoff.items) {
		out = append(out, p.key)
	}
	for k := range q.unschedulable {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Lengths returns how many pods wait in activeQ, backoffQ and among the
// unschedulable ones (scheduler_pending_pods).
func (q *Queue) Lengths() (active, backoff, unschedulable int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.active.Len(), q.backoff.Len() + q.errorBackoff.Len(), len(q.unschedulable)
}
