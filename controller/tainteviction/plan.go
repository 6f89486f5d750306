// Package tainteviction deletes pods from nodes with NoExecute taints they
// do not tolerate, at once, or when their tolerationSeconds run out:
//
//	pod/node event ─▶ queue(pod) ─▶ Decide(pod, node's NoExecute taints, scheduled?, now)
//	   not tolerated             ─▶ evict now
//	   tolerated for N seconds   ─▶ schedule at first-seen + N (requeue then)
//	   tolerated forever / taint gone ─▶ cancel
//	evict ─▶ condition DisruptionTarget, delete, event TaintManagerEviction
package tainteviction

import (
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
)

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
