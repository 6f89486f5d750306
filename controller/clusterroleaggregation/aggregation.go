// Package clusterroleaggregation fills the rules of ClusterRoles that
// have an aggregationRule (admin, edit, view, and any a user makes) with
// the rules of the ClusterRoles their selectors match, as Kubernetes'
// clusterrole-aggregation controller does:
//
//	any ClusterRole changes ─▶ queue every aggregated ClusterRole
//	   ─▶ Plan(role, all roles): Aggregate (matching roles by name, rules in order, each once)
//	      differs from role.rules? ─▶ UpdateRules
//	   ─▶ framework.Execute through the sink: PUT the role with the new rules
package clusterroleaggregation

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"minik/client"
	"minik/client/informer"
	"minik/controller/framework"
)

// Name is the controller's name.
const Name = "clusterrole-aggregation"

// Controller keeps aggregated ClusterRoles' rules current.
type Controller struct {
	cache *informer.Informer[rbacv1.ClusterRole]
	queue *framework.Queue
	log   *slog.Logger
	// sink performs the writes (apiSink; a FakeSink in tests).
	sink framework.Sink[Action]
}

// New registers the controller on the shared ClusterRole informer.
func New(c *client.Client, inf *framework.Informers, log *slog.Logger) *Controller {
	ctl := &Controller{cache: inf.ClusterRoles, queue: framework.NewQueue(framework.QueueConfig{Name: Name}),
		log: log.With("controller", Name), sink: apiSink{client.For[rbacv1.ClusterRole](c, client.ClusterRoles)}}
	// Any role may be selected by any aggregated role: queue all of
	// those (there are few).
	requeue := func(*rbacv1.ClusterRole) {
		for _, r := range ctl.cache.Store().List() {
			if r.AggregationRule != nil {
				ctl.queue.Add(r.Name)
			}
		}
	}
	inf.ClusterRoles.AddHandler(informer.Handler[rbacv1.ClusterRole]{
		OnAdd: requeue, OnUpdate: func(_, r *rbacv1.ClusterRole) { requeue(r) }, OnDelete: requeue,
	})
	return ctl
}

// Run aggregates with workers goroutines until ctx ends. Several are
// safe: the queue never gives one role to two of them, each writes only
// its role, and a role whose write changes what another aggregates
// queues that one again (upstream runs five).
func (ctl *Controller) Run(ctx context.Context, workers int) {
	framework.RunWorkers(ctx, ctl.queue, workers, ctl.sync, func(key string, err error) {
		ctl.log.Warn("aggregating failed", "clusterrole", key, "err", err)
	})
}

// ActionType says what an Action does.
type ActionType string

// UpdateRules writes an aggregated role's rules.
const UpdateRules ActionType = "UpdateRules"

// Action is one write.
type Action struct {
	Type ActionType
	// Role is the aggregated role with the rules it should have.
	Role *rbacv1.ClusterRole
}

// String names the action and its role, as "UpdateRules view".
func (a Action) String() string { return string(a.Type) + " " + a.Role.Name }

// Output is what one aggregated role needs.
type Output = framework.Output[Action]

// Plan decides whether role, if it aggregates, needs its rules rewritten
// from all the cached roles. An invalid selector (the apiserver's
// validation refuses them) is an error: the role is retried, not emptied.
func Plan(role *rbacv1.ClusterRole, all []*rbacv1.ClusterRole) (Output, error) {
	var out Output
	if role == nil || role.AggregationRule == nil {
		return out, nil
	}
	rules, err := Aggregate(role, all)
	if err != nil {
		return out, err
	}
	if reflect.DeepEqual(rules, role.Rules) || len(rules) == 0 && len(role.Rules) == 0 {
		return out, nil
	}
	next := role.DeepCopy()
	next.Rules = rules
	out.Actions = append(out.Actions, Action{Type: UpdateRules, Role: next})
	return out, nil
}

func (ctl *Controller) sync(ctx context.Context, name string) (framework.Result, error) {
	role, _ := ctl.cache.Store().Get("", name)
	out, err := Plan(role, ctl.cache.Store().List())
	if err != nil {
		return framework.Result{}, err
	}
	return framework.Result{}, framework.Execute(ctx, ctl.sink, out.Actions)
}

// apiSink performs the actions through the apiserver. A role deleted
// since the cache saw it needs nothing.
type apiSink struct {
	roles *client.Typed[rbacv1.ClusterRole]
}

func (s apiSink) Do(ctx context.Context, a Action) error {
	_, err := s.roles.Update(ctx, a.Role, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Aggregate returns the rules an aggregated role should have: the rules
// of every other ClusterRole one of its selectors matches, roles taken by
// name, each rule once, in the order found.
func Aggregate(role *rbacv1.ClusterRole, all []*rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	var selectors []labels.Selector
	for i := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, fmt.Errorf("clusterRoleSelectors[%d]: %w", i, err)
		}
		selectors = append(selectors, sel)
	}
	sorted := append([]*rbacv1.ClusterRole(nil), all...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var rules []rbacv1.PolicyRule
	for _, sel := range selectors {
		for _, r := range sorted {
			if r.Name == role.Name || !sel.Matches(labels.Set(r.Labels)) {
				continue
			}
			for _, rule := range r.Rules {
				if !containsRule(rules, rule) {
					rules = append(rules, rule)
				}
			}
		}
	}
	return rules, nil
}

func containsRule(rules []rbacv1.PolicyRule, r rbacv1.PolicyRule) bool {
	for _, have := range rules {
		if reflect.DeepEqual(have, r) {
			return true
		}
	}
	return false
}
