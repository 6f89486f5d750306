package validation

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The storage.k8s.io kinds CSI drivers publish (CSIDriver, CSINode,
// CSIStorageCapacity) and the attach/detach controller writes
// (VolumeAttachment), checked as upstream's pkg/apis/storage/validation.

const (
	csiNodeIDMaxLength            = 256
	maxAttachedVolumeMetadataSize = 256 * (1 << 10)
	maxVolumeErrorMessageSize     = 1024
	// minTokenExpiration and maxTokenExpiration bound a CSIDriver's token requests.
	minTokenExpiration = 10 * time.Minute
	maxTokenExpiration = 1 << 32
)

var (
	supportedFSGroupPolicies = sets.New(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, storagev1.FileFSGroupPolicy, storagev1.NoneFSGroupPolicy)
	supportedLifecycleModes  = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}
)

func validateCSIDriver(d *storagev1.CSIDriver) field.ErrorList {
	spec, p := &d.Spec, specPath
	var errs field.ErrorList
	// Upstream's path says "attachedRequired", not the field's name.
	for _, f := range []struct {
		value *bool
		path  *field.Path
	}{{spec.AttachRequired, p.Child("attachedRequired")}, {spec.PodInfoOnMount, p.Child("podInfoOnMount")},
		{spec.StorageCapacity, p.Child("storageCapacity")}, {spec.SELinuxMount, p.Child("seLinuxMount")},
		{spec.PreventPodSchedulingIfMissing, p.Child("preventPodSchedulingIfMissing")}} {
		if f.value == nil {
			errs = append(errs, field.Required(f.path, ""))
		}
	}
	if spec.FSGroupPolicy != nil && !supportedFSGroupPolicies.Has(*spec.FSGroupPolicy) {
		errs = append(errs, field.NotSupported(p.Child("fsGroupPolicy"), *spec.FSGroupPolicy, sets.List(supportedFSGroupPolicies)))
	}
	audiences := sets.New[string]()
	for i, t := range spec.TokenRequests {
		tp := p.Child("tokenRequests").Index(i)
		if audiences.Has(t.Audience) {
			errs = append(errs, field.Duplicate(tp.Child("audience"), t.Audience))
			continue
		}
		audiences.Insert(t.Audience)
		if s := t.ExpirationSeconds; s != nil && *s < int64(minTokenExpiration.Seconds()) {
			errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), *s, "may not specify a duration less than 10 minutes"))
		} else if s != nil && *s > maxTokenExpiration {
			errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), *s, "may not specify a duration larger than 2^32 seconds"))
		}
	}
	for _, m := range spec.VolumeLifecycleModes {
		if m != storagev1.VolumeLifecyclePersistent && m != storagev1.VolumeLifecycleEphemeral {
			errs = append(errs, field.NotSupported(p.Child("volumeLifecycleModes"), m, supportedLifecycleModes))
		}
	}
	if s := spec.NodeAllocatableUpdatePeriodSeconds; s != nil && *s < 10 {
		errs = append(errs, field.Invalid(p.Child("nodeAllocatableUpdatePeriodSeconds"), *s, "must be greater than or equal to 10 seconds"))
	}
	if spec.ServiceAccountTokenInSecrets != nil && len(spec.TokenRequests) == 0 {
		errs = append(errs, field.Invalid(p.Child("serviceAccountTokenInSecrets"), spec.ServiceAccountTokenInSecrets,
			"serviceAccountTokenInSecrets is set but no tokenRequests are specified"))
	}
	return errs
}

func validateCSIDriverUpdate(d, old *storagev1.CSIDriver) field.ErrorList {
	errs := validateCSIDriver(d)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(d.Spec.AttachRequired, old.Spec.AttachRequired, specPath.Child("attachedRequired"))...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(d.Spec.VolumeLifecycleModes, old.Spec.VolumeLifecycleModes, specPath.Child("volumeLifecycleModes"))...)
}

func validateCSINode(n *storagev1.CSINode) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, d := range n.Spec.Drivers {
		p := specPath.Child("drivers").Index(i)
		errs = append(errs, validateCSIDriverName(d.Name, p.Child("name"))...)
		if d.NodeID == "" {
			errs = append(errs, field.Required(p.Child("nodeID"), ""))
		}
		if len(d.NodeID) > csiNodeIDMaxLength {
			errs = append(errs, field.Invalid(p.Child("nodeID"), d.NodeID, fmt.Sprintf("must be %d characters or less", csiNodeIDMaxLength)))
		}
		if a := d.Allocatable; a != nil && a.Count != nil {
			errs = append(errs, nonNegative(int64(*a.Count), p.Child("allocatable", "count"))...)
		}
		if names.Has(d.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), d.Name))
		}
		names.Insert(d.Name)
		keys := sets.New[string]()
		for _, key := range d.TopologyKeys {
			// Upstream reports topology key errors at the driver's path.
			if key == "" {
				errs = append(errs, field.Required(p, key))
			}
			if keys.Has(key) {
				errs = append(errs, field.Duplicate(p, key))
			}
			keys.Insert(key)
			errs = append(errs, qualifiedName(key, p)...)
		}
	}
	return errs
}

// validateCSINodeUpdate: a driver already registered keeps its entry,
// but for its allocatable count (MutableCSINodeAllocatableCount, on in v1.37).
func validateCSINodeUpdate(n, old *storagev1.CSINode) field.ErrorList {
	errs := validateCSINode(n)
	for _, o := range old.Spec.Drivers {
		for _, d := range n.Spec.Drivers {
			if o.Name != d.Name {
				continue
			}
			o, d := o.DeepCopy(), d.DeepCopy()
			o.Allocatable, d.Allocatable = nil, nil
			errs = append(errs, apimachineryvalidation.ValidateImmutableField(d, o, specPath.Child("drivers"))...)
		}
	}
	return errs
}

func validateCSIStorageCapacity(c *storagev1.CSIStorageCapacity) field.ErrorList {
	errs := metav1validation.ValidateLabelSelector(c.NodeTopology, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("nodeTopology"))
	errs = append(errs, className(c.StorageClassName, field.NewPath("storageClassName"))...)
	if c.Capacity != nil && c.Capacity.Sign() < 0 {
		errs = append(errs, field.Invalid(field.NewPath("capacity"), c.Capacity.String(), apimachineryvalidation.IsNegativeErrorMsg))
	}
	return errs
}

// validateCSIStorageCapacityUpdate: the inputs of the driver's
// GetCapacity call are immutable; the capacities are what changes.
func validateCSIStorageCapacityUpdate(c, old *storagev1.CSIStorageCapacity) field.ErrorList {
	var errs field.ErrorList
	if !apiequality.Semantic.DeepEqual(c.NodeTopology, old.NodeTopology) {
		errs = append(errs, field.Invalid(field.NewPath("nodeTopology"), c.NodeTopology, "field is immutable"))
	}
	if c.StorageClassName != old.StorageClassName {
		errs = append(errs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, "field is immutable"))
	}
	return errs
}

func validateVolumeAttachment(va *storagev1.VolumeAttachment) field.ErrorList {
	spec, p := &va.Spec, specPath
	errs := validateCSIDriverName(spec.Attacher, p.Child("attacher"))
	source := p.Child("source")
	switch s := spec.Source; {
	case s.InlineVolumeSpec == nil && s.PersistentVolumeName == nil:
		errs = append(errs, field.Required(source, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case s.InlineVolumeSpec != nil && s.PersistentVolumeName != nil:
		errs = append(errs, field.Forbidden(source, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case s.PersistentVolumeName != nil && *s.PersistentVolumeName == "":
		errs = append(errs, field.Required(source.Child("persistentVolumeName"), "must specify non empty persistentVolumeName"))
	case s.InlineVolumeSpec != nil:
		errs = append(errs, validateInlineVolumeSpec(s.InlineVolumeSpec, source.Child("inlineVolumeSpec"))...)
	}
	errs = append(errs, nameErrs(apimachineryvalidation.NameIsDNSSubdomain, spec.NodeName, p.Child("nodeName"))...)
	errs = append(errs, validateVolumeAttachmentStatus(&va.Status)...)
	if name := spec.Source.PersistentVolumeName; name != nil && *name != "" {
		errs = append(errs, nameErrs(apimachineryvalidation.NameIsDNSSubdomain, *name, source.Child("persistentVolumeName"))...)
	}
	return errs
}

func validateVolumeAttachmentStatus(s *storagev1.VolumeAttachmentStatus) field.ErrorList {
	var errs field.ErrorList
	size := 0
	for k, v := range s.AttachmentMetadata {
		size += len(k) + len(v)
	}
	if size > maxAttachedVolumeMetadataSize {
		errs = append(errs, field.TooLong(statusPath.Child("attachmentMetadata"), "", maxAttachedVolumeMetadataSize))
	}
	for _, e := range []struct {
		err  *storagev1.VolumeError
		name string
	}{{s.AttachError, "attachError"}, {s.DetachError, "detachError"}} {
		if e.err == nil {
			continue
		}
		p := statusPath.Child(e.name)
		if len(e.err.Message) > maxVolumeErrorMessageSize {
			errs = append(errs, field.TooLong(p.Child("message"), "", maxVolumeErrorMessageSize))
		}
		if c := e.err.ErrorCode; c != nil && *c < 0 {
			errs = append(errs, field.Invalid(p.Child("errorCode"), *c, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
	}
	return errs
}

// validateVolumeAttachmentUpdate: nothing in the spec changes; the
// attacher reports through the status.
func validateVolumeAttachmentUpdate(va, old *storagev1.VolumeAttachment) field.ErrorList {
	errs := validateVolumeAttachment(va)
	return append(errs, apimachineryvalidation.ValidateImmutableField(va.Spec, old.Spec, specPath)...)
}

// validateCSINodeStatus checks the storage health a driver reports.
func validateCSINodeStatus(n *storagev1.CSINode) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, h := range n.Status.StorageHealth {
		p := statusPath.Child("storageHealth").Index(i)
		if seen.Has(h.Name) {
			errs = append(errs, field.Duplicate(p, h.Name))
		}
		seen.Insert(h.Name)
		errs = append(errs, validateCSIDriverName(h.Name, p.Child("name"))...)
		if len(h.HealthConditions) > 16 {
			errs = append(errs, field.TooMany(p.Child("healthConditions"), len(h.HealthConditions), 16))
			continue
		}
		for j, c := range h.HealthConditions {
			errs = append(errs, validateStorageHealthCondition(c, p.Child("healthConditions").Index(j))...)
		}
	}
	return errs
}

var (
	storageHealthStatuses    = sets.New(storagev1.StorageUnreachable, storagev1.StorageDegraded)
	storageHealthVolumeModes = []corev1.PersistentVolumeMode{corev1.PersistentVolumeFilesystem, corev1.PersistentVolumeBlock}
)

func validateStorageHealthCondition(c storagev1.StorageHealthCondition, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !storageHealthStatuses.Has(c.Status) {
		errs = append(errs, field.NotSupported(p.Child("status"), c.Status, sets.List(storageHealthStatuses)))
	}
	if c.Reason == "" {
		errs = append(errs, field.Required(p.Child("reason"), ""))
	} else {
		for _, msg := range metav1validation.IsValidConditionReason(c.Reason) {
			errs = append(errs, field.Invalid(p.Child("reason"), c.Reason, msg))
		}
		if len(c.Reason) > 256 {
			errs = append(errs, field.TooLong(p.Child("reason"), c.Reason, 256))
		}
	}
	if len(c.Message) > 1024 {
		errs = append(errs, field.TooLong(p.Child("message"), c.Message, 1024))
	}
	if m := c.AccessMode; m != nil && !supportedAccessModes.Has(*m) {
		errs = append(errs, field.NotSupported(p.Child("accessMode"), *m, sets.List(supportedAccessModes)))
	}
	if m := c.VolumeMode; m != nil && *m != corev1.PersistentVolumeFilesystem && *m != corev1.PersistentVolumeBlock {
		errs = append(errs, field.NotSupported(p.Child("volumeMode"), *m, storageHealthVolumeModes))
	}
	return errs
}
