package kubelet

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik/kubelet/eviction"
	"minik/kubelet/nodestatus"
	"minik/kubelet/podstep"
)

// podCleanupTimeout bounds the wait for an evicted pod's containers and
// volumes to go before the next synchronize (the kubelet's value).
const podCleanupTimeout = 30 * time.Second

// evictionLoop is the eviction manager's driver: every monitoring
// interval it reads the stats, lets the manager decide, reports pressure
// changes in the node status, and evicts at most one pod. After an
// eviction it waits for the pod's cleanup and synchronizes again at once,
// as the kubelet does.
func (k *Kubelet) evictionLoop(ctx context.Context) error {
	for {
		evicted := k.synchronizeEvictions(ctx)
		if evicted != nil {
			select {
			case <-evicted:
			case <-ctx.Done():
				return nil
			case <-k.cfg.Clock.After(podCleanupTimeout):
				k.log.Warn("eviction manager: pod cleanup timed out")
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-k.cfg.Clock.After(k.cfg.EvictionMonitoringInterval):
		}
	}
}

// synchronizeEvictions runs one pass of the eviction manager. It returns
// a channel closed once the pod it evicted is cleaned up, nil when it
// evicted none.
func (k *Kubelet) synchronizeEvictions(ctx context.Context) <-chan struct{} {
	summary, err := k.stats.Summary(ctx)
	if err != nil {
		k.log.Warn("eviction manager: reading stats", "err", err)
		if summary == nil {
			return nil
		}
	}
	before := k.evictions.Conditions()
	d := k.evictions.Synchronize(k.cfg.Clock.Now(), summary, k.runningPods(""))
	if !slices.Equal(before, d.Conditions) {
		k.log.Info("eviction manager: node pressure changed", "conditions", d.Conditions)
		k.nodes.Kick()
	}
	if d.Reclaim == "" {
		return nil
	}
	k.log.Info("eviction manager: attempting to reclaim", "resource", d.Reclaim)
	k.recorder.Eventf(nodestatus.Ref(k.cfg.NodeName), corev1.EventTypeWarning, "EvictionThresholdMet", "Attempting to reclaim %s", d.Reclaim)
	for _, pod := range d.Candidates {
		if done := k.evictPod(pod, d.Message(pod)); done != nil {
			return done
		}
	}
	k.log.Info("eviction manager: unable to evict any pods from the node")
	return nil
}

// evictPod fails the pod with reason Evicted: its worker kills its
// containers at once (a hard threshold allows no grace period) and
// removes its volumes. It returns a channel closed when that is done,
// nil if the pod has no worker.
func (k *Kubelet) evictPod(pod *corev1.Pod, message string) <-chan struct{} {
	k.mu.Lock()
	w := k.workers[pod.UID]
	k.mu.Unlock()
	if w == nil {
		return nil
	}
	k.log.Info("eviction manager: evicting pod", "pod", pod.Namespace+"/"+pod.Name, "message", message)
	k.recorder.Eventf(k.eventTarget(pod), corev1.EventTypeWarning, eviction.Reason, "%s", message)
	return w.evict(message)
}

// evict marks the pod evicted and wakes its worker.
func (w *podWorker) evict(message string) <-chan struct{} {
	w.mu.Lock()
	if w.state.Evicted == nil {
		w.state.Evicted = &podstep.Failure{Reason: eviction.Reason, Message: message}
		w.state.CleanedUp = make(chan struct{})
	}
	done := w.state.CleanedUp
	w.mu.Unlock()
	w.wake()
	return done
}
