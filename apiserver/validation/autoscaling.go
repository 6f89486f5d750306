package validation

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Upstream's bounds on scaling rules (seconds).
const (
	maxPeriodSeconds              = 1800
	maxStabilizationWindowSeconds = 3600
)

// validateHorizontalPodAutoscalerSpec checks an autoscaling/v2 spec as
// upstream's ValidateHorizontalPodAutoscalerSpec does (scale to zero, an
// alpha feature, is refused).
func validateHorizontalPodAutoscalerSpec(s *autoscalingv2.HorizontalPodAutoscalerSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.MinReplicas != nil && *s.MinReplicas < 1 {
		errs = append(errs, field.Invalid(fld.Child("minReplicas"), *s.MinReplicas, "must be greater than or equal to 1"))
	}
	if s.MaxReplicas < 1 {
		errs = append(errs, field.Invalid(fld.Child("maxReplicas"), s.MaxReplicas, "must be greater than 0"))
	}
	if s.MinReplicas != nil && s.MaxReplicas < *s.MinReplicas {
		errs = append(errs, field.Invalid(fld.Child("maxReplicas"), s.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	ref := fld.Child("scaleTargetRef")
	if s.ScaleTargetRef.Kind == "" {
		errs = append(errs, field.Required(ref.Child("kind"), ""))
	} else {
		for _, msg := range path.IsValidPathSegmentName(s.ScaleTargetRef.Kind) {
			errs = append(errs, field.Invalid(ref.Child("kind"), s.ScaleTargetRef.Kind, msg))
		}
	}
	if s.ScaleTargetRef.Name == "" {
		errs = append(errs, field.Required(ref.Child("name"), ""))
	} else {
		for _, msg := range path.IsValidPathSegmentName(s.ScaleTargetRef.Name) {
			errs = append(errs, field.Invalid(ref.Child("name"), s.ScaleTargetRef.Name, msg))
		}
	}
	for i, m := range s.Metrics {
		errs = append(errs, validateMetricSpec(m, fld.Child("metrics").Index(i))...)
	}
	if b := s.Behavior; b != nil {
		errs = append(errs, validateScalingRules(b.ScaleUp, fld.Child("behavior", "scaleUp"))...)
		errs = append(errs, validateScalingRules(b.ScaleDown, fld.Child("behavior", "scaleDown"))...)
	}
	return errs
}

var metricSourceTypes = []string{string(autoscalingv2.ContainerResourceMetricSourceType), string(autoscalingv2.ExternalMetricSourceType),
	string(autoscalingv2.ObjectMetricSourceType), string(autoscalingv2.PodsMetricSourceType), string(autoscalingv2.ResourceMetricSourceType)}

func validateMetricSpec(m autoscalingv2.MetricSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m.Type == "" {
		return append(errs, field.Required(fld.Child("type"), "must specify a metric source type"))
	}
	var target *autoscalingv2.MetricTarget
	var name corev1.ResourceName
	sub := ""
	switch m.Type {
	case autoscalingv2.ResourceMetricSourceType:
		sub = "resource"
		if m.Resource != nil {
			target, name = &m.Resource.Target, m.Resource.Name
		}
	case autoscalingv2.ContainerResourceMetricSourceType:
		sub = "containerResource"
		if m.ContainerResource != nil {
			target, name = &m.ContainerResource.Target, m.ContainerResource.Name
			if m.ContainerResource.Container == "" {
				errs = append(errs, field.Required(fld.Child(sub, "container"), "must populate container name"))
			}
		}
	case autoscalingv2.PodsMetricSourceType, autoscalingv2.ObjectMetricSourceType, autoscalingv2.ExternalMetricSourceType:
		if m.Pods == nil && m.Object == nil && m.External == nil {
			errs = append(errs, field.Required(fld.Child(string(m.Type)), "must populate information for the given metric source"))
		}
		return errs
	default:
		return append(errs, field.NotSupported(fld.Child("type"), m.Type, metricSourceTypes))
	}
	if target == nil {
		return append(errs, field.Required(fld.Child(sub), "must populate information for the given metric source"))
	}
	if name == "" {
		errs = append(errs, field.Required(fld.Child(sub, "name"), "must specify a resource name"))
	}
	tf := fld.Child(sub, "target")
	switch target.Type {
	case autoscalingv2.UtilizationMetricType:
		if target.AverageUtilization == nil {
			errs = append(errs, field.Required(tf.Child("averageUtilization"), "must set averageUtilization when type is Utilization"))
		} else if *target.AverageUtilization <= 0 {
			errs = append(errs, field.Invalid(tf.Child("averageUtilization"), *target.AverageUtilization, "must be greater than 0"))
		}
	case autoscalingv2.AverageValueMetricType:
		if target.AverageValue == nil {
			errs = append(errs, field.Required(tf.Child("averageValue"), "must set averageValue when type is AverageValue"))
		} else if target.AverageValue.Sign() != 1 {
			errs = append(errs, field.Invalid(tf.Child("averageValue"), target.AverageValue.String(), "must be positive"))
		}
	case autoscalingv2.ValueMetricType:
		// A Resource metric has no total value: upstream refuses it.
		errs = append(errs, field.Invalid(tf.Child("type"), target.Type, "must be either Utilization or AverageValue"))
	default:
		errs = append(errs, field.Required(tf.Child("type"), "must specify a metric target type"))
	}
	return errs
}

func validateScalingRules(r *autoscalingv2.HPAScalingRules, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r == nil {
		return nil
	}
	if w := r.StabilizationWindowSeconds; w != nil && (*w < 0 || *w > maxStabilizationWindowSeconds) {
		errs = append(errs, field.Invalid(fld.Child("stabilizationWindowSeconds"), *w, "must be between 0 and 3600"))
	}
	if p := r.SelectPolicy; p != nil {
		switch *p {
		case autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect:
		default:
			errs = append(errs, field.NotSupported(fld.Child("selectPolicy"), *p, []string{"Disabled", "Max", "Min"}))
		}
	}
	if len(r.Policies) == 0 {
		errs = append(errs, field.Required(fld.Child("policies"), "must specify at least one Policy"))
	}
	for i, p := range r.Policies {
		pf := fld.Child("policies").Index(i)
		if p.Type != autoscalingv2.PodsScalingPolicy && p.Type != autoscalingv2.PercentScalingPolicy {
			errs = append(errs, field.NotSupported(pf.Child("type"), p.Type, []string{"Percent", "Pods"}))
		}
		if p.Value <= 0 {
			errs = append(errs, field.Invalid(pf.Child("value"), p.Value, "must be greater than zero"))
		}
		if p.PeriodSeconds <= 0 {
			errs = append(errs, field.Invalid(pf.Child("periodSeconds"), p.PeriodSeconds, "must be greater than zero"))
		} else if p.PeriodSeconds > maxPeriodSeconds {
			errs = append(errs, field.Invalid(pf.Child("periodSeconds"), p.PeriodSeconds, "must be less than or equal to 1800"))
		}
	}
	return errs
}

func validateHorizontalPodAutoscaler(h *autoscalingv2.HorizontalPodAutoscaler, namespaced bool) field.ErrorList {
	return append(objectMeta(&h.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain),
		validateHorizontalPodAutoscalerSpec(&h.Spec, specPath)...)
}

func validateHorizontalPodAutoscalerStatus(s *autoscalingv2.HorizontalPodAutoscalerStatus, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(s.CurrentReplicas), fld.Child("currentReplicas"))...)
	errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(s.DesiredReplicas), fld.Child("desiredReplicas"))...)
	return errs
}
