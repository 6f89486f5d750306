package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var strictSelector = metav1validation.LabelSelectorValidationOptions{}

func validateTolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		p := fldPath.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		}
		// An empty key with Exists matches every taint; with Equal it is an error.
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(p.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			if msgs := content.IsLabelValue(t.Value); len(msgs) != 0 {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, strings.Join(msgs, ";")))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		if t.Effect != "" {
			errs = append(errs, validateTaintEffect(t.Effect, p.Child("effect"))...)
		}
	}
	return errs
}

var taintEffects = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}

func validateTaintEffect(effect corev1.TaintEffect, fldPath *field.Path) field.ErrorList {
	return enumValue(fldPath, effect, taintEffects)
}

// validateTaints checks a node's taints: valid keys, values and effects,
// and no two taints with the same key and effect.
func validateTaints(taints []corev1.Taint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.TaintEffect]sets.Set[string]{}
	for i, t := range taints {
		p := fldPath.Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		if msgs := content.IsLabelValue(t.Value); len(msgs) != 0 {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, strings.Join(msgs, ";")))
		}
		errs = append(errs, validateTaintEffect(t.Effect, p.Child("effect"))...)
		if seen[t.Effect].Has(t.Key) {
			dup := field.Duplicate(p, t)
			dup.Detail = "taints must be unique by key and effect pair"
			errs = append(errs, dup)
			continue
		}
		if seen[t.Effect] == nil {
			seen[t.Effect] = sets.New[string]()
		}
		seen[t.Effect].Insert(t.Key)
	}
	return errs
}

func validateAffinity(a *corev1.Affinity, fldPath *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		p := fldPath.Child("nodeAffinity")
		if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			errs = append(errs, validateNodeSelector(req, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		}
		for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			tp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			if term.Weight <= 0 || term.Weight > 100 {
				errs = append(errs, field.Invalid(tp.Child("weight"), term.Weight, "must be in the range 1-100"))
			}
			// Preferred terms may use any value: they can still match.
			errs = append(errs, validateNodeSelectorTerm(term.Preference, true, tp.Child("preference"))...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		p := fldPath.Child("podAffinity")
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		errs = append(errs, validateWeightedPodAffinityTerms(pa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("preferredDuringSchedulingIgnoredDuringExecution"))...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		p := fldPath.Child("podAntiAffinity")
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		errs = append(errs, validateWeightedPodAffinityTerms(pa.PreferredDuringSchedulingIgnoredDuringExecution, p.Child("preferredDuringSchedulingIgnoredDuringExecution"))...)
	}
	return errs
}

func validateNodeSelector(s *corev1.NodeSelector, fldPath *field.Path) field.ErrorList {
	termsPath := fldPath.Child("nodeSelectorTerms")
	if len(s.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(termsPath, "must have at least one node selector term")}
	}
	var errs field.ErrorList
	for i, term := range s.NodeSelectorTerms {
		errs = append(errs, validateNodeSelectorTerm(term, false, termsPath.Index(i))...)
	}
	return errs
}

func validateNodeSelectorTerm(term corev1.NodeSelectorTerm, anyValue bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for j, rq := range term.MatchExpressions {
		p := fldPath.Child("matchExpressions").Index(j)
		switch rq.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(rq.Values) == 0 {
				errs = append(errs, field.Required(p.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
			}
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			if len(rq.Values) > 0 {
				errs = append(errs, field.Forbidden(p.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
			}
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if len(rq.Values) != 1 {
				errs = append(errs, field.Required(p.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
			}
		default:
			errs = append(errs, field.Invalid(p.Child("operator"), rq.Operator, "not a valid selector operator"))
		}
		errs = append(errs, metav1validation.ValidateLabelName(rq.Key, p.Child("key"))...)
		if !anyValue {
			for k, v := range rq.Values {
				errs = append(errs, labelValue(v, p.Child("values").Index(k))...)
			}
		}
	}
	for j, rq := range term.MatchFields {
		p := fldPath.Child("matchFields").Index(j)
		if rq.Operator != corev1.NodeSelectorOpIn && rq.Operator != corev1.NodeSelectorOpNotIn {
			errs = append(errs, field.Invalid(p.Child("operator"), rq.Operator, "not a valid selector operator"))
		} else if len(rq.Values) != 1 {
			errs = append(errs, field.Required(p.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
		}
		if rq.Key != metav1.ObjectNameField {
			errs = append(errs, field.Invalid(p.Child("key"), rq.Key, "not a valid field selector key"))
			continue
		}
		for k, v := range rq.Values {
			errs = append(errs, nameErrs(apimachineryvalidation.NameIsDNSSubdomain, v, p.Child("values").Index(k))...)
		}
	}
	return errs
}

func validatePodAffinityTerms(terms []corev1.PodAffinityTerm, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, term := range terms {
		errs = append(errs, validatePodAffinityTerm(term, fldPath.Index(i))...)
	}
	return errs
}

func validateWeightedPodAffinityTerms(terms []corev1.WeightedPodAffinityTerm, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, term := range terms {
		if term.Weight <= 0 || term.Weight > 100 {
			errs = append(errs, field.Invalid(fldPath.Index(i).Child("weight"), term.Weight, "must be in the range 1-100"))
		}
		errs = append(errs, validatePodAffinityTerm(term.PodAffinityTerm, fldPath.Index(i).Child("podAffinityTerm"))...)
	}
	return errs
}

func validatePodAffinityTerm(term corev1.PodAffinityTerm, fldPath *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabelSelector(term.LabelSelector, strictSelector, fldPath.Child("labelSelector"))
	errs = append(errs, metav1validation.ValidateLabelSelector(term.NamespaceSelector, strictSelector, fldPath.Child("namespaceSelector"))...)
	for _, ns := range term.Namespaces {
		// upstream reports every entry at "namespace", without an index.
		errs = append(errs, nameErrs(apimachineryvalidation.ValidateNamespaceName, ns, fldPath.Child("namespace"))...)
	}
	errs = append(errs, validateLabelKeys(term.MatchLabelKeys, term.LabelSelector, fldPath.Child("matchLabelKeys"))...)
	errs = append(errs, validateLabelKeys(term.MismatchLabelKeys, term.LabelSelector, fldPath.Child("mismatchLabelKeys"))...)
	mismatch := sets.New(term.MismatchLabelKeys...)
	for i, k := range term.MatchLabelKeys {
		if mismatch.Has(k) {
			errs = append(errs, field.Invalid(fldPath.Child("matchLabelKeys").Index(i), k, "exists in both matchLabelKeys and mismatchLabelKeys"))
		}
	}
	if term.TopologyKey == "" {
		errs = append(errs, field.Required(fldPath.Child("topologyKey"), "can not be empty"))
	}
	return append(errs, metav1validation.ValidateLabelName(term.TopologyKey, fldPath.Child("topologyKey"))...)
}

// validateLabelKeys checks matchLabelKeys or mismatchLabelKeys: they need a
// label selector to extend, and must be label names.
func validateLabelKeys(keys []string, selector *metav1.LabelSelector, fldPath *field.Path) field.ErrorList {
	if len(keys) == 0 {
		return nil
	}
	if selector == nil {
		return field.ErrorList{field.Forbidden(fldPath, "must not be specified when labelSelector is not set")}
	}
	var errs field.ErrorList
	for i, k := range keys {
		errs = append(errs, metav1validation.ValidateLabelName(k, fldPath.Index(i))...)
	}
	return errs
}

func validateTopologySpreadConstraints(constraints []corev1.TopologySpreadConstraint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range constraints {
		p := fldPath.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, isNotPositiveErrorMsg))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
		}
		if c.WhenUnsatisfiable != corev1.DoNotSchedule && c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			errs = append(errs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}))
		}
		for _, later := range constraints[i+1:] {
			if c.TopologyKey == later.TopologyKey && c.WhenUnsatisfiable == later.WhenUnsatisfiable {
				errs = append(errs, field.Duplicate(p.Child("{topologyKey, whenUnsatisfiable}"), fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
		if c.MinDomains != nil {
			if *c.MinDomains <= 0 {
				errs = append(errs, field.Invalid(p.Child("minDomains"), c.MinDomains, isNotPositiveErrorMsg))
			}
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				errs = append(errs, field.Invalid(p.Child("minDomains"), c.MinDomains, fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", corev1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
		policies := []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore}
		if c.NodeAffinityPolicy != nil {
			errs = append(errs, enumValue(p.Child("nodeAffinityPolicy"), *c.NodeAffinityPolicy, policies)...)
		}
		if c.NodeTaintsPolicy != nil {
			errs = append(errs, enumValue(p.Child("nodeTaintsPolicy"), *c.NodeTaintsPolicy, policies)...)
		}
		errs = append(errs, validateMatchLabelKeysInSpread(c.MatchLabelKeys, c.LabelSelector, p.Child("matchLabelKeys"))...)
		errs = append(errs, metav1validation.ValidateLabelSelector(c.LabelSelector, strictSelector, p.Child("labelSelector"))...)
	}
	return errs
}

func validateMatchLabelKeysInSpread(keys []string, selector *metav1.LabelSelector, fldPath *field.Path) field.ErrorList {
	if len(keys) == 0 {
		return nil
	}
	var errs field.ErrorList
	inSelector := sets.New[string]()
	if selector == nil {
		errs = append(errs, field.Forbidden(fldPath, "must not be specified when labelSelector is not set"))
	} else {
		for k := range selector.MatchLabels {
			inSelector.Insert(k)
		}
		for _, e := range selector.MatchExpressions {
			inSelector.Insert(e.Key)
		}
	}
	for i, k := range keys {
		errs = append(errs, metav1validation.ValidateLabelName(k, fldPath.Index(i))...)
		if inSelector.Has(k) {
			errs = append(errs, field.Invalid(fldPath.Index(i), k, "exists in both matchLabelKeys and labelSelector"))
		}
	}
	return errs
}
