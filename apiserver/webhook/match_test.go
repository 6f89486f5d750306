package webhook

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func TestRuleMatches(t *testing.T) {
	rule := func(resources []string, scope admissionregistrationv1.ScopeType, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{"", "apps"}, APIVersions: []string{"v1"}, Resources: resources, Scope: ptr.To(scope)}}
	}
	pods := &Attributes{Operation: admissionv1.Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: "default"}
	podStatus := &Attributes{Operation: admissionv1.Update, Resource: pods.Resource, SubResource: "status", Namespace: "default"}
	deployScale := &Attributes{Operation: admissionv1.Update, Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		SubResource: "scale", Namespace: "default"}
	namespace := &Attributes{Operation: admissionv1.Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Namespace: "team"}
	node := &Attributes{Operation: admissionv1.Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}}
	batchJob := &Attributes{Operation: admissionv1.Create, Resource: schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, Namespace: "default"}
	all, create, update := admissionregistrationv1.OperationAll, admissionregistrationv1.Create, admissionregistrationv1.Update
	tests := []struct {
		name string
		rule admissionregistrationv1.RuleWithOperations
		attr *Attributes
		want bool
	}{
		{"pods matches a pod create", rule([]string{"pods"}, "*", create), pods, true},
		{"pods does not match its status", rule([]string{"pods"}, "*", all), podStatus, false},
		{"pods/status matches the status", rule([]string{"pods/status"}, "*", update), podStatus, true},
		{"pods/* matches the pod and its subresources", rule([]string{"pods/*"}, "*", all), podStatus, true},
		{"pods/* matches the pod itself", rule([]string{"pods/*"}, "*", all), pods, true},
		{"* matches no subresource", rule([]string{"*"}, "*", all), deployScale, false},
		{"*/scale matches every scale", rule([]string{"*/scale"}, "*", update), deployScale, true},
		{"*/* matches everything", rule([]string{"*/*"}, "*", all), deployScale, true},
		{"an operation not listed does not match", rule([]string{"pods"}, "*", update), pods, false},
		{"a group not listed does not match", rule([]string{"*"}, "*", all), batchJob, false},
		{"Namespaced does not match a namespace object", rule([]string{"*"}, admissionregistrationv1.NamespacedScope, all), namespace, false},
		{"Cluster matches a namespace object", rule([]string{"*"}, admissionregistrationv1.ClusterScope, all), namespace, true},
		{"Cluster matches a node", rule([]string{"*"}, admissionregistrationv1.ClusterScope, all), node, true},
		{"Cluster does not match a pod", rule([]string{"*"}, admissionregistrationv1.ClusterScope, all), pods, false},
		{"Namespaced matches a pod", rule([]string{"*"}, admissionregistrationv1.NamespacedScope, all), pods, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ruleMatches(&tt.rule, tt.attr, tt.attr.Resource); got != tt.want {
				t.Errorf("ruleMatches = %v, want %v", got, tt.want)
			}
		})
	}
}

// MayCall needs no object: a Set whose rules name neither the operation
// nor the resource lets the apiserver skip building the review.
func TestSetMayCall(t *testing.T) {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	set := &Set{Hooks: []*Hook{{Rules: []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods", "deployments/scale"}},
	}}}}}
	cases := []struct {
		op   admissionv1.Operation
		res  schema.GroupVersionResource
		sub  string
		want bool
	}{
		{admissionv1.Create, pods, "", true},
		{admissionv1.Update, pods, "", false},
		{admissionv1.Create, pods, "status", false},
		{admissionv1.Create, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "", false},
		{admissionv1.Create, schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "pods"}, "", false},
	}
	for _, tc := range cases {
		if got := set.MayCall(tc.op, tc.res, tc.sub, nil); got != tc.want {
			t.Errorf("MayCall(%s %s/%s) = %v, want %v", tc.op, tc.res, tc.sub, got, tc.want)
		}
	}
	if (*Set)(nil).MayCall(admissionv1.Create, pods, "", nil) {
		t.Error("a nil Set may call")
	}
}

// Under matchPolicy Equivalent a rule naming another version of the
// resource may match, so MayCall must say so; under Exact it must not.
func TestSetMayCallEquivalent(t *testing.T) {
	v1 := schema.GroupVersionResource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"}
	v2 := v1
	v2.Version = "v2"
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"autoscaling"}, APIVersions: []string{"v2"}, Resources: []string{"horizontalpodautoscalers"}},
	}}
	equivalent := &Set{Hooks: []*Hook{{Rules: rules, Equivalent: true}}}
	exact := &Set{Hooks: []*Hook{{Rules: rules}}}
	if !equivalent.MayCall(admissionv1.Create, v1, "", func() []schema.GroupVersionResource { return []schema.GroupVersionResource{v2} }) {
		t.Error("an Equivalent rule naming v2 may not call on a v1 create")
	}
	if exact.MayCall(admissionv1.Create, v1, "", func() []schema.GroupVersionResource { return []schema.GroupVersionResource{v2} }) {
		t.Error("an Exact rule naming v2 may call on a v1 create")
	}
	if equivalent.MayCall(admissionv1.Create, v1, "", nil) {
		t.Error("an Equivalent rule may call when the resource has no other version")
	}
	a := &Attributes{Operation: admissionv1.Create, Resource: v1, Namespace: "default",
		Equivalents: []Equivalent{{Resource: v2, Kind: schema.GroupVersionKind{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}}}}
	if inv, ok := equivalent.Hooks[0].invocationFor(a); !ok || inv.Resource != v2 || inv.Kind.Version != "v2" {
		t.Errorf("invocation %+v, %v: want the webhook called in v2", inv, ok)
	}
}
