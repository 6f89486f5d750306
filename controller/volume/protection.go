package volume

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"minik/internal/volumeutil"
)

// ProtectionPlan is upstream's pvc-protection and pv-protection
// controllers: a deleted claim loses its finalizer once no scheduled,
// not-yet-terminated pod uses it (the kubelet does not start a pod whose
// claim is being deleted, so an unscheduled pod does not hold it); a
// deleted volume once it is not Bound. It returns the objects to write
// back without the finalizer.
func ProtectionPlan(claims []*corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, pods []*corev1.Pod) []Action {
	used := map[string]bool{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for i := range p.Spec.Volumes {
			if name := volumeutil.ClaimVolumeName(p, &p.Spec.Volumes[i]); name != "" {
				used[p.Namespace+"/"+name] = true
			}
		}
	}
	var out []Action
	for _, c := range claims {
		if c.DeletionTimestamp != nil && slices.Contains(c.Finalizers, volumeutil.PVCProtectionFinalizer) && !used[c.Namespace+"/"+c.Name] {
			nc := c.DeepCopy()
			nc.Finalizers = slices.DeleteFunc(nc.Finalizers, func(f string) bool { return f == volumeutil.PVCProtectionFinalizer })
			out = append(out, Action{Type: UpdateClaim, Claim: nc})
		}
	}
	for _, v := range volumes {
		if v.DeletionTimestamp != nil && slices.Contains(v.Finalizers, volumeutil.PVProtectionFinalizer) && v.Status.Phase != corev1.VolumeBound {
			nv := v.DeepCopy()
			nv.Finalizers = slices.DeleteFunc(nv.Finalizers, func(f string) bool { return f == volumeutil.PVProtectionFinalizer })
			out = append(out, Action{Type: UpdateVolume, Volume: nv})
		}
	}
	return out
}
