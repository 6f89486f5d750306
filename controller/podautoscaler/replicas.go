package podautoscaler

import (
	"errors"
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// PodUsage is one pod's usage of a resource (the sum over its containers,
// in milli-units: millicores, or bytes×1000 for memory) at Timestamp over
// Window, as metrics.k8s.io reports it.
type PodUsage struct {
	Value     int64
	Timestamp time.Time
	Window    time.Duration
}

// resourceReplicas is upstream's replica calculator for a Resource metric
// with an Utilization target (target > 0) or an AverageValue target
// (targetValue > 0, milli-units): the ratio of usage to target over the
// ready pods that have metrics, with not-ready and missing pods counted
// conservatively so that they never cause a scale in the wrong direction.
// It returns the proposal, the utilization (percent of request, 0 for an
// average-value target) and the average raw usage per pod.
func resourceReplicas(current int32, target int32, targetValue int64, resource corev1.ResourceName, pods []*corev1.Pod,
	usage map[string]PodUsage, cfg Config, now time.Time) (replicas int32, utilization int32, rawAverage int64, err error) {
	if len(pods) == 0 {
		return 0, 0, 0, errors.New("no pods returned by selector while calculating replica count")
	}
	metrics := map[string]int64{}
	ready, unready, missing := 0, map[string]bool{}, map[string]bool{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			continue // ignored
		}
		if p.Status.Phase == corev1.PodPending {
			unready[p.Name] = true
			continue
		}
		m, ok := usage[p.Name]
		if !ok {
			missing[p.Name] = true
			continue
		}
		if resource == corev1.ResourceCPU && cpuSampleUnready(p, m, cfg, now) {
			unready[p.Name] = true
			continue
		}
		metrics[p.Name] = m.Value
		ready++
	}
	if len(metrics) == 0 {
		return 0, 0, 0, errors.New("did not receive metrics for targeted pods (pods might be unready)")
	}
	requests := map[string]int64{}
	if targetValue == 0 {
		for _, p := range pods {
			var sum int64
			for _, c := range p.Spec.Containers {
				q, ok := c.Resources.Requests[resource]
				if !ok {
					return 0, 0, 0, fmt.Errorf("missing request for %s in container %s of Pod %s", resource, c.Name, p.Name)
				}
				sum += q.MilliValue()
			}
			requests[p.Name] = sum
		}
	}
	ratio := func(m map[string]int64) (float64, int32, int64, error) {
		var total, req int64
		for name, v := range m {
			total += v
			req += requests[name]
		}
		raw := total / int64(len(m))
		if targetValue > 0 {
			return float64(total) / float64(targetValue*int64(len(m))), 0, raw, nil
		}
		if req == 0 {
			return 0, 0, 0, errors.New("no metrics returned matched known pods")
		}
		u := int32(total * 100 / req)
		return float64(u) / float64(target), u, raw, nil
	}
	usageRatio, utilization, rawAverage, err := ratio(metrics)
	if err != nil {
		return 0, 0, 0, err
	}
	scaleUpWithUnready := len(unready) > 0 && usageRatio > 1.0
	if !scaleUpWithUnready && len(missing) == 0 {
		if math.Abs(1.0-usageRatio) <= *cfg.Tolerance {
			return current, utilization, rawAverage, nil
		}
		return int32(math.Ceil(usageRatio * float64(ready))), utilization, rawAverage, nil
	}
	// Missing pods are assumed to use their whole request (the target, for
	// values) on a scale down and nothing on a scale up; not-ready pods
	// nothing on a scale up.
	if len(missing) > 0 {
		for name := range missing {
			switch {
			case usageRatio < 1.0 && targetValue > 0:
				metrics[name] = targetValue
			case usageRatio < 1.0:
				metrics[name] = requests[name] * int64(max(100, target)) / 100
			default:
				metrics[name] = 0
			}
		}
	}
	if scaleUpWithUnready {
		for name := range unready {
			metrics[name] = 0
		}
	}
	newRatio, _, _, err := ratio(metrics)
	if err != nil {
		return 0, 0, 0, err
	}
	if math.Abs(1.0-newRatio) <= *cfg.Tolerance || (usageRatio < 1.0 && newRatio > 1.0) || (usageRatio > 1.0 && newRatio < 1.0) {
		return current, utilization, rawAverage, nil
	}
	proposal := int32(math.Ceil(newRatio * float64(len(metrics))))
	if (newRatio < 1.0 && proposal > current) || (newRatio > 1.0 && proposal < current) {
		return current, utilization, rawAverage, nil
	}
	return proposal, utilization, rawAverage, nil
}

// cpuSampleUnready is upstream's rule for CPU samples: during its first
// CPUInitializationPeriod a pod's sample counts only once the pod is ready
// and the sample's window started after it became ready; later, only a
// pod that has never been ready (unready since shortly after it started)
// is left out.
func cpuSampleUnready(p *corev1.Pod, m PodUsage, cfg Config, now time.Time) bool {
	var cond *corev1.PodCondition
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			cond = &p.Status.Conditions[i]
		}
	}
	if cond == nil || p.Status.StartTime == nil {
		return true
	}
	if p.Status.StartTime.Add(*cfg.CPUInitializationPeriod).After(now) {
		return cond.Status == corev1.ConditionFalse || m.Timestamp.Before(cond.LastTransitionTime.Add(m.Window))
	}
	return cond.Status == corev1.ConditionFalse && p.Status.StartTime.Add(*cfg.InitialReadinessDelay).After(cond.LastTransitionTime.Time)
}
