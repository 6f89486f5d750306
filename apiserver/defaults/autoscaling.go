package defaults

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// DefaultCPUUtilization is the target of an HPA that names no metric.
const DefaultCPUUtilization = 80

// HorizontalPodAutoscaler applies autoscaling/v2's defaults: minReplicas
// 1, a cpu target of 80% utilization when no metric is given, and, when
// a behavior is given, its missing rules filled from the defaults (scale
// up: no stabilization, the larger of 4 pods or 100% per 15s; scale
// down: the controller's stabilization window, 100% per 15s).
func HorizontalPodAutoscaler(h *autoscalingv2.HorizontalPodAutoscaler) {
	if h.Spec.MinReplicas == nil {
		one := int32(1)
		h.Spec.MinReplicas = &one
	}
	if len(h.Spec.Metrics) == 0 {
		u := int32(DefaultCPUUtilization)
		h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &u}}}}
	}
	if b := h.Spec.Behavior; b != nil {
		b.ScaleUp = fillScalingRules(b.ScaleUp, DefaultScaleUpRules())
		b.ScaleDown = fillScalingRules(b.ScaleDown, DefaultScaleDownRules())
	}
}

// DefaultScaleUpRules are upstream's scale-up rules.
func DefaultScaleUpRules() *autoscalingv2.HPAScalingRules {
	zero, sel := int32(0), autoscalingv2.MaxChangePolicySelect
	return &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &zero, SelectPolicy: &sel,
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		}}
}

// DefaultScaleDownRules are upstream's scale-down rules; the
// stabilization window is left to the controller's flag (300s).
func DefaultScaleDownRules() *autoscalingv2.HPAScalingRules {
	sel := autoscalingv2.MaxChangePolicySelect
	return &autoscalingv2.HPAScalingRules{SelectPolicy: &sel,
		Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}}
}

func fillScalingRules(r, def *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if r == nil {
		return def
	}
	if r.StabilizationWindowSeconds == nil {
		r.StabilizationWindowSeconds = def.StabilizationWindowSeconds
	}
	if r.SelectPolicy == nil {
		r.SelectPolicy = def.SelectPolicy
	}
	if len(r.Policies) == 0 {
		r.Policies = def.Policies
	}
	return r
}
