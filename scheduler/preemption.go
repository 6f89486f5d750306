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
)

// A preemption, end to end:
//
//	cycle: no node fits ─▶ PostFilter picks node + victims
//	   preempt: nominate in memory; hold the pod in the queue; note victims
//	   handleFailure: one status patch (PodScheduled=False + nominatedNodeName),
//	                  then in the background: clear lower-priority nominations
//	                  on the node, DisruptionTarget + graceful delete per victim
//	informer: every victim seen terminating or gone ─▶ release the pod: the
//	          next event (a victim's deletion) moves it
//	next cycle: the nominated node first; it binds once the victims are gone
//
// The hold is upstream's async preemption rule (IsPodRunningPreemption):
// a pod retried before its victims' deletion is seen would find them still
// running and preempt again, often on another node.

// preemption is what one cycle's PostFilter decided.
type preemption struct {
	node string
	// victims are the pods to delete: those already terminating are left
	// out, as their deletion needs no call.
	victims []*corev1.Pod
}

// preemptions tracks the preemptors held until their victims are seen
// going. Two preemptors may share a victim.
type preemptions struct {
	mu       sync.Mutex
	victimOf map[types.UID][]types.UID // victim → its preemptors
	waiting  map[types.UID]*heldPreemptor
	// count mirrors len(victimOf), so that pod events cost no lock when no
	// preemption is under way.
	count atomic.Int64
}

type heldPreemptor struct {
	pod     *corev1.Pod
	victims []types.UID
	left    int
}

func newPreemptions() *preemptions {
	return &preemptions{victimOf: map[types.UID][]types.UID{}, waiting: map[types.UID]*heldPreemptor{}}
}

// start notes that pod waits for victims, and holds it with hold (the
// queue's Hold); false if there is nothing to wait for. hold runs under the
// lock victimGoing takes: a victim seen going at that moment (another
// preemptor may be deleting it) releases the pod after its hold, never
// before it, which would leave it held for good.
func (ps *preemptions) start(pod *corev1.Pod, victims []*corev1.Pod, hold func()) bool {
	if len(victims) == 0 {
		return false
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.forgetLocked(pod.UID)
	h := &heldPreemptor{pod: pod, left: len(victims)}
	for _, v := range victims {
		ps.victimOf[v.UID] = append(ps.victimOf[v.UID], pod.UID)
		h.victims = append(h.victims, v.UID)
	}
	ps.waiting[pod.UID] = h
	ps.count.Store(int64(len(ps.victimOf)))
	hold()
	return true
}

// victimGoing is called for a pod seen terminating or deleted. It returns
// the preemptors for which it was the last victim.
func (ps *preemptions) victimGoing(uid types.UID) []*corev1.Pod {
	if ps.count.Load() == 0 {
		return nil
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	owners, ok := ps.victimOf[uid]
	if !ok {
		return nil
	}
	delete(ps.victimOf, uid)
	ps.count.Store(int64(len(ps.victimOf)))
	var done []*corev1.Pod
	for _, owner := range owners {
		if h := ps.waiting[owner]; h != nil {
			if h.left--; h.left == 0 {
				delete(ps.waiting, owner)
				done = append(done, h.pod)
			}
		}
	}
	return done
}

// forget drops the preemption of the pod with uid (its calls failed, or it
// is gone) and returns the pod if it was held.
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
		owners := slices.DeleteFunc(ps.victimOf[v], func(o types.UID) bool { return o == uid })
		if len(owners) == 0 {
			delete(ps.victimOf, v)
		} else {
			ps.victimOf[v] = owners
		}
	}
	ps.count.Store(int64(len(ps.victimOf)))
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
	s.inflight.start(pod, p.victims, func() { s.queue.Hold(pod) })
	return p
}

// victimGoing releases the preemptors whose last victim pod was: it is
// seen terminating or deleted. They wait for the next event, as any
// unschedulable pod: until the victims are gone, they cannot fit, and the
// deletion of one moves them. So the caller, for a deletion, releases
// before it sends that event.
func (s *Scheduler) victimGoing(pod *corev1.Pod) {
	for _, preemptor := range s.inflight.victimGoing(pod.UID) {
		s.queue.Release(preemptor, false) // the victim's deletion will move it
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
			err = s.client.Pods().Delete(ctx, v.Namespace, v.Name, deleteWithUID(v.UID))
		}
		switch {
		case err == nil:
			s.recorder.Eventf(v, corev1.EventTypeNormal, "Preempted", "Preempted by pod %v on node %v", preemptor.UID, p.node)
		case apierrors.IsNotFound(err):
			// Gone already. If the informer saw it go before this
			// preemption was noted, no event will release the preemptor:
			// release it here, to retry (a no-op if the informer did).
			for _, preemptor := range s.inflight.victimGoing(v.UID) {
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
