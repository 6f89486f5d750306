package scheduler

import (
	"context"
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// apiTimeout bounds the scheduler's status patches and deletes.
const apiTimeout = 30 * time.Second

// statusChange is the status patch that gives pod condition c and, if
// nominated is not "", that nomination: nil when the pod says so already.
func statusChange(pod *corev1.Pod, c corev1.PodCondition, nominated string) map[string]any {
	status := map[string]any{}
	if nominated != "" && pod.Status.NominatedNodeName != nominated {
		status["nominatedNodeName"] = nominated
	}
	same := false
	for _, old := range pod.Status.Conditions {
		if old.Type == c.Type && old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
			same = true
		}
	}
	if !same {
		c.LastTransitionTime = metav1.Now()
		status["conditions"] = []corev1.PodCondition{c}
	}
	if len(status) == 0 {
		return nil
	}
	return status
}

// patchStatus sends a strategic merge patch of the status in the
// background; conditions merge by type.
func (s *Scheduler) patchStatus(pod *corev1.Pod, status map[string]any) {
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		_ = s.patchStatusNow(ctx, pod, status)
	})
}

// writesInFlight bounds the scheduler's API writes in flight apart from
// events (which have 64 lanes of their own): binds, status patches and
// preemptions' deletions. With the event lanes it stays below what an
// apiserver takes at once by default (200 mutating requests served and
// 200 waiting for a slot): a burst of writes (in scheduler_perf's
// Preemption, 400 preemptors placed within 100 ms, or hundreds of
// preemptions' calls at once) waits here instead of part of it being
// refused with 429 and sent again a second later, the cluster idle
// meanwhile. (128 cost SchedulingBasic a quarter of its throughput.)
const writesInFlight = 256

// write makes one API write, when fewer than writesInFlight are under way.
func (s *Scheduler) write(call func() error) error {
	s.writes <- struct{}{}
	defer func() { <-s.writes }()
	return call()
}

// patchStatusNow sends a strategic merge patch of the status and waits.
func (s *Scheduler) patchStatusNow(ctx context.Context, pod *corev1.Pod, status map[string]any) error {
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	if err := s.write(func() error {
		_, err := s.client.Pods().Patch(ctx, pod.Namespace, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		return err
	}); err != nil {
		s.log.Debug("status patch failed", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		return err
	}
	return nil
}

// deleteWithUID deletes gracefully, and only the pod with that UID.
func deleteWithUID(uid types.UID) metav1.DeleteOptions {
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
}
