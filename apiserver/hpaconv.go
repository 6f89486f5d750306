package apiserver

import (
	"encoding/json"
	"fmt"
	"maps"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik/apiserver/registry"
)

// conversionFor is the conversion of a resource served from another's
// storage (registry.Resource.StorageOf).
func conversionFor(res *registry.Resource) *conversion {
	if res.Group == "autoscaling" {
		return hpaConversion()
	}
	return eventsConversion()
}

// The annotations that carry, on an autoscaling/v1 object, what only v2
// can say, so that a v1 read-modify-write keeps it (as upstream does).
const (
	hpaBehaviorAnnotation       = "autoscaling.alpha.kubernetes.io/behavior"
	hpaConditionsAnnotation     = "autoscaling.alpha.kubernetes.io/conditions"
	hpaMetricsAnnotation        = "autoscaling.alpha.kubernetes.io/metrics"
	hpaCurrentMetricsAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
)

// hpaConversion serves autoscaling/v1 HorizontalPodAutoscalers from the
// v2 storage: v1's targetCPUUtilizationPercentage is v2's cpu Resource
// metric with an Utilization target; the other metrics, the behavior and
// the conditions travel in annotations.
func hpaConversion() *conversion {
	return &conversion{
		toStorage: func(obj runtime.Object) (runtime.Object, error) {
			in, ok := obj.(*autoscalingv1.HorizontalPodAutoscaler)
			if !ok {
				return nil, fmt.Errorf("expected an autoscaling/v1 HorizontalPodAutoscaler, got %T", obj)
			}
			return hpaV1ToV2(in)
		},
		fromStorage: func(obj runtime.Object) (runtime.Object, error) {
			in, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
			if !ok {
				return nil, fmt.Errorf("expected an autoscaling/v2 HorizontalPodAutoscaler, got %T", obj)
			}
			return hpaV2ToV1(in)
		},
	}
}

func isCPUUtilization(m autoscalingv2.MetricSpec) bool {
	return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU &&
		m.Resource.Target.Type == autoscalingv2.UtilizationMetricType
}

func hpaV1ToV2(in *autoscalingv1.HorizontalPodAutoscaler) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	out := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: *in.ObjectMeta.DeepCopy()}
	out.APIVersion, out.Kind = "autoscaling/v2", "HorizontalPodAutoscaler"
	ann := out.Annotations
	take := func(key string, into any) error {
		v, ok := ann[key]
		if !ok {
			return nil
		}
		delete(ann, key)
		if err := json.Unmarshal([]byte(v), into); err != nil {
			return fmt.Errorf("annotation %s: %w", key, err)
		}
		return nil
	}
	out.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: in.Spec.ScaleTargetRef.Kind,
			Name: in.Spec.ScaleTargetRef.Name, APIVersion: in.Spec.ScaleTargetRef.APIVersion},
		MinReplicas: in.Spec.MinReplicas, MaxReplicas: in.Spec.MaxReplicas,
	}
	if err := take(hpaMetricsAnnotation, &out.Spec.Metrics); err != nil {
		return nil, err
	}
	if p := in.Spec.TargetCPUUtilizationPercentage; p != nil {
		u := *p
		out.Spec.Metrics = append([]autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &u}}}}, out.Spec.Metrics...)
	}
	if err := take(hpaBehaviorAnnotation, &out.Spec.Behavior); err != nil {
		return nil, err
	}
	out.Status = autoscalingv2.HorizontalPodAutoscalerStatus{ObservedGeneration: in.Status.ObservedGeneration,
		LastScaleTime: in.Status.LastScaleTime, CurrentReplicas: in.Status.CurrentReplicas, DesiredReplicas: in.Status.DesiredReplicas}
	if err := take(hpaCurrentMetricsAnnotation, &out.Status.CurrentMetrics); err != nil {
		return nil, err
	}
	if p := in.Status.CurrentCPUUtilizationPercentage; p != nil {
		u := *p
		out.Status.CurrentMetrics = append([]autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU,
				Current: autoscalingv2.MetricValueStatus{AverageUtilization: &u}}}}, out.Status.CurrentMetrics...)
	}
	if err := take(hpaConditionsAnnotation, &out.Status.Conditions); err != nil {
		return nil, err
	}
	if len(ann) == 0 {
		out.Annotations = nil
	}
	return out, nil
}

func hpaV2ToV1(in *autoscalingv2.HorizontalPodAutoscaler) (*autoscalingv1.HorizontalPodAutoscaler, error) {
	out := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: *in.ObjectMeta.DeepCopy()}
	out.APIVersion, out.Kind = "autoscaling/v1", "HorizontalPodAutoscaler"
	ann := maps.Clone(out.Annotations)
	put := func(key string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if ann == nil {
			ann = map[string]string{}
		}
		ann[key] = string(b)
		return nil
	}
	out.Spec = autoscalingv1.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: in.Spec.ScaleTargetRef.Kind,
			Name: in.Spec.ScaleTargetRef.Name, APIVersion: in.Spec.ScaleTargetRef.APIVersion},
		MinReplicas: in.Spec.MinReplicas, MaxReplicas: in.Spec.MaxReplicas,
	}
	var others []autoscalingv2.MetricSpec
	for _, m := range in.Spec.Metrics {
		if isCPUUtilization(m) && out.Spec.TargetCPUUtilizationPercentage == nil {
			u := *m.Resource.Target.AverageUtilization
			out.Spec.TargetCPUUtilizationPercentage = &u
			continue
		}
		others = append(others, m)
	}
	if len(others) > 0 {
		if err := put(hpaMetricsAnnotation, others); err != nil {
			return nil, err
		}
	}
	if in.Spec.Behavior != nil {
		if err := put(hpaBehaviorAnnotation, in.Spec.Behavior); err != nil {
			return nil, err
		}
	}
	out.Status = autoscalingv1.HorizontalPodAutoscalerStatus{ObservedGeneration: in.Status.ObservedGeneration,
		LastScaleTime: in.Status.LastScaleTime, CurrentReplicas: in.Status.CurrentReplicas, DesiredReplicas: in.Status.DesiredReplicas}
	var current []autoscalingv2.MetricStatus
	for _, m := range in.Status.CurrentMetrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU &&
			m.Resource.Current.AverageUtilization != nil && out.Status.CurrentCPUUtilizationPercentage == nil {
			u := *m.Resource.Current.AverageUtilization
			out.Status.CurrentCPUUtilizationPercentage = &u
			continue
		}
		current = append(current, m)
	}
	if len(current) > 0 {
		if err := put(hpaCurrentMetricsAnnotation, current); err != nil {
			return nil, err
		}
	}
	if len(in.Status.Conditions) > 0 {
		if err := put(hpaConditionsAnnotation, in.Status.Conditions); err != nil {
			return nil, err
		}
	}
	out.Annotations = ann
	return out, nil
}
