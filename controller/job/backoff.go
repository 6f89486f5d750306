package job

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik/controller/framework"
)

// Pod failure backoff, as the Kubernetes Job documentation gives it: a
// failed pod's replacement waits 10s, doubling with every further failure
// since the last success, capped at six minutes.
const (
	PodFailureBackoff    = 10 * time.Second
	MaxPodFailureBackoff = 6 * time.Minute
)

// FinishedAt returns when pod finished, looked up as Kubernetes does: the
// latest finishedAt of its containers if all of them terminated; else when
// its Ready condition turned False (the kubelet does that as a pod ends);
// else its deletion time minus the grace period; else its creation time.
func FinishedAt(p *corev1.Pod) time.Time {
	if t, ok := containersFinishedAt(p.Status.ContainerStatuses); ok {
		return t
	}
	if c := framework.PodReadyCondition(p); c != nil && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
		return c.LastTransitionTime.Time
	}
	if p.DeletionTimestamp != nil {
		var grace int64
		if p.DeletionGracePeriodSeconds != nil {
			grace = *p.DeletionGracePeriodSeconds
		}
		return p.DeletionTimestamp.Add(-time.Duration(grace) * time.Second)
	}
	return p.CreationTimestamp.Time
}

// containersFinishedAt is the latest finishedAt of statuses, if every one
// of them terminated with a known time.
func containersFinishedAt(statuses []corev1.ContainerStatus) (time.Time, bool) {
	var latest time.Time
	for _, cs := range statuses {
		term := cs.State.Terminated
		if term == nil || term.FinishedAt.IsZero() {
			return time.Time{}, false
		}
		if term.FinishedAt.After(latest) {
			latest = term.FinishedAt.Time
		}
	}
	return latest, !latest.IsZero()
}

// failureBackoff is the delay after failures consecutive failures:
// 10s·2^(failures−1), capped; none without failures.
func failureBackoff(failures int) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := PodFailureBackoff
	for i := 1; i < failures; i++ {
		d *= 2
		if d >= MaxPodFailureBackoff {
			return MaxPodFailureBackoff
		}
	}
	return d
}

// remainingBackoff returns how long, at now, new pods must still wait after
// failures consecutive failures, the last one at lastFailure.
func remainingBackoff(failures int, lastFailure, now time.Time) time.Duration {
	d := failureBackoff(failures)
	elapsed := now.Sub(lastFailure)
	if d <= elapsed {
		return 0
	}
	return d - elapsed
}

// failuresSinceLastSuccess counts the failed pods that finished after the
// last succeeded one, and returns when the latest of them finished. A
// success resets the backoff, as in Kubernetes; the count comes from the
// pods that still exist instead of a record kept in memory.
func failuresSinceLastSuccess(succeeded, failed []*corev1.Pod) (int, time.Time) {
	var lastSuccess time.Time
	for _, p := range succeeded {
		if t := FinishedAt(p); t.After(lastSuccess) {
			lastSuccess = t
		}
	}
	n := 0
	var lastFailure time.Time
	for _, p := range failed {
		t := FinishedAt(p)
		if !t.After(lastSuccess) {
			continue
		}
		n++
		if t.After(lastFailure) {
			lastFailure = t
		}
	}
	return n, lastFailure
}
