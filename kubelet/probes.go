package kubelet

import (
	"k8s.io/apimachinery/pkg/types"

	"minik/kubelet/prober"
)

// probeResult records a probe's new verdict in the pod worker's state
// and wakes the worker.
func (k *Kubelet) probeResult(r prober.Result) {
	k.mu.Lock()
	w := k.workers[r.PodUID]
	k.mu.Unlock()
	if w == nil {
		return
	}
	w.mu.Lock()
	switch {
	case r.Kind == prober.Readiness:
		w.state.Ready[r.ContainerID] = r.Success
	case r.Success: // Startup
		w.state.Started[r.ContainerID] = true
	default: // a failed Liveness or Startup probe
		w.state.Unhealthy[r.ContainerID] = r.Message
	}
	w.mu.Unlock()
	w.wake()
}

// podIP is the pod's IP as last reported, "" before it has one.
func (k *Kubelet) podIP(uid types.UID) string {
	k.mu.Lock()
	w := k.workers[uid]
	k.mu.Unlock()
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lastStatus != nil && w.lastStatus.PodIP != "" {
		return w.lastStatus.PodIP
	}
	if w.pod != nil {
		return w.pod.Status.PodIP
	}
	return ""
}
