package namespace

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"minik/controller/internal/testutil"
)

func TestConditions(t *testing.T) {
	cases := []struct {
		name                 string
		rem                  Remaining
		wantContent, wantFin corev1.ConditionStatus
		wantMsg              string
	}{
		{"an empty namespace has no content and no finalizers remaining", Remaining{Counts: map[string]int{"pods": 0}},
			corev1.ConditionFalse, corev1.ConditionFalse, "All content successfully removed"},
		{"remaining objects are listed by resource, sorted", Remaining{Counts: map[string]int{"pods": 2, "configmaps": 1}, Finalizers: map[string]int{"orphan": 1}},
			corev1.ConditionTrue, corev1.ConditionTrue, "Some resources are remaining: configmaps has 1 resource instances, pods has 2 resource instances"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conds := Conditions(tc.rem, testutil.T0)
			if conds[0].Type != corev1.NamespaceContentRemaining || conds[0].Status != tc.wantContent || conds[0].Message != tc.wantMsg {
				t.Errorf("content condition %+v", conds[0])
			}
			if conds[1].Type != corev1.NamespaceFinalizersRemaining || conds[1].Status != tc.wantFin {
				t.Errorf("finalizers condition %+v", conds[1])
			}
			if tc.rem.Empty() != (tc.wantContent == corev1.ConditionFalse) {
				t.Errorf("Empty() = %v", tc.rem.Empty())
			}
		})
	}
}
