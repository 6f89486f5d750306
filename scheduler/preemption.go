package scheduler

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/scheduler/framework"
	"minik/scheduler/plugins/defaultpreemption"
	"minik/scheduler/plugins/noderesources"
)

// A preemption, end to end:
//
//	cycle: no node fits ─▶ PostFilter picks node + victims
//	   preempt: nominate in memory; hold the pod in the queue; note victims
//	   handleFailure: one status patch (PodScheduled=False + nominatedNodeName),
//	                  then in the background: clear lower-priority nominations
//	                  on the node, DisruptionTarget + graceful delete per victim
//	held, victims running:     no event retries the pod
//	held, victims terminating: a node added or changed, or a pod deleted on
//	                           a node where the pod now fits, releases it
//	informer: the last victim deleted ─▶ release; that deletion's event moves it
//	next cycle: the nominated node first, where the victims were
//
// The first hold is upstream's async preemption rule
// (IsPodRunningPreemption): a pod retried before its victims' deletion is
// seen would find them still running and preempt again, often on another
// node. The second is minik's: a pod retried while its victims terminate
// finds its nominated node still full and may not preempt again
// (kube-scheduler: "not eligible due to a terminating pod on the
// nominated node"), so only room made elsewhere can place it, and only
// such room releases it. kube-scheduler retries it on every pod deletion
// instead, each time for a cycle, a status patch and an event.

// preemption is what one cycle's PostFilter decided.
type preemption struct {
	node string
	// victims are the pods to delete: those already terminating are left
	// out, as their deletion needs no call.
	victims []*corev1.Pod
}

// preemptions tracks the preemptors held until their victims are deleted.
// Two preemptors may share a victim.
type preemptions struct {
	mu      sync.Mutex
	victims map[types.UID]*victim
	waiting map[types.UID]*heldPreemptor
	// count mirrors len(victims), so that pod events cost no lock when no
	// preemption is under way.
	count atomic.Int64
}

type victim struct {
	preemptors  []types.UID
	terminating bool
}

type heldPreemptor struct {
	pod      *corev1.Pod
	requests framework.Resource
	victims  []types.UID
	// running counts the victims not yet seen terminating, left those not
	// yet deleted.
	running, left int
}

func newPreemptions() *preemptions {
	return &preemptions{victims: map[types.UID]*victim{}, waiting: map[types.UID]*heldPreemptor{}}
}

// start notes that pod waits for the victims present still says are in
// the scheduler's cache, and holds it with hold (the queue's Hold); false
// if there is nothing to wait for. Both run under the lock victimDeleted
// takes, and the informer removes a pod from the cache before it calls
// victimDeleted: a victim deleted meanwhile is either not noted or
// releases the pod after its hold, never before it, which would leave it
// held until the queue's 60s flush.
func (ps *preemptions) start(pod *corev1.Pod, victims []*corev1.Pod, present func(types.UID) bool, hold func()) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.forgetLocked(pod.UID)
	h := &heldPreemptor{pod: pod}
	for _, v := range victims {
		if !present(v.UID) {
			continue
		}
		vs := ps.victims[v.UID]
		if vs == nil {
			vs = &victim{}
			ps.victims[v.UID] = vs
		}
		vs.terminating = vs.terminating || v.DeletionTimestamp != nil
		vs.preemptors = append(vs.preemptors, pod.UID)
		h.victims = append(h.victims, v.UID)
		if !vs.terminating {
			h.running++
		}
	}
	if len(h.victims) == 0 {
		return false
	}
	h.left = len(h.victims)
	h.requests = framework.PodRequests(pod, false)
	ps.waiting[pod.UID] = h
	ps.count.Store(int64(len(ps.victims)))
	hold()
	return true
}

// isVictim reports whether a preemption noted the pod with uid as a victim.
func (ps *preemptions) isVictim(uid types.UID) bool {
	if ps.count.Load() == 0 {
		return false
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	_, ok := ps.victims[uid]
	return ok
}

// victimTerminating is called for a pod seen terminating: its preemptors
// may now be placed by room made elsewhere (terminatingWaiters).
func (ps *preemptions) victimTerminating(uid types.UID) {
	if ps.count.Load() == 0 {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if vs := ps.victims[uid]; vs != nil && !vs.terminating {
		vs.terminating = true
		for _, owner := range vs.preemptors {
			ps.waiting[owner].running--
		}
	}
}

// victimDeleted is called for a pod deleted. It returns the preemptors
// for which it was the last victim.
func (ps *preemptions) victimDeleted(uid types.UID) []*corev1.Pod {
	if ps.count.Load() == 0 {
		return nil
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	vs, ok := ps.victims[uid]
	if !ok {
		return nil
	}
	delete(ps.victims, uid)
	ps.count.Store(int64(len(ps.victims)))
	var done []*corev1.Pod
	for _, owner := range vs.preemptors {
		h := ps.waiting[owner]
		if !vs.terminating {
			h.running--
		}
		if h.left--; h.left == 0 {
			delete(ps.waiting, owner)
			done = append(done, h.pod)
		}
	}
	return done
}

// terminatingWaiters returns the held preemptors whose victims are all
// terminating.
func (ps *preemptions) terminatingWaiters() []*heldPreemptor {
	if ps.count.Load() == 0 {
		return nil
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out []*heldPreemptor
	for _, h := range ps.waiting {
		if h.running == 0 {
			out = append(out, h)
		}
	}
	return out
}

// forget drops the preemption of the pod with uid (its calls failed, it
// is gone, or it no longer waits) and returns the pod if it was held.
func (ps *preemptions) forget(uid types.UID) *corev1.Pod {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.forgetLocked(uid)
}

func (ps *preemptions) forgetLocked(uid types.UID) *corev1.Pod {
	h, ok := ps.waiting[uid]
	if !ok {
		return nil
	}
	delete(ps.waiting, uid)
	for _, v := range h.victims {
		vs := ps.victims[v]
		if vs == nil {
			continue // deleted already
		}
		vs.preemptors = slices.DeleteFunc(vs.preemptors, func(o types.UID) bool { return o == uid })
		if len(vs.preemptors) == 0 {
			delete(ps.victims, v)
		}
	}
	ps.count.Store(int64(len(ps.victims)))
	return h.pod
}

// preempt runs PostFilter for a pod that fits nowhere. If it proposes a
// node, the pod is nominated there (in memory; handleFailure writes it)
// and held in the queue until its victims are seen going. Otherwise the
// outcome is appended to the failure message and it returns nil.
func (s *Scheduler) preempt(state *framework.CycleState, pod *corev1.Pod, fitErr *framework.FitError) *preemption {
	if len(s.fwk.PostFilter) == 0 {
		return nil
	}
	preemptionAttempts.Inc()
	hold := func() { s.queue.Hold(pod) }
	// Pods a preemption is deleting on its nominated node, seen terminating
	// or not yet: it may not preempt again, and waits for them as for its
	// own victims. (Those not yet seen would be picked again by a pod whose
	// room a later preemptor's nomination took meanwhile.)
	if waitFor := defaultpreemption.TerminatingOnNominatedNode(pod, s.snapshot, s.inflight.isVictim); len(waitFor) > 0 {
		fitErr.PostFilterMsg = "preemption: " + defaultpreemption.ErrReasonTerminatingVictims
		s.inflight.start(pod, waitFor, s.cache.HasPod, hold)
		return nil
	}
	result, st := s.fwk.RunPostFilter(state, pod, s.snapshot, fitErr.Statuses)
	if !st.IsSuccess() {
		fitErr.PostFilterMsg = st.Message()
		return nil
	}
	preemptionVictims.Observe(float64(len(result.Victims)))
	p := &preemption{node: result.NominatedNodeName}
	for _, v := range result.Victims {
		if v.DeletionTimestamp == nil {
			p.victims = append(p.victims, v)
		}
	}
	s.log.Info("preempting", "pod", pod.Namespace+"/"+pod.Name, "node", p.node, "victims", len(result.Victims), "to delete", len(p.victims))
	s.nominator.add(pod, p.node)
	s.inflight.start(pod, result.Victims, s.cache.HasPod, hold)
	return p
}

// podDeleted releases the preemptors a bound pod's deletion may place:
// those whose last victim it was, and those whose victims all terminate
// and that now fit its node, counting the pods nominated there. The
// caller then sends the deletion's event, which moves them.
func (s *Scheduler) podDeleted(pod *corev1.Pod) {
	for _, preemptor := range s.inflight.victimDeleted(pod.UID) {
		s.queue.Release(preemptor, false)
	}
	waiters := s.inflight.terminatingWaiters()
	if len(waiters) == 0 {
		return
	}
	ni := s.cache.NodeInfo(pod.Spec.NodeName)
	if ni == nil {
		return
	}
	for _, h := range waiters {
		if len(noderesources.FitsBeside(h.requests, s.nominator.podsFor(ni.Node().Name, h.pod), ni)) == 0 {
			s.releaseWaiter(h.pod)
		}
	}
}

// nodeChanged releases the preemptors whose victims all terminate: a node
// added or changed may fit them. The caller then sends the node's event.
func (s *Scheduler) nodeChanged() {
	for _, h := range s.inflight.terminatingWaiters() {
		s.releaseWaiter(h.pod)
	}
}

func (s *Scheduler) releaseWaiter(pod *corev1.Pod) {
	if held := s.inflight.forget(pod.UID); held != nil {
		s.queue.Release(held, false)
	}
}

// abandonPreemption releases pod from waiting for its victims and retries
// it (a call failed: no event may come).
func (s *Scheduler) abandonPreemption(pod *corev1.Pod) {
	if held := s.inflight.forget(pod.UID); held != nil {
		s.queue.Release(held, true)
	}
}

// deleteVictims makes the room preemptor p was nominated for: pods of
// lower priority nominated to the node lose their nomination, and each
// victim gets the DisruptionTarget condition (as upstream: it learns why
// before it goes), a graceful delete and the event Preempted. If a call
// fails, the preemptor is released to try again.
func (s *Scheduler) deleteVictims(ctx context.Context, preemptor *corev1.Pod, p *preemption) {
	for _, lower := range s.nominator.lowerPriorityOn(p.node, preemptor) {
		_ = s.patchStatusNow(ctx, lower.Pod, map[string]any{"nominatedNodeName": nil})
	}
	failed := false
	for _, v := range p.victims {
		err := s.patchStatusNow(ctx, v, map[string]any{"conditions": []corev1.PodCondition{{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: corev1.PodReasonPreemptionByScheduler,
			Message: preemptor.Spec.SchedulerName + ": preempting to accommodate a higher priority pod", LastTransitionTime: metav1.Now()}}})
		if err == nil {
			err = s.write(func() error { return s.client.Pods().Delete(ctx, v.Namespace, v.Name, deleteWithUID(v.UID)) })
		}
		switch {
		case err == nil:
			s.recorder.Eventf(v, corev1.EventTypeNormal, "Preempted", "Preempted by pod %v on node %v", preemptor.UID, p.node)
		case apierrors.IsNotFound(err):
			// Gone already. If the informer saw it go before this
			// preemption was noted, no event will release the preemptor:
			// release it here, to retry (a no-op if the informer did).
			for _, preemptor := range s.inflight.victimDeleted(v.UID) {
				s.queue.Release(preemptor, true)
			}
		default:
			failed = true
			if ctx.Err() == nil {
				s.log.Warn("preempting victim failed", "pod", v.Namespace+"/"+v.Name, "err", err)
			}
		}
	}
	if failed {
		s.abandonPreemption(preemptor)
	}
}
