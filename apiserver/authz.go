package apiserver

import (
	"context"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
)

// attributes is what an authorizer decides on, as Kubernetes'
// authorizer.Attributes: who asks to do what to which object.
type attributes struct {
	user        *User
	verb        string // get list watch create update patch delete deletecollection
	group       string // API group, "" for core
	resource    string // plural, e.g. "pods"
	subresource string
	namespace   string
	name        string
	// fieldSelector is the parsed field selector of a list or watch
	// (the node authorizer allows a kubelet to list only its own pods).
	fieldSelector fields.Requirements
	// path is set, and the resource fields are not, for a request to a
	// non-resource URL (/api, /healthz, /metrics); verb is then the
	// lower-case HTTP method.
	path string
}

// resourceString is "pods" or "pods/status", as in RBAC rules.
func (a *attributes) resourceString() string {
	if a.subresource == "" {
		return a.resource
	}
	return a.resource + "/" + a.subresource
}

// fieldEquals reports whether the field selector requires field == value.
func (a *attributes) fieldEquals(field, value string) bool {
	for _, req := range a.fieldSelector {
		if req.Field == field && (req.Operator == selection.Equals || req.Operator == selection.DoubleEquals) && req.Value == value {
			return true
		}
	}
	return false
}

// decision is an authorizer's answer. Authorizers run in order; the first
// that allows or denies decides, as in kube-apiserver's union authorizer.
type decision int

const (
	noOpinion decision = iota
	allow
	deny
)

// authorizer is one link of the chain (the node authorizer, the built-in
// roles). reason explains a no or a deny and ends up in the 403.
type authorizer interface {
	authorize(ctx context.Context, a *attributes) (d decision, reason string)
}

// authorizeAttrs runs the chain and turns a refusal into Kubernetes' 403.
func (s *Server) authorizeAttrs(ctx context.Context, a *attributes) error {
	if a.user == nil {
		return apierrors.NewUnauthorized("Unauthorized")
	}
	if ok, reasons := s.decide(ctx, a); !ok {
		return forbidden(a, reasons)
	}
	return nil
}

// decide runs the authorizers in order: the first that allows or denies
// decides; with no opinion from any, the answer is no. reasons are what
// the authorizers said.
func (s *Server) decide(ctx context.Context, a *attributes) (allowed bool, reasons []string) {
	for _, z := range s.authorizers {
		d, reason := z.authorize(ctx, a)
		if reason != "" {
			reasons = append(reasons, reason)
		}
		switch d {
		case allow:
			return true, nil
		case deny:
			return false, reasons
		}
	}
	return false, reasons
}

// forbidden is the 403 kube-apiserver writes:
// User "alice" cannot list resource "pods" in API group "" in the namespace "default".
func forbidden(a *attributes, reasons []string) error {
	if a.path != "" {
		msg := fmt.Sprintf("User %q cannot %s path %q", a.user.Name, a.verb, a.path)
		if len(reasons) > 0 {
			msg += ": " + strings.Join(reasons, ", ")
		}
		return apierrors.NewForbidden(schema.GroupResource{}, "", fmt.Errorf("%s", msg))
	}
	scope := ""
	if a.namespace != "" {
		scope = fmt.Sprintf(" in the namespace %q", a.namespace)
	} else {
		scope = " at the cluster scope"
	}
	msg := fmt.Sprintf("User %q cannot %s resource %q in API group %q%s", a.user.Name, a.verb, a.resourceString(), a.group, scope)
	if len(reasons) > 0 {
		msg += ": " + strings.Join(reasons, ", ")
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: a.group, Resource: a.resource}, a.name, fmt.Errorf("%s", msg))
}

// ruleAllows reports whether one RBAC policy rule covers a resource
// request, with RBAC's matching: "*" matches any verb, group or resource,
// "pods/*" any subresource of pods, "*/scale" that subresource of any
// resource, and resourceNames limits the rule to named objects (never a
// create or a list of everything).
func ruleAllows(rule *rbacv1.PolicyRule, a *attributes) bool {
	if a.path != "" {
		return matches(rule.Verbs, a.verb) && urlMatches(rule.NonResourceURLs, a.path)
	}
	if !matches(rule.Verbs, a.verb) || !matches(rule.APIGroups, a.group) {
		return false
	}
	if !resourceMatches(rule.Resources, a.resource, a.subresource) {
		return false
	}
	return len(rule.ResourceNames) == 0 || (a.name != "" && matches(rule.ResourceNames, a.name))
}

func matches(list []string, s string) bool {
	for _, v := range list {
		if v == "*" || v == s {
			return true
		}
	}
	return false
}

func resourceMatches(list []string, resource, sub string) bool {
	combined := resource
	if sub != "" {
		combined += "/" + sub
	}
	for _, r := range list {
		switch {
		case r == rbacv1.ResourceAll || r == combined:
			return true
		case sub != "" && (r == resource+"/*" || r == "*/"+sub):
			return true
		}
	}
	return false
}

// urlMatches reports whether a non-resource URL rule names path, exactly
// or by a prefix ending in "*".
func urlMatches(list []string, path string) bool {
	for _, u := range list {
		if u == "*" || u == path || strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimSuffix(u, "*")) {
			return true
		}
	}
	return false
}

// rulesAllow reports whether any rule covers the request.
func rulesAllow(rules []rbacv1.PolicyRule, a *attributes) bool {
	for i := range rules {
		if ruleAllows(&rules[i], a) {
			return true
		}
	}
	return false
}

// rule builds a policy rule: rule("get,list,watch", "", "services").
func rule(verbs, group string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: strings.Split(verbs, ","), APIGroups: []string{group}, Resources: resources}
}
