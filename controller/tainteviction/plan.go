// Package tainteviction deletes pods from nodes with NoExecute taints they
// do not tolerate, at once, or when their tolerationSeconds run out:
//
//	pod/node event ─▶ queue(pod) ─▶ Plan ─▶ Decide(pod, node's NoExecute taints, countdown, now)
//	   not tolerated             ─▶ evict now
//	   tolerated for N seconds   ─▶ countdown from first-seen, evict at + N (requeue then)
//	   tolerated forever / taint gone ─▶ forget the countdown, event (if one ran) CancelEviction
//	evict ─▶ event TaintManagerEviction, condition DisruptionTarget, delete
//
// The driver performs Plan's actions through a framework.Sink (apiSink;
// a FakeSink in tests), then keeps the countdown Plan returns.
package tainteviction

import (
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/controller/framework"
)

// ActionType says what an Action does.
type ActionType string

// The actions of a sync, about one pod.
const (
	// CancelEviction records that a countdown ended without an eviction.
	CancelEviction ActionType = "CancelEviction"
	// MarkForDeletion records the eviction about to happen.
	MarkForDeletion ActionType = "MarkForDeletion"
	// SetDisruptionTarget writes Pod, whose status has the condition
	// DisruptionTarget; a failure does not stop the eviction.
	SetDisruptionTarget ActionType = "SetDisruptionTarget"
	// DeletePod deletes Pod (its UID as precondition).
	DeletePod ActionType = "DeletePod"
)

// Action is one step for the driver.
type Action struct {
	Type ActionType
	Pod  *corev1.Pod
}

// String names the action and its pod.
func (a Action) String() string { return string(a.Type) + " " + a.Pod.Namespace + "/" + a.Pod.Name }

// Output is what to do about one pod, and when to look again.
type Output = framework.Output[Action]

// Plan decides about pod (nil: gone) on a node with taints at now, given
// since, when its countdown began (zero if none). It returns the actions
// and the countdown to keep once they are done (zero: none).
func Plan(pod *corev1.Pod, taints []corev1.Taint, since, now time.Time) (Output, time.Time) {
	var out Output
	if pod == nil {
		return out, time.Time{}
	}
	d := Decide(pod, taints, since, now)
	switch d.Verdict {
	case Keep:
		if !since.IsZero() && pod.DeletionTimestamp == nil {
			out.Actions = append(out.Actions, Action{Type: CancelEviction, Pod: pod})
		}
		return out, time.Time{}
	case Wait:
		out.RequeueAfter = d.At.Sub(now)
		return out, d.Since
	}
	cp := pod.DeepCopy()
	cond := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager",
		Message: "Taint manager: deleting due to NoExecute taint", LastTransitionTime: metav1.NewTime(now)}
	replaced := false
	for i := range cp.Status.Conditions {
		if cp.Status.Conditions[i].Type == corev1.DisruptionTarget {
			cp.Status.Conditions[i], replaced = cond, true
		}
	}
	if !replaced {
		cp.Status.Conditions = append(cp.Status.Conditions, cond)
	}
	out.Actions = append(out.Actions, Action{Type: MarkForDeletion, Pod: pod}, Action{Type: SetDisruptionTarget, Pod: cp},
		Action{Type: DeletePod, Pod: pod})
	return out, time.Time{}
}

// Verdict is what to do with one pod.
type Verdict int

const (
	// Keep: nothing to do (no taint, or tolerated forever).
	Keep Verdict = iota
	// EvictNow: delete the pod now.
	EvictNow
	// Wait: evict at Decision.At unless the taint goes away first.
	Wait
)

// Decision is Decide's answer.
type Decision struct {
	Verdict Verdict
	// At is when to evict (Wait); Since is when the countdown started.
	At, Since time.Time
}

// Decide judges pod against the NoExecute taints of its node at now.
// since is when a countdown for it began (zero if none): a countdown is
// kept across re-evaluations, so repeated events never postpone it.
func Decide(pod *corev1.Pod, taints []corev1.Taint, since, now time.Time) Decision {
	var noExec []corev1.Taint
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			noExec = append(noExec, t)
		}
	}
	if len(noExec) == 0 || pod.DeletionTimestamp != nil {
		return Decision{Verdict: Keep}
	}
	minSeconds := int64(-1) // -1: forever
	for i := range noExec {
		var used []*corev1.Toleration
		for j := range pod.Spec.Tolerations {
			if pod.Spec.Tolerations[j].ToleratesTaint(logr.Discard(), &noExec[i], false) {
				used = append(used, &pod.Spec.Tolerations[j])
			}
		}
		if len(used) == 0 {
			return Decision{Verdict: EvictNow}
		}
		for _, tol := range used {
			if tol.TolerationSeconds == nil {
				continue
			}
			s := max(*tol.TolerationSeconds, 0)
			if minSeconds < 0 || s < minSeconds {
				minSeconds = s
			}
		}
	}
	if minSeconds < 0 {
		return Decision{Verdict: Keep}
	}
	if since.IsZero() {
		since = now
	}
	at := since.Add(time.Duration(minSeconds) * time.Second)
	if !at.After(now) {
		return Decision{Verdict: EvictNow, Since: since}
	}
	return Decision{Verdict: Wait, At: at, Since: since}
}
