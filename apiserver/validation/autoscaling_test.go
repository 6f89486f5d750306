package validation

import (
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"minik/apiserver/defaults"
)

func hpa(edits ...func(*autoscalingv2.HorizontalPodAutoscaler)) *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 3,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"}}}
	for _, e := range edits {
		e(h)
	}
	defaults.Object(h)
	return h
}

func TestHorizontalPodAutoscaler(t *testing.T) {
	tests := []struct {
		name string
		obj  *autoscalingv2.HorizontalPodAutoscaler
		want []want
	}{
		{name: "a defaulted HPA (min 1, cpu at 80%) is valid", obj: hpa()},
		{name: "maxReplicas below minReplicas is rejected",
			obj:  hpa(func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr.To(int32(4)) }),
			want: []want{{field.ErrorTypeInvalid, "spec.maxReplicas", "must be greater than or equal to `minReplicas`"}}},
		{name: "minReplicas 0 is rejected (scale to zero is alpha upstream)",
			obj:  hpa(func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = ptr.To(int32(0)) }),
			want: []want{{field.ErrorTypeInvalid, "spec.minReplicas", "must be greater than or equal to 1"}}},
		{name: "a target without kind and name is rejected",
			obj: hpa(func(h *autoscalingv2.HorizontalPodAutoscaler) {
				h.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{}
			}),
			want: []want{{field.ErrorTypeRequired, "spec.scaleTargetRef.kind", ""}, {field.ErrorTypeRequired, "spec.scaleTargetRef.name", ""}}},
		{name: "a utilization target of 0 is rejected",
			obj: hpa(func(h *autoscalingv2.HorizontalPodAutoscaler) {
				h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: "cpu", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(0))}}}}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.metrics[0].resource.target.averageUtilization", "must be greater than 0"}}},
		{name: "a behavior policy needs a positive value and a period of at most 1800s",
			obj: hpa(func(h *autoscalingv2.HorizontalPodAutoscaler) {
				h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
					Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 0, PeriodSeconds: 1801}}}}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.behavior.scaleUp.policies[0].value", "must be greater than zero"},
				{field.ErrorTypeInvalid, "spec.behavior.scaleUp.policies[0].periodSeconds", "must be less than or equal to 1800"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertErrors(t, Create(tt.obj, true), tt.want)
		})
	}
}

func TestHorizontalPodAutoscalerDefaults(t *testing.T) {
	h := hpa(func(h *autoscalingv2.HorizontalPodAutoscaler) {
		h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
	})
	if *h.Spec.MinReplicas != 1 || len(h.Spec.Metrics) != 1 || *h.Spec.Metrics[0].Resource.Target.AverageUtilization != 80 {
		t.Errorf("spec %+v, want min 1 and cpu at 80%%", h.Spec)
	}
	up, down := h.Spec.Behavior.ScaleUp, h.Spec.Behavior.ScaleDown
	if up == nil || *up.StabilizationWindowSeconds != 0 || len(up.Policies) != 2 || down == nil || down.StabilizationWindowSeconds != nil ||
		down.Policies[0].Value != 100 || *down.SelectPolicy != autoscalingv2.MaxChangePolicySelect {
		t.Errorf("behavior %+v / %+v, want upstream's default rules (scale down's window left to the controller)", up, down)
	}
}
