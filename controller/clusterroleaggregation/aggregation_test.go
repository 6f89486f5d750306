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

func TestPlan(t *testing.T) {
	view := aggregating("view", "to-view")
	filled := view.DeepCopy()
	filled.Rules = role("a", nil, "get").Rules
	reader := role("a", map[string]string{"to-view": "true"}, "get")
	bad := aggregating("bad", "to-view")
	bad.AggregationRule.ClusterRoleSelectors[0].MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Nope"}}
	for _, c := range []struct {
		name      string
		role      *rbacv1.ClusterRole
		all       []*rbacv1.ClusterRole
		wantVerbs []string // of the rules written; nil: no write
		wantErr   bool
	}{
		{"an aggregated role missing a matching role's rules gets them", view, []*rbacv1.ClusterRole{view, reader}, []string{"get"}, false},
		{"an aggregated role with the rules it should have is left alone", filled, []*rbacv1.ClusterRole{filled, reader}, nil, false},
		{"an aggregated role whose matching role went is emptied", filled, []*rbacv1.ClusterRole{filled}, []string{}, false},
		{"an empty aggregated role with nothing to match is left alone", view, []*rbacv1.ClusterRole{view}, nil, false},
		{"a role without aggregationRule is not touched", reader, []*rbacv1.ClusterRole{view, reader}, nil, false},
		{"a role gone from the cache is not touched", nil, []*rbacv1.ClusterRole{reader}, nil, false},
		{"an invalid selector is an error, not an emptied role", bad, []*rbacv1.ClusterRole{bad, reader}, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := Plan(c.role, c.all)
			if (err != nil) != c.wantErr {
				t.Fatalf("error %v, want one: %v", err, c.wantErr)
			}
			if c.wantVerbs == nil {
				if len(out.Actions) != 0 {
					t.Fatalf("actions %v, want none", out.Actions)
				}
				return
			}
			if len(out.Actions) != 1 || out.Actions[0].Type != UpdateRules {
				t.Fatalf("actions %v, want one UpdateRules", out.Actions)
			}
			got := []string{}
			for _, r := range out.Actions[0].Role.Rules {
				got = append(got, r.Verbs...)
			}
			if !reflect.DeepEqual(got, c.wantVerbs) {
				t.Errorf("rules written with verbs %v, want %v", got, c.wantVerbs)
			}
		})
	}
}
