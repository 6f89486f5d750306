package validation

import (
	"path"
	"reflect"
	"strings"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Storage objects follow upstream pkg/apis/core/validation (PV, PVC) and
// pkg/apis/storage/validation (StorageClass).

var (
	supportedAccessModes  = sets.New(corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod)
	supportedReclaimModes = sets.New(corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain)
	supportedVolumeModes  = sets.New(corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem)
	// A StorageClass cannot ask for Recycle: that was only ever for volumes made by hand.
	supportedClassReclaim = sets.New(corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRetain)
	supportedBindingModes = sets.New(storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer)
)

// maxProvisionerParameterSize bounds a StorageClass's parameters, keys and values together.
const maxProvisionerParameterSize = 256 * 1024

func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, required string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(modes) == 0 {
		errs = append(errs, field.Required(fldPath, required))
	}
	rwop, other := false, false
	for _, m := range modes {
		if !supportedAccessModes.Has(m) {
			errs = append(errs, field.NotSupported(fldPath, m, sets.List(supportedAccessModes)))
			continue
		}
		if m == corev1.ReadWriteOncePod {
			rwop = true
		} else {
			other = true
		}
	}
	if rwop && other {
		errs = append(errs, field.Forbidden(fldPath, "may not use ReadWriteOncePod with other access modes"))
	}
	return errs
}

func positiveQuantity(q resource.Quantity, fldPath *field.Path) field.ErrorList {
	if q.Cmp(resource.Quantity{}) <= 0 {
		return field.ErrorList{field.Invalid(fldPath, q.String(), isNotPositiveErrorMsg)}
	}
	return nil
}

func className(name string, fldPath *field.Path) field.ErrorList {
	return nameErrs(apimachineryvalidation.NameIsDNSSubdomain, name, fldPath)
}

func validatePersistentVolume(pv *corev1.PersistentVolume) field.ErrorList {
	spec := &pv.Spec
	errs := validateAccessModes(spec.AccessModes, "", specPath.Child("accessModes"))
	capPath := specPath.Child("capacity")
	if len(spec.Capacity) == 0 {
		errs = append(errs, field.Required(capPath, ""))
	}
	if _, ok := spec.Capacity[corev1.ResourceStorage]; !ok || len(spec.Capacity) > 1 {
		errs = append(errs, field.NotSupported(capPath, spec.Capacity, []corev1.ResourceName{corev1.ResourceStorage}))
	}
	for name, q := range spec.Capacity {
		errs = append(errs, validateQuantity(name, q, capPath.Key(string(name)))...)
		errs = append(errs, positiveQuantity(q, capPath.Key(string(name)))...)
	}
	if p := spec.PersistentVolumeReclaimPolicy; p != "" && !supportedReclaimModes.Has(p) {
		errs = append(errs, field.NotSupported(specPath.Child("persistentVolumeReclaimPolicy"), p, sets.List(supportedReclaimModes)))
	}
	affinity := false
	if na := spec.NodeAffinity; na != nil {
		p := specPath.Child("nodeAffinity")
		if na.Required == nil {
			errs = append(errs, field.Required(p.Child("required"), "must specify required node constraints"))
		} else {
			affinity = true
			errs = append(errs, validateNodeSelector(na.Required, p.Child("required"))...)
		}
	}
	errs = append(errs, validatePersistentVolumeSource(&spec.PersistentVolumeSource, affinity)...)
	if spec.HostPath != nil && path.Clean(spec.HostPath.Path) == "/" && spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRecycle {
		errs = append(errs, field.Forbidden(specPath.Child("persistentVolumeReclaimPolicy"), "may not be 'recycle' for a hostPath mount of '/'"))
	}
	if spec.StorageClassName != "" {
		errs = append(errs, className(spec.StorageClassName, specPath.Child("storageClassName"))...)
	}
	if m := spec.VolumeMode; m != nil && !supportedVolumeModes.Has(*m) {
		errs = append(errs, field.NotSupported(specPath.Child("volumeMode"), *m, sets.List(supportedVolumeModes)))
	}
	return errs
}

// validatePersistentVolumeSource requires exactly one source; minik can
// mount hostPath and local volumes, and checks the shape of nfs and csi
// as upstream does. The other, cloud-specific, sources are accepted as
// upstream accepts them, but no minik kubelet mounts them.
func validatePersistentVolumeSource(s *corev1.PersistentVolumeSource, nodeAffinity bool) field.ErrorList {
	kinds := []volumeKind{
		{"hostPath", s.HostPath != nil, func(p *field.Path) field.ErrorList { return validateHostPath(s.HostPath, p) }},
		{"gcePersistentDisk", s.GCEPersistentDisk != nil, nil},
		{"awsElasticBlockStore", s.AWSElasticBlockStore != nil, nil},
		{"glusterfs", s.Glusterfs != nil, nil},
		{"flocker", s.Flocker != nil, nil},
		{"nfs", s.NFS != nil, func(p *field.Path) field.ErrorList {
			var errs field.ErrorList
			if s.NFS.Server == "" {
				errs = append(errs, field.Required(p.Child("server"), ""))
			}
			if s.NFS.Path == "" {
				errs = append(errs, field.Required(p.Child("path"), ""))
			}
			if !path.IsAbs(s.NFS.Path) {
				errs = append(errs, field.Invalid(p.Child("path"), s.NFS.Path, "must be an absolute path"))
			}
			return errs
		}},
		{"rbd", s.RBD != nil, nil},
		{"quobyte", s.Quobyte != nil, nil},
		{"cephFS", s.CephFS != nil, nil},
		{"iscsi", s.ISCSI != nil, nil},
		{"cinder", s.Cinder != nil, nil},
		{"fc", s.FC != nil, nil},
		{"flexVolume", s.FlexVolume != nil, nil},
		{"azureFile", s.AzureFile != nil, nil},
		{"vsphereVolume", s.VsphereVolume != nil, nil},
		{"photonPersistentDisk", s.PhotonPersistentDisk != nil, nil},
		{"portworxVolume", s.PortworxVolume != nil, nil},
		{"azureDisk", s.AzureDisk != nil, nil},
		{"scaleIO", s.ScaleIO != nil, nil},
		{"local", s.Local != nil, func(p *field.Path) field.ErrorList {
			var errs field.ErrorList
			if s.Local.Path == "" {
				errs = append(errs, field.Required(p.Child("path"), ""))
			} else {
				errs = append(errs, noBacksteps(s.Local.Path, p.Child("path"))...)
			}
			if !nodeAffinity {
				errs = append(errs, field.Required(specPath.Child("nodeAffinity"), "Local volume requires node affinity"))
			}
			return errs
		}},
		{"storageos", s.StorageOS != nil, nil},
		{"csi", s.CSI != nil, func(p *field.Path) field.ErrorList { return validateCSIVolumeSource(s.CSI, p) }},
	}
	return exactlyOneVolumeType(kinds, specPath)
}

func validateCSIVolumeSource(s *corev1.CSIPersistentVolumeSource, p *field.Path) field.ErrorList {
	errs := validateCSIDriverName(s.Driver, p.Child("driver"))
	if s.VolumeHandle == "" {
		errs = append(errs, field.Required(p.Child("volumeHandle"), ""))
	}
	return errs
}

// validateInlineVolumeSpec checks a volume spec carried inside another
// object (a VolumeAttachment's source): a CSI volume and its access
// modes only, as upstream's ValidatePersistentVolumeSpec for inline volumes.
func validateInlineVolumeSpec(spec *corev1.PersistentVolumeSpec, p *field.Path) field.ErrorList {
	const inline = "may not be specified in the context of inline volumes"
	var errs field.ErrorList
	if spec.ClaimRef != nil {
		errs = append(errs, field.Forbidden(p.Child("claimRef"), inline))
	}
	if len(spec.Capacity) != 0 {
		errs = append(errs, field.Forbidden(p.Child("capacity"), inline))
	}
	if spec.CSI == nil {
		errs = append(errs, field.Required(p.Child("csi"), "has to be specified in the context of inline volumes"))
	} else {
		errs = append(errs, validateCSIVolumeSource(spec.CSI, p.Child("csi"))...)
	}
	errs = append(errs, validateAccessModes(spec.AccessModes, "", p.Child("accessModes"))...)
	if r := spec.PersistentVolumeReclaimPolicy; r != "" && r != corev1.PersistentVolumeReclaimRetain {
		errs = append(errs, field.Forbidden(p.Child("persistentVolumeReclaimPolicy"), "may only be Retain in the context of inline volumes"))
	}
	if spec.NodeAffinity != nil {
		errs = append(errs, field.Forbidden(p.Child("nodeAffinity"), inline))
	}
	if spec.StorageClassName != "" {
		errs = append(errs, field.Forbidden(p.Child("storageClassName"), inline))
	}
	if m := spec.VolumeMode; m != nil && *m != corev1.PersistentVolumeFilesystem {
		errs = append(errs, field.Forbidden(p.Child("volumeMode"), "may not specify volumeMode other than Filesystem in the context of inline volumes"))
	}
	return errs
}

// validatePersistentVolumeUpdate keeps the volume source and mode as they
// were created; node affinity may be set once.
func validatePersistentVolumeUpdate(pv, old *corev1.PersistentVolume) field.ErrorList {
	errs := validatePersistentVolume(pv)
	if !apiequality.Semantic.DeepEqual(pv.Spec.PersistentVolumeSource, old.Spec.PersistentVolumeSource) {
		diff := cmp.Diff(old.Spec.PersistentVolumeSource, pv.Spec.PersistentVolumeSource)
		errs = append(errs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"), "spec.persistentvolumesource is immutable after creation\n"+diff))
	}
	// upstream reports these two without the spec prefix.
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(pv.Spec.VolumeMode, old.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	if old.Spec.NodeAffinity != nil && !apiequality.Semantic.DeepEqual(pv.Spec.NodeAffinity, old.Spec.NodeAffinity) {
		errs = append(errs, field.Invalid(field.NewPath("nodeAffinity"), pv.Spec.NodeAffinity, "field is immutable"))
	}
	return errs
}

func validatePersistentVolumeClaimSpec(spec *corev1.PersistentVolumeClaimSpec, fldPath *field.Path) field.ErrorList {
	errs := validateAccessModes(spec.AccessModes, "at least 1 access mode is required", fldPath.Child("accessModes"))
	if spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, strictSelector, fldPath.Child("selector"))...)
	}
	sp := fldPath.Child("resources").Key(string(corev1.ResourceStorage))
	if q, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(sp, ""))
	} else if el := positiveQuantity(q, sp); len(el) > 0 {
		errs = append(errs, el...)
	} else {
		errs = append(errs, validateQuantity(corev1.ResourceStorage, q, sp)...)
	}
	if spec.StorageClassName != nil && *spec.StorageClassName != "" {
		errs = append(errs, className(*spec.StorageClassName, fldPath.Child("storageClassName"))...)
	}
	if m := spec.VolumeMode; m != nil && !supportedVolumeModes.Has(*m) {
		errs = append(errs, field.NotSupported(fldPath.Child("volumeMode"), *m, sets.List(supportedVolumeModes)))
	}
	if ds := spec.DataSource; ds != nil {
		p := fldPath.Child("dataSource")
		if ds.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if ds.Kind == "" {
			errs = append(errs, field.Required(p.Child("kind"), ""))
		}
		if (ds.APIGroup == nil || *ds.APIGroup == "") && ds.Kind != "PersistentVolumeClaim" {
			errs = append(errs, field.Invalid(p, ds.Kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
		}
	}
	return errs
}

// validatePersistentVolumeClaimUpdate allows, as upstream: volumeName set
// once (by the binder), a larger storage request, and nothing else in spec.
func validatePersistentVolumeClaimUpdate(pvc, old *corev1.PersistentVolumeClaim) field.ErrorList {
	errs := validatePersistentVolumeClaimSpec(&pvc.Spec, specPath)
	newSpec, oldSpec := pvc.Spec.DeepCopy(), old.Spec.DeepCopy()
	if oldSpec.VolumeName == "" {
		oldSpec.VolumeName = newSpec.VolumeName
	}
	// A claim created before the default class existed may get one later.
	if oldSpec.StorageClassName == nil && newSpec.StorageClassName != nil && old.Annotations[corev1.BetaStorageClassAnnotation] == "" {
		oldSpec.StorageClassName = newSpec.StorageClassName
	}
	if pvc.Status.Phase == corev1.ClaimBound && newSpec.Resources.Requests != nil {
		newSpec.Resources.Requests[corev1.ResourceStorage] = old.Spec.Resources.Requests[corev1.ResourceStorage]
	}
	newSpec.VolumeAttributesClassName = oldSpec.VolumeAttributesClassName
	if !apiequality.Semantic.DeepEqual(newSpec, oldSpec) {
		errs = append(errs, field.Forbidden(specPath, "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n"+cmp.Diff(*oldSpec, *newSpec)))
	}
	oldSize, newSize := old.Spec.Resources.Requests[corev1.ResourceStorage], pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) < 0 {
		errs = append(errs, field.Forbidden(specPath.Child("resources", "requests", "storage"), "field can not be less than previous value"))
	}
	return append(errs, apimachineryvalidation.ValidateImmutableField(pvc.Spec.VolumeMode, old.Spec.VolumeMode, field.NewPath("volumeMode"))...)
}

func validatePersistentVolumeClaimStatus(pvc *corev1.PersistentVolumeClaim) field.ErrorList {
	var errs field.ErrorList
	capPath := statusPath.Child("capacity")
	for name, q := range pvc.Status.Capacity {
		errs = append(errs, validateResourceName(name, capPath.Key(string(name)))...)
		errs = append(errs, validateQuantity(name, q, capPath.Key(string(name)))...)
	}
	return errs
}

func validateStorageClass(sc *storagev1.StorageClass) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("provisioner")
	switch {
	case sc.Provisioner == "":
		errs = append(errs, field.Required(p, sc.Provisioner))
	case len(sc.Provisioner) > 63:
		errs = append(errs, field.TooLong(p, sc.Provisioner, 63))
	default:
		for _, msg := range validation.IsQualifiedName(strings.ToLower(sc.Provisioner)) {
			errs = append(errs, field.Invalid(p, sc.Provisioner, msg))
		}
	}
	size := 0
	for k, v := range sc.Parameters {
		if k == "" {
			errs = append(errs, field.Invalid(field.NewPath("parameters"), sc.Parameters, "key cannot be empty"))
			break
		}
		size += len(k) + len(v)
	}
	if size > maxProvisionerParameterSize {
		errs = append(errs, field.TooLong(field.NewPath("parameters"), "", maxProvisionerParameterSize))
	}
	if r := sc.ReclaimPolicy; r != nil && *r != "" && !supportedClassReclaim.Has(*r) {
		errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), *r, sets.List(supportedClassReclaim)))
	}
	bp := field.NewPath("volumeBindingMode")
	if m := sc.VolumeBindingMode; m == nil {
		errs = append(errs, field.Required(bp, ""))
	} else if !supportedBindingModes.Has(*m) {
		errs = append(errs, field.NotSupported(bp, *m, sets.List(supportedBindingModes)))
	}
	for i, term := range sc.AllowedTopologies {
		tp := field.NewPath("allowedTopologies").Index(i)
		if len(term.MatchLabelExpressions) == 0 {
			errs = append(errs, field.Required(tp.Child("matchLabelExpressions"), "must have at least one label expression"))
		}
		for j, e := range term.MatchLabelExpressions {
			ep := tp.Child("matchLabelExpressions").Index(j)
			errs = append(errs, qualifiedName(e.Key, ep.Child("key"))...)
			if len(e.Values) == 0 {
				errs = append(errs, field.Required(ep.Child("values"), "must have at least one value"))
			}
		}
	}
	return errs
}

// validateStorageClassUpdate keeps what provisioned volumes depend on.
func validateStorageClassUpdate(sc, old *storagev1.StorageClass) field.ErrorList {
	errs := validateStorageClass(sc)
	if !reflect.DeepEqual(sc.Parameters, old.Parameters) {
		errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
	}
	if sc.Provisioner != old.Provisioner {
		errs = append(errs, field.Forbidden(field.NewPath("provisioner"), "updates to provisioner are forbidden."))
	}
	if sc.ReclaimPolicy != nil && old.ReclaimPolicy != nil && *sc.ReclaimPolicy != *old.ReclaimPolicy {
		errs = append(errs, field.Forbidden(field.NewPath("reclaimPolicy"), "updates to reclaimPolicy are forbidden."))
	}
	return append(errs, apimachineryvalidation.ValidateImmutableField(sc.VolumeBindingMode, old.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
}
