package validation

import (
	rbacv1 "k8s.io/api/rbac/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RBAC objects are named like path segments (they may contain ':'), as
// upstream's ValidateRBACName.
func rbacName(name string, prefix bool) []string { return path.IsValidPathSegmentName(name) }

func validateRole(r *rbacv1.Role) field.ErrorList {
	var errs field.ErrorList
	for i := range r.Rules {
		errs = append(errs, validatePolicyRule(&r.Rules[i], true, field.NewPath("rules").Index(i))...)
	}
	return errs
}

func validateClusterRole(r *rbacv1.ClusterRole) field.ErrorList {
	var errs field.ErrorList
	for i := range r.Rules {
		errs = append(errs, validatePolicyRule(&r.Rules[i], false, field.NewPath("rules").Index(i))...)
	}
	if a := r.AggregationRule; a != nil {
		p := field.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(a.ClusterRoleSelectors) == 0 {
			errs = append(errs, field.Required(p, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		for i := range a.ClusterRoleSelectors {
			errs = append(errs, metav1validation.ValidateLabelSelector(&a.ClusterRoleSelectors[i],
				metav1validation.LabelSelectorValidationOptions{}, p.Index(i))...)
		}
	}
	return errs
}

// validatePolicyRule is upstream's: verbs always; either non-resource URLs
// (cluster roles only) or API groups and resources, never both.
func validatePolicyRule(rule *rbacv1.PolicyRule, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Verbs) == 0 {
		errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(rule.NonResourceURLs) > 0 {
		if namespaced {
			errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
			errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return errs
	}
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(rule.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
	}
	return errs
}

func validateRoleBinding(b *rbacv1.RoleBinding) field.ErrorList {
	errs := validateRoleRef(&b.RoleRef, []string{"Role", "ClusterRole"})
	for i := range b.Subjects {
		errs = append(errs, validateSubject(&b.Subjects[i], true, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

func validateClusterRoleBinding(b *rbacv1.ClusterRoleBinding) field.ErrorList {
	errs := validateRoleRef(&b.RoleRef, []string{"ClusterRole"})
	for i := range b.Subjects {
		errs = append(errs, validateSubject(&b.Subjects[i], false, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

func validateRoleRef(ref *rbacv1.RoleRef, kinds []string) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(p.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	known := false
	for _, k := range kinds {
		known = known || ref.Kind == k
	}
	if !known {
		errs = append(errs, field.NotSupported(p.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		for _, msg := range path.IsValidPathSegmentName(ref.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), ref.Name, msg))
		}
	}
	return errs
}

func validateSubject(s *rbacv1.Subject, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if s.Name != "" {
			for _, msg := range apimachineryvalidation.ValidateServiceAccountName(s.Name, false) {
				errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
			}
		}
		if s.Namespace == "" && !namespaced {
			errs = append(errs, field.Required(p.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}

// roleRefUpdate refuses a changed roleRef: a binding names one role for
// its life (delete and recreate it to point elsewhere).
func roleRefUpdate(ref, old rbacv1.RoleRef) field.ErrorList {
	if ref != old {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), ref, "cannot change roleRef")}
	}
	return nil
}
