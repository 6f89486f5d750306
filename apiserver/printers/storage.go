package printers

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/internal/volumeutil"
)

var persistentVolumeColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Capacity", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["capacity"]},
	{Name: "Access Modes", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["accessModes"]},
	{Name: "Reclaim Policy", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["persistentVolumeReclaimPolicy"]},
	{Name: "Status", Type: "string", Description: corev1.PersistentVolumeStatus{}.SwaggerDoc()["phase"]},
	{Name: "Claim", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["claimRef"]},
	{Name: "StorageClass", Type: "string", Description: "StorageClass of the pv"},
	{Name: "VolumeAttributesClass", Type: "string", Description: "VolumeAttributesClass of the pv"},
	{Name: "Reason", Type: "string", Description: corev1.PersistentVolumeStatus{}.SwaggerDoc()["reason"]},
	ageColumn,
	{Name: "VolumeMode", Type: "string", Priority: 1, Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["volumeMode"]},
}

var persistentVolumeClaimColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Status", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"]},
	{Name: "Volume", Type: "string", Description: corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"]},
	{Name: "Capacity", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"]},
	{Name: "Access Modes", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"]},
	{Name: "StorageClass", Type: "string", Description: "StorageClass of the pvc"},
	{Name: "VolumeAttributesClass", Type: "string", Description: "VolumeAttributesClass of the pvc"},
	ageColumn,
	{Name: "VolumeMode", Type: "string", Priority: 1, Description: corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"]},
}

var storageClassColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Provisioner", Type: "string", Description: "Indicates the type of the provisioner."},
	{Name: "ReclaimPolicy", Type: "string", Description: "Indicates the type of the reclaim policy."},
	{Name: "VolumeBindingMode", Type: "string", Description: "Indicates the type of the volumeBindingMode."},
	{Name: "AllowVolumeExpansion", Type: "string", Description: "Indicates whether the storage class allow volume expand."},
	ageColumn,
}

// accessModes prints modes as kubectl does: short names, each once, in a
// fixed order ("RWO,ROX").
func accessModes(modes []corev1.PersistentVolumeAccessMode) string {
	has := map[corev1.PersistentVolumeAccessMode]bool{}
	for _, m := range modes {
		has[m] = true
	}
	var out []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{{corev1.ReadWriteOnce, "RWO"}, {corev1.ReadOnlyMany, "ROX"}, {corev1.ReadWriteMany, "RWX"}, {corev1.ReadWriteOncePod, "RWOP"}} {
		if has[m.mode] {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}

func unsetOr[T ~string](p *T) string {
	if p == nil {
		return "<unset>"
	}
	return string(*p)
}

// persistentVolumeRow prints NAME CAPACITY ACCESS-MODES RECLAIM-POLICY
// STATUS CLAIM STORAGECLASS VOLUMEATTRIBUTESCLASS REASON AGE VOLUMEMODE.
func persistentVolumeRow(pv *corev1.PersistentVolume, now time.Time) metav1.TableRow {
	claim := ""
	if ref := pv.Spec.ClaimRef; ref != nil {
		claim = ref.Namespace + "/" + ref.Name
	}
	phase := string(pv.Status.Phase)
	if pv.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	capacity := pv.Spec.Capacity[corev1.ResourceStorage]
	class := volumeutil.VolumeClass(pv)
	return row(pv.Name, capacity.String(), accessModes(pv.Spec.AccessModes), string(pv.Spec.PersistentVolumeReclaimPolicy),
		phase, claim, class, unsetOr(pv.Spec.VolumeAttributesClassName), pv.Status.Reason,
		since(pv.CreationTimestamp.Time, now), unsetOr(pv.Spec.VolumeMode))
}

// persistentVolumeClaimRow prints NAME STATUS VOLUME CAPACITY ACCESS-MODES
// STORAGECLASS VOLUMEATTRIBUTESCLASS AGE VOLUMEMODE; capacity and modes
// are the bound volume's, so they stay empty until the claim is bound.
func persistentVolumeClaimRow(pvc *corev1.PersistentVolumeClaim, now time.Time) metav1.TableRow {
	phase := string(pvc.Status.Phase)
	if pvc.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	capacity, modes := "", ""
	if pvc.Spec.VolumeName != "" {
		q := pvc.Status.Capacity[corev1.ResourceStorage]
		capacity, modes = q.String(), accessModes(pvc.Status.AccessModes)
	}
	class := volumeutil.ClaimClass(pvc)
	return row(pvc.Name, phase, pvc.Spec.VolumeName, capacity, modes, class, unsetOr(pvc.Spec.VolumeAttributesClassName),
		since(pvc.CreationTimestamp.Time, now), unsetOr(pvc.Spec.VolumeMode))
}

// storageClassRow prints NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE
// ALLOWVOLUMEEXPANSION AGE, with "(default)" after the default class's name.
func storageClassRow(sc *storagev1.StorageClass, now time.Time) metav1.TableRow {
	name := sc.Name
	if volumeutil.IsDefaultClass(sc) {
		name += " (default)"
	}
	reclaim, binding := string(corev1.PersistentVolumeReclaimDelete), string(storagev1.VolumeBindingImmediate)
	if sc.ReclaimPolicy != nil {
		reclaim = string(*sc.ReclaimPolicy)
	}
	if sc.VolumeBindingMode != nil {
		binding = string(*sc.VolumeBindingMode)
	}
	expansion := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
	return row(name, sc.Provisioner, reclaim, binding, expansion, since(sc.CreationTimestamp.Time, now))
}

var csiDriverColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "AttachRequired", Type: "boolean", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["attachRequired"]},
	{Name: "PodInfoOnMount", Type: "boolean", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["podInfoOnMount"]},
	{Name: "StorageCapacity", Type: "boolean", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["storageCapacity"]},
	{Name: "TokenRequests", Type: "string", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["tokenRequests"]},
	{Name: "RequiresRepublish", Type: "boolean", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["requiresRepublish"]},
	{Name: "Modes", Type: "string", Description: storagev1.CSIDriverSpec{}.SwaggerDoc()["volumeLifecycleModes"]},
	ageColumn,
}

var csiNodeColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Drivers", Type: "integer", Description: "Drivers indicates the number of CSI drivers registered on the node"},
	ageColumn,
}

// csiStorageCapacityColumns has no AGE, as upstream's.
var csiStorageCapacityColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "StorageClassName", Type: "string", Description: storagev1.CSIStorageCapacity{}.SwaggerDoc()["storageClassName"]},
	{Name: "Capacity", Type: "string", Description: storagev1.CSIStorageCapacity{}.SwaggerDoc()["capacity"]},
}

var volumeAttachmentColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Attacher", Type: "string", Format: "name", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["attacher"]},
	{Name: "PV", Type: "string", Description: storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"]},
	{Name: "Node", Type: "string", Description: storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["nodeName"]},
	{Name: "Attached", Type: "boolean", Description: storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"]},
	ageColumn,
}

// csiDriverRow prints NAME ATTACHREQUIRED PODINFOONMOUNT STORAGECAPACITY
// TOKENREQUESTS (the audiences, <unset> without any) REQUIRESREPUBLISH
// MODES AGE; unset flags print as their defaults.
func csiDriverRow(d *storagev1.CSIDriver, now time.Time) metav1.TableRow {
	tokens := "<unset>"
	if d.Spec.TokenRequests != nil {
		var audiences []string
		for _, t := range d.Spec.TokenRequests {
			audiences = append(audiences, t.Audience)
		}
		tokens = strings.Join(audiences, ",")
	}
	modes := "<none>"
	if len(d.Spec.VolumeLifecycleModes) > 0 {
		var names []string
		for _, m := range d.Spec.VolumeLifecycleModes {
			names = append(names, string(m))
		}
		modes = strings.Join(names, ",")
	}
	return row(d.Name, boolOr(d.Spec.AttachRequired, true), boolOr(d.Spec.PodInfoOnMount, false), boolOr(d.Spec.StorageCapacity, false),
		tokens, boolOr(d.Spec.RequiresRepublish, false), modes, since(d.CreationTimestamp.Time, now))
}

// boolOr is *b, or unset when b is nil.
func boolOr(b *bool, unset bool) bool {
	if b == nil {
		return unset
	}
	return *b
}

// csiNodeRow prints NAME DRIVERS AGE.
func csiNodeRow(n *storagev1.CSINode, now time.Time) metav1.TableRow {
	return row(n.Name, int64(len(n.Spec.Drivers)), since(n.CreationTimestamp.Time, now))
}

// csiStorageCapacityRow prints NAME STORAGECLASSNAME CAPACITY.
func csiStorageCapacityRow(c *storagev1.CSIStorageCapacity, _ time.Time) metav1.TableRow {
	capacity := "<unset>"
	if c.Capacity != nil {
		capacity = c.Capacity.String()
	}
	return row(c.Name, c.StorageClassName, capacity)
}

// volumeAttachmentRow prints NAME ATTACHER PV NODE ATTACHED AGE.
func volumeAttachmentRow(va *storagev1.VolumeAttachment, now time.Time) metav1.TableRow {
	pv := ""
	if va.Spec.Source.PersistentVolumeName != nil {
		pv = *va.Spec.Source.PersistentVolumeName
	}
	return row(va.Name, va.Spec.Attacher, pv, va.Spec.NodeName, va.Status.Attached, since(va.CreationTimestamp.Time, now))
}
