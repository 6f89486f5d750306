package eviction

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// cmpFunc compares two pods for eviction: negative when p1 goes first.
type cmpFunc func(p1, p2 *corev1.Pod) int

// statsFunc returns a pod's stats, false when it has none.
type statsFunc func(*corev1.Pod) (PodStats, bool)

// orderedBy sorts pods by the first comparison that tells them apart.
func orderedBy(cmps ...cmpFunc) func([]*corev1.Pod) {
	return func(pods []*corev1.Pod) {
		sort.SliceStable(pods, func(i, j int) bool {
			for _, cmp := range cmps {
				if r := cmp(pods[i], pods[j]); r != 0 {
					return r < 0
				}
			}
			return false
		})
	}
}

// rankFor returns how pods are ranked under a signal's pressure, as in the
// kubelet: memory and disk first evict pods using more than they
// requested, then lower priority, then the larger consumers beyond their
// requests; PIDs go by priority, then by process count.
func rankFor(sig Signal, stats statsFunc) func([]*corev1.Pod) {
	switch sig {
	case SignalMemoryAvailable:
		return orderedBy(exceedsRequests(stats, corev1.ResourceMemory), priority, usageAboveRequest(stats, corev1.ResourceMemory))
	case SignalNodeFsAvailable:
		return orderedBy(exceedsRequests(stats, corev1.ResourceEphemeralStorage), priority, usageAboveRequest(stats, corev1.ResourceEphemeralStorage))
	case SignalNodeFsInodesFree:
		return orderedBy(exceedsRequests(stats, resourceInodes), priority, usageAboveRequest(stats, resourceInodes))
	default:
		return orderedBy(priority, processes(stats))
	}
}

// cmpBool puts the pod for which the statement is true first.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// priority puts the lower priority first.
func priority(p1, p2 *corev1.Pod) int {
	a, b := podPriority(p1), podPriority(p2)
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func podPriority(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// usage is a pod's use of a resource the kubelet reclaims.
func usage(s PodStats, r corev1.ResourceName) resource.Quantity {
	switch r {
	case corev1.ResourceMemory:
		return *resource.NewQuantity(s.memory(), resource.BinarySI)
	case corev1.ResourceEphemeralStorage:
		return *resource.NewQuantity(s.ephemeralStorage(), resource.BinarySI)
	case resourceInodes:
		return *resource.NewQuantity(s.inodes(), resource.DecimalSI)
	}
	return *resource.NewQuantity(s.Processes, resource.DecimalSI)
}

// podRequest is the pod's request of r, by the API's rule
// (k8s.io/component-helpers/resource: containers and sidecars, or the
// largest init container's needs when larger) without spec.overhead, as
// upstream's eviction manager ranks. Inodes and PIDs have no request.
func podRequest(pod *corev1.Pod, r corev1.ResourceName) resource.Quantity {
	if r != corev1.ResourceMemory && r != corev1.ResourceEphemeralStorage {
		return resource.Quantity{}
	}
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{ExcludeOverhead: true})[r]
}

// exceedsRequests puts first the pod using more of r than it requested
// (and pods without stats before both).
func exceedsRequests(stats statsFunc, r corev1.ResourceName) cmpFunc {
	return func(p1, p2 *corev1.Pod) int {
		s1, ok1 := stats(p1)
		s2, ok2 := stats(p2)
		if !ok1 || !ok2 {
			return cmpBool(!ok1, !ok2)
		}
		u1, u2 := usage(s1, r), usage(s2, r)
		req1, req2 := podRequest(p1, r), podRequest(p2, r)
		return cmpBool(u1.Cmp(req1) > 0, u2.Cmp(req2) > 0)
	}
}

// usageAboveRequest puts first the pod whose usage of r exceeds its
// request by more.
func usageAboveRequest(stats statsFunc, r corev1.ResourceName) cmpFunc {
	return func(p1, p2 *corev1.Pod) int {
		s1, ok1 := stats(p1)
		s2, ok2 := stats(p2)
		if !ok1 || !ok2 {
			return cmpBool(!ok1, !ok2)
		}
		u1, u2 := usage(s1, r), usage(s2, r)
		u1.Sub(podRequest(p1, r))
		u2.Sub(podRequest(p2, r))
		return u2.Cmp(u1)
	}
}

// processes puts first the pod running more processes.
func processes(stats statsFunc) cmpFunc {
	return func(p1, p2 *corev1.Pod) int {
		s1, ok1 := stats(p1)
		s2, ok2 := stats(p2)
		if !ok1 || !ok2 {
			return cmpBool(!ok1, !ok2)
		}
		switch {
		case s1.Processes > s2.Processes:
			return -1
		case s1.Processes < s2.Processes:
			return 1
		}
		return 0
	}
}
