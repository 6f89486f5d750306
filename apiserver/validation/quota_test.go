package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func resources(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func TestLimitRangeAndResourceQuota(t *testing.T) {
	lr := func(items ...corev1.LimitRangeItem) *corev1.LimitRange {
		return &corev1.LimitRange{ObjectMeta: objMeta("lr"), Spec: corev1.LimitRangeSpec{Limits: items}}
	}
	container := corev1.LimitTypeContainer
	tests := []struct {
		name string
		obj  runtime.Object
		want []want
	}{
		{name: "a limit range with ordered values is valid",
			obj: lr(corev1.LimitRangeItem{Type: container, Min: resources("cpu", "100m"), DefaultRequest: resources("cpu", "200m"),
				Default: resources("cpu", "500m"), Max: resources("cpu", "1"), MaxLimitRequestRatio: resources("cpu", "4")})},
		{name: "a min over the max is rejected",
			obj:  lr(corev1.LimitRangeItem{Type: container, Min: resources("memory", "2Gi"), Max: resources("memory", "1Gi")}),
			want: []want{{field.ErrorTypeInvalid, "spec.limits[0].min[memory]", "min value 2Gi is greater than max value 1Gi"}}},
		{name: "a default over the max is rejected",
			obj:  lr(corev1.LimitRangeItem{Type: container, Default: resources("cpu", "2"), Max: resources("cpu", "1")}),
			want: []want{{field.ErrorTypeInvalid, "spec.limits[0].default[cpu]", "default value 2 is greater than max value 1"}}},
		{name: "a Pod item may not have defaults",
			obj:  lr(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Default: resources("cpu", "1")}),
			want: []want{{field.ErrorTypeForbidden, "spec.limits[0].default", "may not be specified when `type` is 'Pod'"}}},
		{name: "a ratio under 1 is rejected",
			obj:  lr(corev1.LimitRangeItem{Type: container, MaxLimitRequestRatio: resources("cpu", "500m")}),
			want: []want{{field.ErrorTypeInvalid, "spec.limits[0].maxLimitRequestRatio[cpu]", "ratio 500m is less than 1"}}},
		{name: "two items of one type are rejected",
			obj:  lr(corev1.LimitRangeItem{Type: container}, corev1.LimitRangeItem{Type: container}),
			want: []want{{field.ErrorTypeDuplicate, "spec.limits[1].type", ""}}},
		{name: "an unknown limit type is rejected",
			obj:  lr(corev1.LimitRangeItem{Type: "Node"}),
			want: []want{{field.ErrorTypeInvalid, "spec.limits[0].type", "must be a standard limit type or fully qualified"}}},
		{name: "a quota with counts and compute resources is valid",
			obj: &corev1.ResourceQuota{ObjectMeta: objMeta("q"), Spec: corev1.ResourceQuotaSpec{
				Hard: resources("pods", "10", "requests.cpu", "2", "count/deployments.apps", "5")}}},
		{name: "a negative or fractional count is rejected",
			obj: &corev1.ResourceQuota{ObjectMeta: objMeta("q"), Spec: corev1.ResourceQuotaSpec{Hard: resources("pods", "1500m", "configmaps", "-1")}},
			want: []want{{field.ErrorTypeInvalid, "spec.hard[pods]", "must be an integer"},
				{field.ErrorTypeInvalid, "spec.hard[configmaps]", "must be greater than or equal to 0"}}},
		{name: "an unknown scope is rejected",
			obj: &corev1.ResourceQuota{ObjectMeta: objMeta("q"), Spec: corev1.ResourceQuotaSpec{
				Hard: resources("pods", "1"), Scopes: []corev1.ResourceQuotaScope{"Forever"}}},
			want: []want{{field.ErrorTypeInvalid, "spec.scopes[0]", "unsupported scope"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertErrors(t, Create(tc.obj, true), tc.want)
		})
	}
}
