package clusterroleaggregation

import (
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func role(name string, labels map[string]string, verbs ...string) *rbacv1.ClusterRole {
	r := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	for _, v := range verbs {
		r.Rules = append(r.Rules, rbacv1.PolicyRule{Verbs: []string{v}, APIGroups: []string{""}, Resources: []string{"pods"}})
	}
	return r
}

func aggregating(name string, label string) *rbacv1.ClusterRole {
	r := role(name, nil)
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}}
	return r
}

func TestAggregate(t *testing.T) {
	view := aggregating("view", "to-view")
	for _, c := range []struct {
		name string
		all  []*rbacv1.ClusterRole
		want []string // the verbs of the rules, in order
	}{
		{"a role with no matching roles has no rules", []*rbacv1.ClusterRole{view, role("other", nil, "get")}, nil},
		{"matching roles' rules come in name order", []*rbacv1.ClusterRole{view,
			role("b", map[string]string{"to-view": "true"}, "list"), role("a", map[string]string{"to-view": "true"}, "get")}, []string{"get", "list"}},
		{"a rule two roles share appears once", []*rbacv1.ClusterRole{view,
			role("a", map[string]string{"to-view": "true"}, "get"), role("b", map[string]string{"to-view": "true"}, "get", "watch")}, []string{"get", "watch"}},
		{"a label with another value does not match", []*rbacv1.ClusterRole{view, role("a", map[string]string{"to-view": "false"}, "get")}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			rules, err := Aggregate(view, c.all)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rules {
				got = append(got, r.Verbs...)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}
