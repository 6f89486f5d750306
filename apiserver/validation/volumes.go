package validation

import (
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateVolumes checks the pod's volumes and returns the valid ones by
// name, for the volume mount checks.
func validateVolumes(volumes []corev1.Volume, fldPath *field.Path, isPod bool) (map[string]corev1.VolumeSource, field.ErrorList) {
	var errs field.ErrorList
	valid := map[string]corev1.VolumeSource{}
	for i, v := range volumes {
		p := fldPath.Index(i)
		el := validateVolumeSource(&v.VolumeSource, p, isPod)
		if v.Name == "" {
			el = append(el, field.Required(p.Child("name"), ""))
		} else {
			el = append(el, dnsLabel(v.Name, p.Child("name"))...)
		}
		if _, dup := valid[v.Name]; dup {
			el = append(el, field.Duplicate(p.Child("name"), v.Name))
		}
		// A broken volume is not offered to mounts, which then report it
		// missing too, as upstream does.
		if len(el) == 0 {
			valid[v.Name] = v.VolumeSource
		}
		errs = append(errs, el...)
	}
	return valid, errs
}

// volumeKind is one member of the VolumeSource union, in the order upstream
// checks them: the first set member wins, every later one is an error.
type volumeKind struct {
	name  string
	set   bool
	check func(*field.Path) field.ErrorList
}

// exactlyOneVolumeType checks that one of kinds is set (a pod volume's
// source, a PersistentVolume's) and runs its own checks.
func exactlyOneVolumeType(kinds []volumeKind, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	for _, k := range kinds {
		if !k.set {
			continue
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(fldPath.Child(k.name), "may not specify more than 1 volume type"))
			continue
		}
		n++
		if k.check != nil {
			errs = append(errs, k.check(fldPath.Child(k.name))...)
		}
	}
	if n == 0 {
		errs = append(errs, field.Required(fldPath, "must specify a volume type"))
	}
	return errs
}

func validateVolumeSource(s *corev1.VolumeSource, fldPath *field.Path, isPod bool) field.ErrorList {
	kinds := []volumeKind{
		{"emptyDir", s.EmptyDir != nil, func(p *field.Path) field.ErrorList {
			if l := s.EmptyDir.SizeLimit; l != nil && l.Cmp(resource.Quantity{}) < 0 {
				return field.ErrorList{field.Forbidden(p.Child("sizeLimit"), "SizeLimit field must be a valid resource quantity")}
			}
			return nil
		}},
		{"hostPath", s.HostPath != nil, func(p *field.Path) field.ErrorList { return validateHostPath(s.HostPath, p) }},
		{"gitRepo", s.GitRepo != nil, func(p *field.Path) field.ErrorList {
			var errs field.ErrorList
			if s.GitRepo.Repository == "" {
				errs = append(errs, field.Required(p.Child("repository"), ""))
			}
			return append(errs, localDescendingPath(s.GitRepo.Directory, p.Child("directory"))...)
		}},
		{"gcePersistentDisk", s.GCEPersistentDisk != nil, nil},
		{"awsElasticBlockStore", s.AWSElasticBlockStore != nil, nil},
		{"secret", s.Secret != nil, func(p *field.Path) field.ErrorList {
			var errs field.ErrorList
			if s.Secret.SecretName == "" {
				errs = append(errs, field.Required(p.Child("secretName"), ""))
			}
			errs = append(errs, fileMode(s.Secret.DefaultMode, p.Child("defaultMode"))...)
			return append(errs, keysToPaths(s.Secret.Items, p.Child("items"))...)
		}},
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
		{"iscsi", s.ISCSI != nil, nil},
		{"glusterfs", s.Glusterfs != nil, nil},
		{"flocker", s.Flocker != nil, nil},
		{"persistentVolumeClaim", s.PersistentVolumeClaim != nil, func(p *field.Path) field.ErrorList {
			if s.PersistentVolumeClaim.ClaimName == "" {
				return field.ErrorList{field.Required(p.Child("claimName"), "")}
			}
			return nil
		}},
		{"rbd", s.RBD != nil, nil},
		{"cinder", s.Cinder != nil, nil},
		{"cephFS", s.CephFS != nil, nil},
		{"quobyte", s.Quobyte != nil, nil},
		// "downwarAPI" is how upstream spells this path in the conflict error.
		{"downwarAPI", s.DownwardAPI != nil, func(*field.Path) field.ErrorList {
			p := fldPath.Child("downwardAPI")
			errs := fileMode(s.DownwardAPI.DefaultMode, p.Child("defaultMode"))
			for _, f := range s.DownwardAPI.Items {
				errs = append(errs, validateDownwardAPIFile(&f, p)...)
			}
			return errs
		}},
		{"fc", s.FC != nil, nil},
		{"flexVolume", s.FlexVolume != nil, nil},
		{"configMap", s.ConfigMap != nil, func(p *field.Path) field.ErrorList {
			var errs field.ErrorList
			if s.ConfigMap.Name == "" {
				errs = append(errs, field.Required(p.Child("name"), ""))
			}
			errs = append(errs, fileMode(s.ConfigMap.DefaultMode, p.Child("defaultMode"))...)
			return append(errs, keysToPaths(s.ConfigMap.Items, p.Child("items"))...)
		}},
		{"azureFile", s.AzureFile != nil, nil},
		{"vsphereVolume", s.VsphereVolume != nil, nil},
		{"photonPersistentDisk", s.PhotonPersistentDisk != nil, nil},
		{"portworxVolume", s.PortworxVolume != nil, nil},
		{"azureDisk", s.AzureDisk != nil, nil},
		{"storageos", s.StorageOS != nil, nil},
		{"projected", s.Projected != nil, func(p *field.Path) field.ErrorList { return validateProjected(s.Projected, p) }},
		{"scaleIO", s.ScaleIO != nil, nil},
		{"csi", s.CSI != nil, func(p *field.Path) field.ErrorList { return validateCSIDriverName(s.CSI.Driver, p.Child("driver")) }},
		{"ephemeral", s.Ephemeral != nil, func(p *field.Path) field.ErrorList { return validateEphemeralVolume(s.Ephemeral, p) }},
		{"image", s.Image != nil, func(p *field.Path) field.ErrorList {
			var errs field.ErrorList
			if isPod && s.Image.Reference == "" {
				errs = append(errs, field.Required(p.Child("reference"), ""))
			}
			return append(errs, enumValue(p.Child("pullPolicy"), s.Image.PullPolicy, []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever})...)
		}},
	}
	return exactlyOneVolumeType(kinds, fldPath)
}

var supportedHostPathTypes = []corev1.HostPathType{
	corev1.HostPathUnset, corev1.HostPathBlockDev, corev1.HostPathCharDev, corev1.HostPathDirectory,
	corev1.HostPathDirectoryOrCreate, corev1.HostPathFile, corev1.HostPathFileOrCreate, corev1.HostPathSocket,
}

func validateHostPath(h *corev1.HostPathVolumeSource, p *field.Path) field.ErrorList {
	if h.Path == "" {
		return field.ErrorList{field.Required(p.Child("path"), "")}
	}
	errs := noBacksteps(h.Path, p.Child("path"))
	if h.Type != nil {
		ok := false
		for _, t := range supportedHostPathTypes {
			ok = ok || t == *h.Type
		}
		if !ok {
			errs = append(errs, field.NotSupported(p.Child("type"), h.Type, supportedHostPathTypes))
		}
	}
	return errs
}

func fileMode(mode *int32, p *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0o777 || *mode < 0) {
		return field.ErrorList{field.Invalid(p, *mode, fileModeErrorMsg)}
	}
	return nil
}

func keysToPaths(items []corev1.KeyToPath, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, kp := range items {
		ip := p.Index(i)
		if kp.Key == "" {
			errs = append(errs, field.Required(ip.Child("key"), ""))
		}
		if kp.Path == "" {
			errs = append(errs, field.Required(ip.Child("path"), ""))
		}
		errs = append(errs, localNonReservedPath(kp.Path, ip.Child("path"))...)
		errs = append(errs, fileMode(kp.Mode, ip.Child("mode"))...)
	}
	return errs
}

// validateDownwardAPIFile checks one downward API file. upstream reports
// its problems under the volume source, without the item's index.
func validateDownwardAPIFile(f *corev1.DownwardAPIVolumeFile, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if f.Path == "" {
		errs = append(errs, field.Required(p.Child("path"), ""))
	}
	errs = append(errs, localNonReservedPath(f.Path, p.Child("path"))...)
	switch {
	case f.FieldRef != nil:
		errs = append(errs, validateObjectFieldSelector(f.FieldRef, validVolumeFieldPaths, p.Child("fieldRef"))...)
		if f.ResourceFieldRef != nil {
			errs = append(errs, field.Invalid(p, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		}
	case f.ResourceFieldRef != nil:
		errs = append(errs, validateResourceFieldSelector(f.ResourceFieldRef, true, p.Child("resourceFieldRef"))...)
	default:
		errs = append(errs, field.Required(p, "one of fieldRef and resourceFieldRef is required"))
	}
	return append(errs, fileMode(f.Mode, p.Child("mode"))...)
}

func validateProjected(proj *corev1.ProjectedVolumeSource, p *field.Path) field.ErrorList {
	errs := fileMode(proj.DefaultMode, p.Child("defaultMode"))
	paths := sets.New[string]()
	addPath := func(value string, reported any) {
		if value == "" {
			return
		}
		if paths.Has(value) {
			errs = append(errs, field.Invalid(p, reported, "conflicting duplicate paths"))
		}
		paths.Insert(value)
	}
	for i, src := range proj.Sources {
		sp := p.Child("sources").Index(i)
		n := 0
		if src.Secret != nil {
			n++
			if src.Secret.Name == "" {
				errs = append(errs, field.Required(sp.Child("secret", "name"), ""))
			}
			errs = append(errs, keysToPaths(src.Secret.Items, sp.Child("secret", "items"))...)
			for _, kp := range src.Secret.Items {
				addPath(kp.Path, src.Secret.Name)
			}
		}
		if src.ConfigMap != nil {
			n++
			if src.ConfigMap.Name == "" {
				errs = append(errs, field.Required(sp.Child("configMap", "name"), ""))
			}
			errs = append(errs, keysToPaths(src.ConfigMap.Items, sp.Child("configMap", "items"))...)
			for _, kp := range src.ConfigMap.Items {
				addPath(kp.Path, src.ConfigMap.Name)
			}
		}
		if src.DownwardAPI != nil {
			n++
			for _, f := range src.DownwardAPI.Items {
				errs = append(errs, validateDownwardAPIFile(&f, sp.Child("downwardAPI"))...)
				addPath(f.Path, f.Path)
			}
		}
		if t := src.ServiceAccountToken; t != nil {
			n++
			tp := sp.Child("serviceAccountToken")
			if t.ExpirationSeconds != nil && *t.ExpirationSeconds < 10*60 {
				errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), *t.ExpirationSeconds, "may not specify a duration less than 10 minutes"))
			}
			if t.ExpirationSeconds != nil && *t.ExpirationSeconds > 1<<32 {
				errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), *t.ExpirationSeconds, "may not specify a duration larger than 2^32 seconds"))
			}
			// upstream reports the token path under the volume source.
			if t.Path == "" {
				errs = append(errs, field.Required(p.Child("path"), ""))
			} else {
				errs = append(errs, localNonReservedPath(t.Path, p.Child("path"))...)
			}
		}
		if b := src.ClusterTrustBundle; b != nil {
			n++
			if b.Path == "" {
				errs = append(errs, field.Required(sp.Child("clusterTrustBundle", "path"), ""))
			}
			addPath(b.Path, b.Path)
		}
		if src.PodCertificate != nil {
			n++
		}
		if n > 1 {
			errs = append(errs, field.Forbidden(sp, "may not specify more than 1 volume type per source"))
		}
	}
	return errs
}

// validateCSIDriverName checks the name of a CSI driver, or of a DRA
// driver, which follows the same rules.
func validateCSIDriverName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	if len(name) > 63 {
		errs = append(errs, field.TooLong(p, "", 63))
	}
	for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(name)) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

func validateEphemeralVolume(e *corev1.EphemeralVolumeSource, p *field.Path) field.ErrorList {
	if e.VolumeClaimTemplate == nil {
		return field.ErrorList{field.Required(p.Child("volumeClaimTemplate"), "")}
	}
	return validatePersistentVolumeClaimSpec(&e.VolumeClaimTemplate.Spec, p.Child("volumeClaimTemplate", "spec"))
}

// localDescendingPath requires a relative path that does not climb out.
func localDescendingPath(target string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(target) {
		errs = append(errs, field.Invalid(p, target, "must be a relative path"))
	}
	return append(errs, noBacksteps(target, p)...)
}

func localNonReservedPath(target string, p *field.Path) field.ErrorList {
	errs := localDescendingPath(target, p)
	// The ".." element check above already covers "../x".
	if strings.HasPrefix(target, "..") && !strings.HasPrefix(target, "../") {
		errs = append(errs, field.Invalid(p, target, "must not start with '..'"))
	}
	return errs
}

func noBacksteps(target string, p *field.Path) field.ErrorList {
	for _, part := range strings.Split(filepath.ToSlash(target), "/") {
		if part == ".." {
			return field.ErrorList{field.Invalid(p, target, "must not contain '..'")}
		}
	}
	return nil
}
