package defaults

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"
)

// PersistentVolume defaults the reclaim policy to Retain (a volume made by
// hand is kept when its claim goes) and volumeMode to Filesystem, as
// upstream's SetDefaults_PersistentVolume does.
func PersistentVolume(pv *corev1.PersistentVolume) {
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	if pv.Spec.VolumeMode == nil {
		pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	if pv.Spec.HostPath != nil && pv.Spec.HostPath.Type == nil {
		pv.Spec.HostPath.Type = ptr.To(corev1.HostPathUnset)
	}
	if pv.Status.Phase == "" {
		pv.Status.Phase = corev1.VolumePending
	}
}

// PersistentVolumeClaim defaults volumeMode to Filesystem and the phase to
// Pending.
func PersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) {
	if pvc.Spec.VolumeMode == nil {
		pvc.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	if pvc.Status.Phase == "" {
		pvc.Status.Phase = corev1.ClaimPending
	}
}

// StorageClass defaults reclaimPolicy to Delete (dynamically provisioned
// volumes go with their claim) and volumeBindingMode to Immediate.
func StorageClass(sc *storagev1.StorageClass) {
	if sc.ReclaimPolicy == nil {
		sc.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimDelete)
	}
	if sc.VolumeBindingMode == nil {
		sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingImmediate)
	}
}

// CSIDriver fills in upstream's SetDefaults_CSIDriver: attach required,
// no pod info on mount, no capacity tracking, the ReadWriteOnceWithFSType
// fsGroup policy, Persistent volumes only, no republish, and the
// SELinuxMountReadWriteOncePod and VolumeLimitScaling fields (both on in
// v1.37) false.
func CSIDriver(d *storagev1.CSIDriver) {
	for _, b := range []**bool{&d.Spec.PodInfoOnMount, &d.Spec.StorageCapacity, &d.Spec.RequiresRepublish,
		&d.Spec.SELinuxMount, &d.Spec.PreventPodSchedulingIfMissing} {
		if *b == nil {
			*b = ptr.To(false)
		}
	}
	if d.Spec.AttachRequired == nil {
		d.Spec.AttachRequired = ptr.To(true)
	}
	if d.Spec.FSGroupPolicy == nil {
		d.Spec.FSGroupPolicy = ptr.To(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)
	}
	if len(d.Spec.VolumeLifecycleModes) == 0 {
		d.Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
}
