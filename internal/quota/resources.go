// Package quota holds the resource rules shared by the LimitRanger and
// ResourceQuota admission plugins and the resource quota controller: what
// a pod requests and limits, what an object charges to a quota, which
// quotas it falls under, and whether a charge fits. It is pure: no IO.
package quota

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// PodRequests returns the requests of a pod as a whole, by the API's
// rule the scheduler and the kubelet share (k8s.io/component-helpers):
// its containers and sidecars (restartable init containers) together, or
// its largest init container's needs with the sidecars started before it,
// whichever is larger; pod-level requests instead when set; plus the
// pod's overhead. A resource nothing names is absent.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

// PodLimits is PodRequests for limits; the overhead adds only to the
// resources that have a limit.
func PodLimits(pod *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
}

// Add adds b into a.
func Add(a, b corev1.ResourceList) {
	for k, v := range b {
		q := a[k]
		q.Add(v)
		a[k] = q
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
