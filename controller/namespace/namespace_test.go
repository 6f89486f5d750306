package namespace

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik/client"
	"minik/controller/framework"
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
			conds := Conditions(nil, tc.rem, testutil.T0)
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

func TestConditionsKeepTheirTransitionTime(t *testing.T) {
	before := metav1.NewTime(testutil.T0.Add(-time.Minute))
	now := testutil.T0
	two := Remaining{Counts: map[string]int{"pods": 2}, Finalizers: map[string]int{"example.com/hold": 2}}
	one := Remaining{Counts: map[string]int{"pods": 1}, Finalizers: map[string]int{"example.com/hold": 1}}
	noFinalizers := Remaining{Counts: map[string]int{"pods": 1}}
	other := corev1.NamespaceCondition{Type: corev1.NamespaceDeletionDiscoveryFailure, Status: corev1.ConditionFalse, LastTransitionTime: before}
	prev := append([]corev1.NamespaceCondition{other}, Conditions(nil, two, before.Time)...)
	cases := []struct {
		name             string
		rem              Remaining
		wantContentSince metav1.Time
		wantFinSince     metav1.Time
		wantContentMsg   string
	}{
		{"less content left: the message changes, not the transition time", one, before, before,
			"Some resources are remaining: pods has 1 resource instances"},
		{"the finalizers gone: that condition turns False at now, the other keeps its time", noFinalizers, before, metav1.NewTime(now),
			"Some resources are remaining: pods has 1 resource instances"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conds := Conditions(prev, tc.rem, now)
			if len(conds) != 3 || conds[0] != other {
				t.Fatalf("conditions %+v, want the other condition kept first, then the two", conds)
			}
			content, fins := conds[1], conds[2]
			if content.Type != corev1.NamespaceContentRemaining || !content.LastTransitionTime.Equal(&tc.wantContentSince) || content.Message != tc.wantContentMsg {
				t.Errorf("content condition %+v, want since %v with %q", content, tc.wantContentSince, tc.wantContentMsg)
			}
			if fins.Type != corev1.NamespaceFinalizersRemaining || !fins.LastTransitionTime.Equal(&tc.wantFinSince) {
				t.Errorf("finalizers condition %+v, want since %v", fins, tc.wantFinSince)
			}
		})
	}
}

func TestCollections(t *testing.T) {
	all := []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	resource := func(gv, name string, namespaced bool, verbs ...string) framework.APIResource {
		g, _ := schema.ParseGroupVersion(gv)
		return framework.APIResource{API: client.Resource{Group: g.Group, Version: g.Version, Resource: name, Namespaced: namespaced}, Verbs: verbs}
	}
	tests := []struct {
		name string
		list []framework.APIResource
		want []string
	}{
		{"every namespaced resource that can be listed and deleted is a collection",
			[]framework.APIResource{resource("apps/v1", "deployments", true, all...), resource("apps/v1", "controllerrevisions", true, all...)},
			[]string{"deployments.apps", "controllerrevisions.apps"}},
		{"a cluster-scoped resource and one that cannot be listed and deleted are left alone",
			[]framework.APIResource{resource("v1", "services", true, all...), resource("v1", "nodes", false, all...),
				resource("v1", "localsubjectaccessreviews", true, "create"), resource("v1", "bindings", true, "create")},
			[]string{"services"}},
		{"a read-only resource (metrics) is left alone",
			[]framework.APIResource{resource("metrics.k8s.io/v1beta1", "pods", true, "get", "list")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, r := range collections(tt.list) {
				if !r.Namespaced {
					t.Errorf("%s is not marked namespaced", r.Resource)
				}
				got = append(got, r.GroupResource().String())
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
