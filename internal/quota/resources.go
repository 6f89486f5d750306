// Package quota holds the resource rules shared by the LimitRanger and
// ResourceQuota admission plugins and the resource quota controller: what
// a pod requests and limits, what an object charges to a quota, which
// quotas it falls under, and whether a charge fits. It is pure: no IO.
package quota

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// PodRequests returns the requests of a pod as a whole: the sum of its
// containers and restartable (sidecar) init containers, or the largest
// init container's needs with the sidecars started before it, whichever
// is larger, plus the pod's overhead (upstream's resourcehelper rule). A
// resource no container names is absent.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	return podTotal(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests })
}

// PodLimits is PodRequests for limits.
func PodLimits(pod *corev1.Pod) corev1.ResourceList {
	return podTotal(pod, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits })
}

func podTotal(pod *corev1.Pod, of func(*corev1.Container) corev1.ResourceList) corev1.ResourceList {
	sum := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		Add(sum, of(&pod.Spec.Containers[i]))
	}
	sidecars := corev1.ResourceList{}
	initMax := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			Add(sum, of(c))
			Add(sidecars, of(c))
			maxInto(initMax, sidecars)
			continue
		}
		need := corev1.ResourceList{}
		Add(need, sidecars)
		Add(need, of(c))
		maxInto(initMax, need)
	}
	maxInto(sum, initMax)
	if len(sum) > 0 {
		Add(sum, pod.Spec.Overhead)
	}
	return sum
}

// Add adds b into a.
func Add(a, b corev1.ResourceList) {
	for k, v := range b {
		q := a[k]
		q.Add(v)
		a[k] = q
	}
}

func maxInto(a, b corev1.ResourceList) {
	for k, v := range b {
		if q, ok := a[k]; !ok || v.Cmp(q) > 0 {
			a[k] = v.DeepCopy()
		}
	}
}

// Subtract returns a - b for the names in a.
func Subtract(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range a {
		q := v.DeepCopy()
		if other, ok := b[k]; ok {
			q.Sub(other)
		}
		out[k] = q
	}
	return out
}

// Mask returns the entries of list whose names are in names.
func Mask(list corev1.ResourceList, names []corev1.ResourceName) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, n := range names {
		if v, ok := list[n]; ok {
			out[n] = v
		}
	}
	return out
}

var one = resource.MustParse("1")
