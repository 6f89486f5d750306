package kubelet

import (
	corev1 "k8s.io/api/core/v1"

	"minik/kubelet/eviction"
	"minik/kubelet/podstep"
)

// evictionPods is the eviction loop's view of the kubelet's pods.
type evictionPods struct{ k *Kubelet }

// Active are the pods admitted and not finished or being evicted (the
// eviction manager must not pick a pod twice).
func (p evictionPods) Active() []*corev1.Pod {
	return p.k.podsWhere("", func(st *podstep.State) bool { return !st.Terminal && st.Evicted == nil })
}

// Evict fails the pod with reason Evicted: its worker kills its
// containers at once (a hard threshold allows no grace period) and
// removes its volumes. It returns a channel closed when that is done,
// nil if the pod has no worker.
func (p evictionPods) Evict(pod *corev1.Pod, message string) <-chan struct{} {
	k := p.k
	k.mu.Lock()
	w := k.workers[pod.UID]
	k.mu.Unlock()
	if w == nil {
		return nil
	}
	k.log.Info("eviction manager: evicting pod", "pod", pod.Namespace+"/"+pod.Name, "message", message)
	k.recorder.Eventf(k.eventTarget(pod), corev1.EventTypeWarning, eviction.Reason, "%s", message)
	return w.evict(podstep.Failure{Reason: eviction.Reason, Message: message})
}
