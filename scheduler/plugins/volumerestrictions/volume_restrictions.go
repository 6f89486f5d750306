// Package volumerestrictions keeps a ReadWriteOncePod claim to one pod:
// a pod whose claim has that access mode is not placed while another
// pod (on any node) uses the claim.
package volumerestrictions

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"minik/internal/volumeutil"
	"minik/scheduler/framework"
)

const (
	// Name is the plugin's name in the registry.
	Name = "VolumeRestrictions"
	// ErrReasonReadWriteOncePodConflict is upstream's reason.
	ErrReasonReadWriteOncePodConflict = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)

// VolumeRestrictions is a PreFilter plugin.
type VolumeRestrictions struct{}

var _ framework.PreFilterPlugin = &VolumeRestrictions{}

// New returns the plugin.
func New() *VolumeRestrictions { return &VolumeRestrictions{} }

// Name implements framework.Plugin.
func (*VolumeRestrictions) Name() string { return Name }

// PreFilter implements framework.PreFilterPlugin. The conflict is the same
// on every node, so it is decided once; preemption may free the claim
// (Unschedulable, not Unresolvable), as upstream.
func (*VolumeRestrictions) PreFilter(_ *framework.CycleState, pod *corev1.Pod, snap framework.SharedLister) *framework.Status {
	rwop := map[string]bool{}
	for i := range pod.Spec.Volumes {
		n := volumeutil.ClaimVolumeName(pod, &pod.Spec.Volumes[i])
		if n == "" {
			continue
		}
		if c := snap.Storage().Claim(pod.Namespace, n); c != nil && slices.Contains(c.Spec.AccessModes, corev1.ReadWriteOncePod) {
			rwop[n] = true
		}
	}
	if len(rwop) == 0 {
		return nil
	}
	for _, ni := range snap.List() {
		for _, pi := range ni.Pods {
			p := pi.Pod
			if p.Namespace != pod.Namespace || p.UID == pod.UID {
				continue
			}
			for i := range p.Spec.Volumes {
				if rwop[volumeutil.ClaimVolumeName(p, &p.Spec.Volumes[i])] {
					return framework.NewStatus(framework.Unschedulable, ErrReasonReadWriteOncePodConflict)
				}
			}
		}
	}
	return nil
}
