package validation

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var limitTypes = sets.New(string(corev1.LimitTypePod), string(corev1.LimitTypeContainer), string(corev1.LimitTypePersistentVolumeClaim))

// validateLimitRange checks a LimitRange as upstream's ValidateLimitRange:
// one item per type, resource names fit for the type, and for every
// resource min ≤ defaultRequest ≤ default ≤ max and 1 ≤ ratio ≤ max/min.
func validateLimitRange(lr *corev1.LimitRange) field.ErrorList {
	var errs field.ErrorList
	fldPath := field.NewPath("spec", "limits")
	seen := map[corev1.LimitType]bool{}
	for i := range lr.Spec.Limits {
		idx := fldPath.Index(i)
		item := &lr.Spec.Limits[i]
		errs = append(errs, limitTypeName(string(item.Type), idx.Child("type"))...)
		if seen[item.Type] {
			errs = append(errs, field.Duplicate(idx.Child("type"), item.Type))
		}
		seen[item.Type] = true

		lists := map[string]corev1.ResourceList{"max": item.Max, "min": item.Min, "maxLimitRequestRatio": item.MaxLimitRequestRatio}
		if item.Type == corev1.LimitTypePod {
			if len(item.Default) > 0 {
				errs = append(errs, field.Forbidden(idx.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(item.DefaultRequest) > 0 {
				errs = append(errs, field.Forbidden(idx.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		} else {
			lists["default"], lists["defaultRequest"] = item.Default, item.DefaultRequest
		}
		if item.Type == corev1.LimitTypePersistentVolumeClaim {
			_, hasMin := item.Min[corev1.ResourceStorage]
			_, hasMax := item.Max[corev1.ResourceStorage]
			if !hasMin && !hasMax {
				errs = append(errs, field.Required(idx.Child("limits"), "either minimum or maximum storage value is required, but neither was provided"))
			}
		}
		keys := sets.New[corev1.ResourceName]()
		for _, list := range []string{"max", "min", "default", "defaultRequest", "maxLimitRequestRatio"} {
			for _, k := range sortedNames(lists[list]) {
				keys.Insert(k)
				if item.Type == corev1.LimitTypePod || item.Type == corev1.LimitTypeContainer {
					errs = append(errs, containerResourceName(k, idx.Child(list).Key(string(k)))...)
				} else {
					errs = append(errs, validateResourceName(k, idx.Child(list).Key(string(k)))...)
				}
			}
		}
		for _, k := range sets.List(keys) {
			errs = append(errs, limitRangeOrder(item, k, idx)...)
		}
	}
	return errs
}

func limitTypeName(value string, fldPath *field.Path) field.ErrorList {
	if errs := qualifiedNameOf(corev1.ResourceName(value), fldPath); len(errs) > 0 {
		return errs
	}
	if !strings.Contains(value, "/") && !limitTypes.Has(value) {
		return field.ErrorList{field.Invalid(fldPath, value, "must be a standard limit type or fully qualified")}
	}
	return nil
}

// limitRangeOrder checks how the values of one resource relate.
func limitRangeOrder(item *corev1.LimitRangeItem, k corev1.ResourceName, idx *field.Path) field.ErrorList {
	var errs field.ErrorList
	minQ, hasMin := item.Min[k]
	maxQ, hasMax := item.Max[k]
	def, hasDef := item.Default[k]
	defReq, hasDefReq := item.DefaultRequest[k]
	ratio, hasRatio := item.MaxLimitRequestRatio[k]
	if item.Type == corev1.LimitTypePod {
		hasDef, hasDefReq = false, false
	}
	key := string(k)
	if hasMin && hasMax && minQ.Cmp(maxQ) > 0 {
		errs = append(errs, field.Invalid(idx.Child("min").Key(key), minQ, fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
	}
	if hasDefReq && hasMin && minQ.Cmp(defReq) > 0 {
		errs = append(errs, field.Invalid(idx.Child("defaultRequest").Key(key), defReq, fmt.Sprintf("min value %s is greater than default request value %s", minQ.String(), defReq.String())))
	}
	if hasDefReq && hasMax && defReq.Cmp(maxQ) > 0 {
		errs = append(errs, field.Invalid(idx.Child("defaultRequest").Key(key), defReq, fmt.Sprintf("default request value %s is greater than max value %s", defReq.String(), maxQ.String())))
	}
	if hasDefReq && hasDef && defReq.Cmp(def) > 0 {
		errs = append(errs, field.Invalid(idx.Child("defaultRequest").Key(key), defReq, fmt.Sprintf("default request value %s is greater than default limit value %s", defReq.String(), def.String())))
	}
	if hasDef && hasMin && minQ.Cmp(def) > 0 {
		errs = append(errs, field.Invalid(idx.Child("default").Key(key), minQ, fmt.Sprintf("min value %s is greater than default value %s", minQ.String(), def.String())))
	}
	if hasDef && hasMax && def.Cmp(maxQ) > 0 {
		errs = append(errs, field.Invalid(idx.Child("default").Key(key), maxQ, fmt.Sprintf("default value %s is greater than max value %s", def.String(), maxQ.String())))
	}
	if hasRatio && ratio.Cmp(*resource.NewQuantity(1, resource.DecimalSI)) < 0 {
		errs = append(errs, field.Invalid(idx.Child("maxLimitRequestRatio").Key(key), ratio, fmt.Sprintf("ratio %s is less than 1", ratio.String())))
	}
	if hasRatio && hasMin && hasMax {
		r, lo, hi := float64(ratio.Value()), minQ.Value(), maxQ.Value()
		if ratio.Value() < resource.MaxMilliValue && lo < resource.MaxMilliValue && hi < resource.MaxMilliValue {
			r, lo, hi = float64(ratio.MilliValue())/1000, minQ.MilliValue(), maxQ.MilliValue()
		}
		if limit := float64(hi) / float64(lo); r > limit {
			errs = append(errs, field.Invalid(idx.Child("maxLimitRequestRatio").Key(key), ratio, fmt.Sprintf("ratio %s is greater than max/min = %f", ratio.String(), limit)))
		}
	}
	if !overcommitAllowed(k) && hasDef && hasDefReq && def.Cmp(defReq) != 0 {
		errs = append(errs, field.Invalid(idx.Child("defaultRequest").Key(key), defReq, fmt.Sprintf("default value %s must equal to defaultRequest value %s in %s", def.String(), defReq.String(), k)))
	}
	return errs
}

var quotaScopes = sets.New(corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
	corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopePriorityClass,
	corev1.ResourceQuotaScopeCrossNamespacePodAffinity, corev1.ResourceQuotaScopeVolumeAttributesClass)

// validateResourceQuota checks resource names, quantities and scopes.
func validateResourceQuota(q *corev1.ResourceQuota) field.ErrorList {
	spec := field.NewPath("spec")
	errs := quotaList(q.Spec.Hard, spec.Child("hard"))
	for i, s := range q.Spec.Scopes {
		if !quotaScopes.Has(s) {
			errs = append(errs, field.Invalid(spec.Child("scopes").Index(i), s, "unsupported scope"))
		}
	}
	if q.Spec.ScopeSelector != nil {
		for i, r := range q.Spec.ScopeSelector.MatchExpressions {
			if !quotaScopes.Has(r.ScopeName) {
				errs = append(errs, field.Invalid(spec.Child("scopeSelector", "matchExpressions").Index(i).Child("scopeName"), r.ScopeName, "unsupported scope"))
			}
		}
	}
	return errs
}

// validateResourceQuotaStatus checks status.hard and status.used.
func validateResourceQuotaStatus(q *corev1.ResourceQuota) field.ErrorList {
	status := field.NewPath("status")
	return append(quotaList(q.Status.Hard, status.Child("hard")), quotaList(q.Status.Used, status.Child("used"))...)
}

func quotaList(list corev1.ResourceList, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedNames(list) {
		p := fldPath.Key(string(k))
		errs = append(errs, qualifiedNameOf(k, p)...)
		errs = append(errs, validateQuantity(k, list[k], p)...)
	}
	return errs
}

func sortedNames(list corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(list))
	for k := range list {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
