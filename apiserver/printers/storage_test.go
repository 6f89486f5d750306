package printers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestStorageTablesMatchGolden(t *testing.T) {
	gi := func(s string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(s)}
	}
	fs := corev1.PersistentVolumeFilesystem
	deleting := objectMeta("going", time.Minute)
	deleting.DeletionTimestamp = agoPtr(time.Second)
	assertGoldenTables(t, []goldenTable{
		{
			name: "volumes show capacity, modes, policy, phase, claim and class",
			kind: "PersistentVolume",
			objs: []runtime.Object{
				&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-1234", CreationTimestamp: ago(time.Hour)},
					Spec: corev1.PersistentVolumeSpec{Capacity: gi("2Gi"), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadWriteOnce},
						PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete, StorageClassName: "local-path", VolumeMode: &fs,
						ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "data"}},
					Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}},
				&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "manual", CreationTimestamp: ago(3 * time.Minute)},
					Spec:   corev1.PersistentVolumeSpec{Capacity: gi("1Gi"), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}, PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain},
					Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeFailed, Reason: "NotFound"}},
			},
			golden: "persistentvolume.golden",
		},
		{
			name: "claims show the bound volume's capacity and modes, and Terminating while deleted",
			kind: "PersistentVolumeClaim",
			objs: []runtime.Object{
				&corev1.PersistentVolumeClaim{ObjectMeta: objectMeta("data", time.Hour),
					Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pvc-1234", StorageClassName: ptr("local-path"), VolumeMode: &fs,
						Resources: corev1.VolumeResourceRequirements{Requests: gi("1Gi")}},
					Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: gi("2Gi"), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}},
				&corev1.PersistentVolumeClaim{ObjectMeta: objectMeta("waiting", time.Minute),
					Spec:   corev1.PersistentVolumeClaimSpec{StorageClassName: ptr("local-path"), Resources: corev1.VolumeResourceRequirements{Requests: gi("1Gi")}},
					Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}},
				&corev1.PersistentVolumeClaim{ObjectMeta: deleting, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}},
			},
			golden: "persistentvolumeclaim.golden",
		},
		{
			name: "storage classes mark the default one",
			kind: "StorageClass",
			objs: []runtime.Object{
				&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "local-path", CreationTimestamp: ago(time.Hour),
					Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
					Provisioner: "minik.io/local-path", ReclaimPolicy: ptr(corev1.PersistentVolumeReclaimDelete),
					VolumeBindingMode: ptr(storagev1.VolumeBindingWaitForFirstConsumer)},
				&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast", CreationTimestamp: ago(time.Minute)},
					Provisioner: "example.com/fast", AllowVolumeExpansion: ptr(true)},
			},
			golden: "storageclass.golden",
		},
		{
			name: "CSI drivers print unset flags as their defaults and list token audiences and modes",
			kind: "CSIDriver",
			objs: []runtime.Object{
				&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "hostpath.csi.k8s.io", CreationTimestamp: ago(time.Hour)},
					Spec: storagev1.CSIDriverSpec{AttachRequired: ptr(false), PodInfoOnMount: ptr(true), StorageCapacity: ptr(true),
						TokenRequests:        []storagev1.TokenRequest{{Audience: "vault"}, {Audience: "gcp"}},
						VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}}},
				&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "bare.example.com", CreationTimestamp: ago(time.Minute)}},
			},
			golden: "csidriver.golden",
		},
		{
			name: "CSI nodes count their drivers",
			kind: "CSINode",
			objs: []runtime.Object{
				&storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-1", CreationTimestamp: ago(time.Hour)},
					Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "a.example.com", NodeID: "n1"}, {Name: "b.example.com", NodeID: "n1"}}}},
				&storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-2", CreationTimestamp: ago(time.Minute)}},
			},
			golden: "csinode.golden",
		},
		{
			name: "storage capacities show class and capacity, and no age",
			kind: "CSIStorageCapacity",
			objs: []runtime.Object{
				&storagev1.CSIStorageCapacity{ObjectMeta: objectMeta("csisc-abc", time.Hour), StorageClassName: "fast", Capacity: ptr(resource.MustParse("100Gi"))},
				&storagev1.CSIStorageCapacity{ObjectMeta: objectMeta("csisc-unknown", time.Minute), StorageClassName: "slow"},
			},
			golden: "csistoragecapacity.golden",
		},
		{
			name: "volume attachments show attacher, volume, node and whether attached",
			kind: "VolumeAttachment",
			objs: []runtime.Object{
				&storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-1234", CreationTimestamp: ago(time.Hour)},
					Spec: storagev1.VolumeAttachmentSpec{Attacher: "hostpath.csi.k8s.io", NodeName: "node-1",
						Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr("pvc-1234")}},
					Status: storagev1.VolumeAttachmentStatus{Attached: true}},
				&storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-inline", CreationTimestamp: ago(time.Minute)},
					Spec: storagev1.VolumeAttachmentSpec{Attacher: "hostpath.csi.k8s.io", NodeName: "node-2",
						Source: storagev1.VolumeAttachmentSource{InlineVolumeSpec: &corev1.PersistentVolumeSpec{}}}},
			},
			golden: "volumeattachment.golden",
		},
	})
}
