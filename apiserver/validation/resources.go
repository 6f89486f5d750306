package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// standardResources are the unqualified resource names Kubernetes knows,
// for containers, quotas and nodes alike.
var standardResources = sets.New(
	"cpu", "memory", "ephemeral-storage",
	"requests.cpu", "requests.memory", "requests.ephemeral-storage",
	"limits.cpu", "limits.memory", "limits.ephemeral-storage",
	"pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
	"persistentvolumeclaims", "storage", "requests.storage", "services.nodeports", "services.loadbalancers",
)

// integerResources may not have fractional quantities.
var integerResources = sets.New(
	"pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
	"persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
)

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// isNative is true for unprefixed and kubernetes.io/ resources.
func isNative(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// IsExtendedResourceName is true for vendor resources such as
// example.com/gpu (not kubernetes.io/ names, nor requests.*).
func IsExtendedResourceName(name corev1.ResourceName) bool {
	if isNative(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(content.IsLabelKey(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

// overcommitAllowed is false for resources whose request must equal the
// limit: hugepages and extended resources.
func overcommitAllowed(name corev1.ResourceName) bool {
	return isNative(name) && !isHugePages(name)
}

func validateResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	if errs := qualifiedNameOf(name, fldPath); len(errs) != 0 {
		return errs
	}
	if !strings.Contains(string(name), "/") && !standardResources.Has(string(name)) && !isHugePages(name) {
		return field.ErrorList{field.Invalid(fldPath, name, "must be a standard resource type or fully qualified")}
	}
	return nil
}

func qualifiedNameOf(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range content.IsLabelKey(string(name)) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	return errs
}

func containerResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	errs := validateResourceName(name, fldPath)
	if !strings.Contains(string(name), "/") {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourceEphemeralStorage && !isHugePages(name) {
			return append(errs, field.Invalid(fldPath, name, "must be a standard resource for containers"))
		}
	} else if !isNative(name) && !IsExtendedResourceName(name) {
		return append(errs, field.Invalid(fldPath, name, "doesn't follow extended resource name standard"))
	}
	return errs
}

func podResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	if errs := validateResourceName(name, fldPath); len(errs) != 0 {
		return errs
	}
	if name != corev1.ResourceCPU && name != corev1.ResourceMemory && !isHugePages(name) {
		return field.ErrorList{field.NotSupported(fldPath, name, []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory})}
	}
	return nil
}

// validateQuantity rejects negative quantities and fractions of integer
// resources.
func validateQuantity(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.Sign() < 0 {
		errs = append(errs, field.Invalid(fldPath, q.String(), apimachineryvalidation.IsNegativeErrorMsg))
	}
	if (integerResources.Has(string(name)) || IsExtendedResourceName(name)) && q.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(fldPath, q, "must be an integer"))
	}
	return errs
}

// hugePageMultiple requires a hugepages-<size> quantity to be a whole
// number of pages.
func hugePageMultiple(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	size, err := resource.ParseQuantity(strings.TrimPrefix(string(name), corev1.ResourceHugePagesPrefix))
	if err != nil || size.Sign() <= 0 || q.Value()%size.Value() != 0 {
		return field.ErrorList{field.Invalid(fldPath, q.String(), fmt.Sprintf("%s is not positive integer multiple of %s", q.String(), name))}
	}
	return nil
}

// validateResourceRequirements checks names and quantities, and that each
// request fits its limit (and equals it for non-overcommittable resources).
func validateResourceRequirements(r *corev1.ResourceRequirements, nameFn func(corev1.ResourceName, *field.Path) field.ErrorList, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	limPath, reqPath := fldPath.Child("limits"), fldPath.Child("requests")
	cpuOrMemory, hugePages := false, false
	for name, q := range r.Limits {
		p := limPath.Key(string(name))
		errs = append(errs, nameFn(name, p)...)
		errs = append(errs, validateQuantity(name, q, p)...)
		if isHugePages(name) {
			hugePages = true
			errs = append(errs, hugePageMultiple(name, q, p)...)
		}
		cpuOrMemory = cpuOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
	}
	for name, q := range r.Requests {
		p := reqPath.Key(string(name))
		errs = append(errs, nameFn(name, p)...)
		errs = append(errs, validateQuantity(name, q, p)...)
		if limit, ok := r.Limits[name]; ok {
			switch {
			case q.Cmp(limit) != 0 && !overcommitAllowed(name):
				errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
			case q.Cmp(limit) > 0:
				errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
			}
		} else if !overcommitAllowed(name) {
			errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
		if isHugePages(name) {
			hugePages = true
			errs = append(errs, hugePageMultiple(name, q, p)...)
		}
		cpuOrMemory = cpuOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
	}
	if hugePages && !cpuOrMemory {
		errs = append(errs, field.Forbidden(fldPath, "HugePages require cpu or memory"))
	}
	return errs
}

func validatePodResources(r *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r.Claims != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("claims"), "claims cannot be set for Resources at pod-level"))
	}
	return append(errs, validateResourceRequirements(r, podResourceName, fldPath)...)
}
