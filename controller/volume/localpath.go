package volume

import (
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/internal/volumeutil"
)

// ProvisionLocalPath is the control-plane half of the local-path
// provisioner: the PersistentVolume for claim c on the node the scheduler
// selected. It is a `local` volume at <node's local-path dir>/<pv name>
// (the dir the node's kubelet publishes in AnnLocalPathDir), pinned to
// that node, as large as the request, pre-bound to c. The directory
// itself is made by that kubelet when it first mounts the volume, and
// removed by it when the volume is Released with reclaim Delete: no
// control-plane component touches a node's disk.
func ProvisionLocalPath(c *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, node *corev1.Node, nodeName string) (*corev1.PersistentVolume, error) {
	if nodeName == "" {
		return nil, fmt.Errorf("configuration error, no node was specified: the %s class needs volumeBindingMode %s", class.Name, storagev1.VolumeBindingWaitForFirstConsumer)
	}
	if node == nil {
		return nil, fmt.Errorf("node %q not found", nodeName)
	}
	dir := node.Annotations[volumeutil.AnnLocalPathDir]
	if dir == "" || !path.IsAbs(dir) {
		return nil, fmt.Errorf("node %q does not publish its local-path directory (annotation %s)", nodeName, volumeutil.AnnLocalPathDir)
	}
	for _, m := range c.Spec.AccessModes {
		if m != corev1.ReadWriteOnce && m != corev1.ReadWriteOncePod {
			return nil, fmt.Errorf("only the ReadWriteOnce and ReadWriteOncePod access modes are supported by %s, not %s", class.Provisioner, m)
		}
	}
	if c.Spec.VolumeMode != nil && *c.Spec.VolumeMode == corev1.PersistentVolumeBlock {
		return nil, fmt.Errorf("volumeMode %s is not supported by %s", corev1.PersistentVolumeBlock, class.Provisioner)
	}
	name := "pvc-" + string(c.UID)
	reclaim := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		reclaim = *class.ReclaimPolicy
	}
	fs := corev1.PersistentVolumeFilesystem
	return &corev1.PersistentVolume{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
			volumeutil.AnnProvisionedBy: class.Provisioner,
			volumeutil.AnnSelectedNode:  nodeName,
		}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: c.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   c.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              class.Name,
			VolumeMode:                    &fs,
			MountOptions:                  class.MountOptions,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				Local: &corev1.LocalVolumeSource{Path: path.Join(dir, name)},
			},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{nodeName}}},
			}}}},
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: c.Namespace, Name: c.Name, UID: c.UID, ResourceVersion: c.ResourceVersion},
		},
	}, nil
}
