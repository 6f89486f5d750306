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

// setCondition writes the PodScheduled condition to the pod's status,
// unless it already says the same.
func (s *Scheduler) setCondition(pod *corev1.Pod, c corev1.PodCondition) {
	for _, old := range pod.Status.Conditions {
		if old.Type == c.Type && old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
			return
		}
	}
	c.LastTransitionTime = metav1.Now()
	s.patchStatus(pod, map[string]any{"conditions": []corev1.PodCondition{c}})
}

// patchStatus sends a strategic merge patch of the status in the
// background; conditions merge by type.
func (s *Scheduler) patchStatus(pod *corev1.Pod, status map[string]any) {
	s.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		s.patchStatusNow(ctx, pod, status)
	})
}

// patchStatusNow sends a strategic merge patch of the status and waits.
func (s *Scheduler) patchStatusNow(ctx context.Context, pod *corev1.Pod, status map[string]any) {
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return
	}
	if _, err := s.client.Pods().Patch(ctx, pod.Namespace, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		s.log.Debug("status patch failed", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
}

// deleteWithUID deletes gracefully, and only the pod with that UID.
func deleteWithUID(uid types.UID) metav1.DeleteOptions {
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
}
