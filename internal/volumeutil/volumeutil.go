// Package volumeutil holds the storage API rules that the apiserver, the
// volume controllers, the scheduler and the kubelet share (as upstream's
// k8s.io/component-helpers/storage/volume): the well-known annotations and
// finalizers, which class a claim or volume belongs to, the default class,
// and whether a volume may be used from a node.
package volumeutil

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"minik/internal/nodeaffinity"
)

// Annotations and finalizers with upstream's names.
const (
	// IsDefaultClassAnnotation marks the StorageClass that claims without
	// a class get (and that kubectl prints as "NAME (default)").
	IsDefaultClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	betaIsDefaultClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"

	// AnnBindCompleted on a claim says the binder finished binding it.
	AnnBindCompleted = "pv.kubernetes.io/bind-completed"
	// AnnBoundByController says the binder (not a user) set the binding
	// on this object, so the binder may undo it.
	AnnBoundByController = "pv.kubernetes.io/bound-by-controller"
	// AnnSelectedNode is set by the scheduler on a WaitForFirstConsumer
	// claim: provision the volume for this node.
	AnnSelectedNode = "volume.kubernetes.io/selected-node"
	// AnnStorageProvisioner hands a claim to the provisioner of its class.
	AnnStorageProvisioner     = "volume.kubernetes.io/storage-provisioner"
	AnnBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
	// AnnProvisionedBy names the provisioner that made a volume.
	AnnProvisionedBy = "pv.kubernetes.io/provisioned-by"

	// PVCProtectionFinalizer and PVProtectionFinalizer are added on create
	// (StorageObjectInUseProtection) and removed by the protection
	// controller once no pod uses the claim, or no claim the volume.
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	PVProtectionFinalizer  = "kubernetes.io/pv-protection"
)

// The local-path class minik creates at bootstrap, and its provisioner.
const (
	LocalPathClass       = "local-path"
	LocalPathProvisioner = "minik.io/local-path"
	// LocalPathDir is the directory under a node's data dir that holds the
	// local-path volumes, one sub-directory per PersistentVolume.
	LocalPathDir = "local-path"
)

// IsDefaultClass reports whether sc is annotated as the default class.
func IsDefaultClass(sc *storagev1.StorageClass) bool {
	return sc.Annotations[IsDefaultClassAnnotation] == "true" || sc.Annotations[betaIsDefaultClassAnnotation] == "true"
}

// ClaimClass is the class a claim asks for: the beta annotation if set,
// else spec.storageClassName ("" means no class).
func ClaimClass(pvc *corev1.PersistentVolumeClaim) string {
	if c, ok := pvc.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		return c
	}
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return ""
}

// VolumeClass is the class of a volume: the beta annotation if set, else
// spec.storageClassName.
func VolumeClass(pv *corev1.PersistentVolume) string {
	if c, ok := pv.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		return c
	}
	return pv.Spec.StorageClassName
}

// BindingMode is a class's volumeBindingMode (Immediate when unset).
func BindingMode(sc *storagev1.StorageClass) storagev1.VolumeBindingMode {
	if sc == nil || sc.VolumeBindingMode == nil {
		return storagev1.VolumeBindingImmediate
	}
	return *sc.VolumeBindingMode
}

// NodeAffinityMatches reports whether pv may be used from node: a volume
// without node affinity is reachable from everywhere.
func NodeAffinityMatches(pv *corev1.PersistentVolume, node *corev1.Node) bool {
	na := pv.Spec.NodeAffinity
	if na == nil || na.Required == nil {
		return true
	}
	match, _ := nodeaffinity.MatchNodeSelectorTerms(node, na.Required)
	return match
}

// ClaimVolumeName is the claim a pod volume uses, or "" for other sources.
// A generic ephemeral volume's claim is named <pod>-<volume>.
func ClaimVolumeName(pod *corev1.Pod, v *corev1.Volume) string {
	switch {
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName
	case v.Ephemeral != nil:
		return pod.Name + "-" + v.Name
	}
	return ""
}

// LocalPathNode returns the node a local-path volume lives on (its
// AnnSelectedNode, which the provisioner copies from the claim), or ""
// for every other volume.
func LocalPathNode(pv *corev1.PersistentVolume) string {
	if pv.Annotations[AnnProvisionedBy] != LocalPathProvisioner {
		return ""
	}
	return pv.Annotations[AnnSelectedNode]
}

// AnnLocalPathDir is the Node annotation where a kubelet publishes the
// directory that holds its local-path volumes; the provisioner builds each
// volume's path from it, and that kubelet creates only directories in it.
const AnnLocalPathDir = "minik.io/local-path-dir"

// FindVolume returns the smallest free volume that satisfies c (class,
// volume mode, access modes, size, selector), reachable from node when
// node is set; ties go to the first in vols (callers sort them by name).
// taken names volumes already promised to other claims. nil if none.
func FindVolume(c *corev1.PersistentVolumeClaim, vols []*corev1.PersistentVolume, taken map[string]bool, node *corev1.Node) *corev1.PersistentVolume {
	var best *corev1.PersistentVolume
	for _, v := range vols {
		if taken[v.Name] || v.Spec.ClaimRef != nil || v.DeletionTimestamp != nil ||
			v.Status.Phase == corev1.VolumeReleased || v.Status.Phase == corev1.VolumeFailed || !Matches(v, c) {
			continue
		}
		if node != nil && !NodeAffinityMatches(v, node) {
			continue
		}
		if have, cur := Capacity(v), Capacity(best); best == nil || have.Cmp(cur) < 0 {
			best = v
		}
	}
	return best
}

// Capacity is a volume's storage capacity.
func Capacity(v *corev1.PersistentVolume) resource.Quantity {
	if v == nil {
		return resource.Quantity{}
	}
	return v.Spec.Capacity[corev1.ResourceStorage]
}

// Matches reports whether v can serve c, leaving out who holds v.
func Matches(v *corev1.PersistentVolume, c *corev1.PersistentVolumeClaim) bool {
	if VolumeClass(v) != ClaimClass(c) {
		return false
	}
	if mode(v.Spec.VolumeMode) != mode(c.Spec.VolumeMode) {
		return false
	}
	for _, m := range c.Spec.AccessModes {
		if !slices.Contains(v.Spec.AccessModes, m) {
			return false
		}
	}
	want := c.Spec.Resources.Requests[corev1.ResourceStorage]
	have := Capacity(v)
	if have.Cmp(want) < 0 {
		return false
	}
	if c.Spec.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(c.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(v.Labels)) {
			return false
		}
	}
	return true
}

func mode(m *corev1.PersistentVolumeMode) corev1.PersistentVolumeMode {
	if m == nil {
		return corev1.PersistentVolumeFilesystem
	}
	return *m
}
