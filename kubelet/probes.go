package kubelet

import (
	"k8s.io/apimachinery/pkg/types"

	"minik/kubelet/podstep"
	"minik/kubelet/prober"
)

// probeResult sends a probe's new verdict to the pod's step.
func (k *Kubelet) probeResult(r prober.Result) {
	k.mu.Lock()
	w := k.workers[r.PodUID]
	k.mu.Unlock()
	if w == nil {
		return
	}
	switch {
	case r.Kind == prober.Readiness:
		w.send(podstep.Readiness{ContainerID: r.ContainerID, Ready: r.Success})
	case r.Success: // Startup
		w.send(podstep.StartupSucceeded{ContainerID: r.ContainerID})
	default: // a failed Liveness or Startup probe
		w.send(podstep.Unhealthy{ContainerID: r.ContainerID, Message: r.Message})
	}
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
