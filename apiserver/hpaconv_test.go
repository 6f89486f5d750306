package apiserver

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"minik/client"
)

func TestHPAConversion(t *testing.T) {
	cpu := func(target int32) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target}}}
	}
	memory := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("64Mi"))}}}
	sel := autoscalingv2.MaxChangePolicySelect
	v2 := &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{"team": "a"}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
			MinReplicas:    ptr.To(int32(1)), MaxReplicas: 5, Metrics: []autoscalingv2.MetricSpec{cpu(50), memory},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{SelectPolicy: &sel,
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}}}}},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, DesiredReplicas: 3,
			CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
				Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To(int32(120))}}}},
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "SucceededRescale"}}},
	}
	conv := hpaConversion()
	v1obj, err := conv.fromStorage(v2.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	v1 := v1obj.(*autoscalingv1.HorizontalPodAutoscaler)
	t.Run("v1 shows the cpu utilization target and current value as its own fields", func(t *testing.T) {
		if v1.Spec.TargetCPUUtilizationPercentage == nil || *v1.Spec.TargetCPUUtilizationPercentage != 50 ||
			v1.Status.CurrentCPUUtilizationPercentage == nil || *v1.Status.CurrentCPUUtilizationPercentage != 120 {
			t.Errorf("v1 spec %+v status %+v", v1.Spec, v1.Status)
		}
		if v1.APIVersion != "autoscaling/v1" || v1.Annotations["team"] != "a" || v1.Annotations[hpaBehaviorAnnotation] == "" ||
			v1.Annotations[hpaMetricsAnnotation] == "" || v1.Annotations[hpaConditionsAnnotation] == "" {
			t.Errorf("v1 apiVersion %q annotations %v, want the v2-only fields in annotations", v1.APIVersion, v1.Annotations)
		}
	})
	t.Run("a v1 read-modify-write keeps what only v2 says", func(t *testing.T) {
		back, err := conv.toStorage(v1)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(v2, back); d != "" {
			t.Errorf("round trip (-want +got):\n%s", d)
		}
	})
	t.Run("a v1 object without a cpu target has no metric, for the v2 default to fill", func(t *testing.T) {
		out, err := conv.toStorage(&autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "x"},
			Spec: autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 2}})
		if err != nil {
			t.Fatal(err)
		}
		if h := out.(*autoscalingv2.HorizontalPodAutoscaler); len(h.Spec.Metrics) != 0 || h.Spec.MaxReplicas != 2 {
			t.Errorf("converted spec %+v", h.Spec)
		}
	})
}

// TestHPAWrittenThroughV1KeepsManagedFields: a write through the
// autoscaling/v1 view is recorded in managedFields like any other (the
// view's handler tracked it as v1 on the v2 object it stores, which the
// field manager refused, so the write's manager was lost).
func TestHPAWrittenThroughV1KeepsManagedFields(t *testing.T) {
	ts := startTestServer(t)
	c := ts.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v1 := client.For[autoscalingv1.HorizontalPodAutoscaler](c, client.Resource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers", Namespaced: true})
	cpu := int32(50)
	hpa := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 3, TargetCPUUtilizationPercentage: &cpu,
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}}
	if _, err := v1.Create(ctx, hpa, metav1.CreateOptions{FieldManager: "creator"}); err != nil {
		t.Fatal(err)
	}
	got, err := v1.Patch(ctx, "default", "web", types.MergePatchType, []byte(`{"spec":{"maxReplicas":5}}`), metav1.PatchOptions{FieldManager: "patcher"})
	if err != nil {
		t.Fatal(err)
	}
	var managers []string
	for _, e := range got.ManagedFields {
		managers = append(managers, e.Manager+"/"+string(e.Operation))
	}
	if !slices.Contains(managers, "creator/Update") || !slices.Contains(managers, "patcher/Update") {
		t.Fatalf("managers %v, want creator and patcher", managers)
	}
	apply := []byte(`{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"web","namespace":"default"},"spec":{"maxReplicas":7}}`)
	got, err = v1.Patch(ctx, "default", "web", types.ApplyPatchType, apply, metav1.PatchOptions{FieldManager: "applier", Force: ptr.To(true)})
	if err != nil {
		t.Fatalf("server-side apply through v1: %v", err)
	}
	if got.Spec.MaxReplicas != 7 || got.Spec.TargetCPUUtilizationPercentage == nil || *got.Spec.TargetCPUUtilizationPercentage != 50 {
		t.Fatalf("after apply: %+v", got.Spec)
	}
}
