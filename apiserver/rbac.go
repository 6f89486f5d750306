package apiserver

import (
	"context"
	"fmt"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// rbacAuthorizer is Kubernetes' RBAC: a request is allowed when a rule of
// a role bound to the user, one of its groups or its service account
// covers it. ClusterRoleBindings apply everywhere, RoleBindings in their
// namespace. It answers from caches fed by the RBAC objects' watches.
//
//	request ─▶ ClusterRoleBindings naming the user/group/SA ─▶ their ClusterRoles' rules ─┐
//	        └▶ RoleBindings in the request's namespace ─▶ their Role/ClusterRole rules ───┴▶ any rule covers it? allow : no opinion
type rbacAuthorizer struct {
	roles, clusterRoles, roleBindings, clusterRoleBindings *objectCache
}

func (z *rbacAuthorizer) authorize(_ context.Context, a *attributes) (decision, string) {
	allowed := false
	z.visitRules(a.user, a.namespace, func(rules []rbacv1.PolicyRule) bool {
		allowed = rulesAllow(rules, a)
		return !allowed
	})
	if allowed {
		return allow, ""
	}
	return noOpinion, ""
}

// rulesFor returns every rule that applies to u in namespace ("" for the
// cluster scope alone).
func (z *rbacAuthorizer) rulesFor(u *User, namespace string) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	z.visitRules(u, namespace, func(rules []rbacv1.PolicyRule) bool {
		out = append(out, rules...)
		return true
	})
	return out
}

// visitRules calls fn with the rules of each role bound to u, cluster-wide
// bindings first, until fn returns false.
func (z *rbacAuthorizer) visitRules(u *User, namespace string, fn func([]rbacv1.PolicyRule) bool) {
	more := true
	z.clusterRoleBindings.each(func(obj runtime.Object) bool {
		b := obj.(*rbacv1.ClusterRoleBinding)
		if bindsUser(b.Subjects, "", u) {
			more = fn(z.roleRules(b.RoleRef, ""))
		}
		return more
	})
	if !more || namespace == "" {
		return
	}
	z.roleBindings.each(func(obj runtime.Object) bool {
		b := obj.(*rbacv1.RoleBinding)
		if b.Namespace == namespace && bindsUser(b.Subjects, namespace, u) {
			more = fn(z.roleRules(b.RoleRef, namespace))
		}
		return more
	})
}

// roleRules returns the rules of the role a binding refers to (nil when
// it does not exist: a binding may come before its role).
func (z *rbacAuthorizer) roleRules(ref rbacv1.RoleRef, namespace string) []rbacv1.PolicyRule {
	switch ref.Kind {
	case "ClusterRole":
		if obj, ok := z.clusterRoles.lookup("", ref.Name); ok {
			return obj.(*rbacv1.ClusterRole).Rules
		}
	case "Role":
		if obj, ok := z.roles.lookup(namespace, ref.Name); ok {
			return obj.(*rbacv1.Role).Rules
		}
	}
	return nil
}

// bindsUser reports whether one of the subjects is u, a group of u, or
// u's service account (a RoleBinding's service account subject defaults
// to the binding's namespace).
func bindsUser(subjects []rbacv1.Subject, bindingNamespace string, u *User) bool {
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			if s.Name == u.Name {
				return true
			}
		case rbacv1.GroupKind:
			if u.in(s.Name) {
				return true
			}
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = bindingNamespace
			}
			if u.Name == serviceAccountUser(ns, s.Name) {
				return true
			}
		}
	}
	return false
}

// serviceAccountUser is the user name a service account authenticates as.
func serviceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// admitRBAC is RBAC's escalation prevention, as kube-apiserver's RBAC
// storage enforces it: a user may create or change a role only with
// rules it already holds (or the escalate verb), and bind a role only if
// it holds the role's rules (or the bind verb on it). The apiserver's own
// bootstrap writes carry no user and pass.
func (s *Server) admitRBAC(ctx context.Context, h *resourceHandler, obj runtime.Object) error {
	u := UserFrom(ctx)
	if u == nil || u.in("system:masters") {
		return nil
	}
	gr := h.res.GroupResource()
	may := func(verb, resource, namespace, name string) bool {
		return s.authorizeAttrs(ctx, &attributes{user: u, verb: verb, group: rbacv1.GroupName, resource: resource, namespace: namespace, name: name}) == nil
	}
	switch o := obj.(type) {
	case *rbacv1.Role:
		if may("escalate", "roles", o.Namespace, o.Name) {
			return nil
		}
		return s.confirmNoEscalation(u, gr, o.Name, o.Namespace, o.Rules)
	case *rbacv1.ClusterRole:
		if may("escalate", "clusterroles", "", o.Name) {
			return nil
		}
		if o.AggregationRule != nil {
			return apierrors.NewForbidden(gr, o.Name, fmt.Errorf("must have cluster-admin privileges to use the aggregationRule"))
		}
		return s.confirmNoEscalation(u, gr, o.Name, "", o.Rules)
	case *rbacv1.RoleBinding:
		return s.confirmMayBind(u, gr, o.Name, o.Namespace, o.RoleRef, may)
	case *rbacv1.ClusterRoleBinding:
		return s.confirmMayBind(u, gr, o.Name, "", o.RoleRef, may)
	}
	return nil
}

func (s *Server) confirmMayBind(u *User, gr schema.GroupResource, name, namespace string, ref rbacv1.RoleRef, may func(verb, resource, namespace, name string) bool) error {
	resource, roleNamespace, cache := "clusterroles", "", s.rbac.clusterRoles
	if ref.Kind == "Role" {
		resource, roleNamespace, cache = "roles", namespace, s.rbac.roles
	}
	// Asked in the binding's namespace, so that a RoleBinding may grant
	// the right to bind a cluster role within one namespace.
	if may("bind", resource, namespace, ref.Name) {
		return nil
	}
	if _, ok := cache.lookup(roleNamespace, ref.Name); !ok {
		return apierrors.NewForbidden(gr, name, fmt.Errorf("%s.rbac.authorization.k8s.io %q not found", resource, ref.Name))
	}
	return s.confirmNoEscalation(u, gr, name, namespace, s.rbac.roleRules(ref, namespace))
}

// confirmNoEscalation refuses rules u does not hold in namespace.
func (s *Server) confirmNoEscalation(u *User, gr schema.GroupResource, name, namespace string, rules []rbacv1.PolicyRule) error {
	missing := uncovered(s.rbac.rulesFor(u, namespace), rules)
	if len(missing) == 0 {
		return nil
	}
	groups := make([]string, len(u.Groups))
	for i, g := range u.Groups {
		groups[i] = fmt.Sprintf("%q", g)
	}
	lines := make([]string, len(missing))
	for i, r := range missing {
		lines[i] = compactRule(r)
	}
	sort.Strings(lines)
	return apierrors.NewForbidden(gr, name, fmt.Errorf(
		"user %q (groups=[%s]) is attempting to grant RBAC permissions not currently held:\n%s",
		u.Name, strings.Join(groups, " "), strings.Join(lines, "\n")))
}

// uncovered breaks the requested rules into single permissions (one verb
// on one group's resource, or one URL) and returns those no owner rule
// covers. A requested "*" is covered only by an owner's "*".
func uncovered(owner, requested []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	covered := func(atom rbacv1.PolicyRule) bool {
		for i := range owner {
			if ruleCovers(&owner[i], &atom) {
				return true
			}
		}
		return false
	}
	for _, r := range requested {
		for _, verb := range r.Verbs {
			for _, url := range r.NonResourceURLs {
				atom := rbacv1.PolicyRule{Verbs: []string{verb}, NonResourceURLs: []string{url}}
				if !covered(atom) {
					out = append(out, atom)
				}
			}
			for _, group := range r.APIGroups {
				for _, res := range r.Resources {
					names := r.ResourceNames
					if len(names) == 0 {
						names = []string{""}
					}
					for _, n := range names {
						atom := rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{res}}
						if n != "" {
							atom.ResourceNames = []string{n}
						}
						if !covered(atom) {
							out = append(out, atom)
						}
					}
				}
			}
		}
	}
	return out
}

// ruleCovers reports whether owner grants the single permission atom.
func ruleCovers(owner, atom *rbacv1.PolicyRule) bool {
	if !matches(owner.Verbs, atom.Verbs[0]) {
		return false
	}
	if len(atom.NonResourceURLs) > 0 {
		return urlMatches(owner.NonResourceURLs, atom.NonResourceURLs[0])
	}
	if !matches(owner.APIGroups, atom.APIGroups[0]) {
		return false
	}
	res, sub, _ := strings.Cut(atom.Resources[0], "/")
	if !resourceMatches(owner.Resources, res, sub) {
		return false
	}
	if len(owner.ResourceNames) == 0 {
		return true
	}
	return len(atom.ResourceNames) == 1 && matches(owner.ResourceNames, atom.ResourceNames[0])
}

// compactRule prints a rule as kube-apiserver's escalation message does:
// {APIGroups:[""], Resources:["pods"], Verbs:["get"]}.
func compactRule(r rbacv1.PolicyRule) string {
	var parts []string
	add := func(name string, list []string) {
		if len(list) == 0 {
			return
		}
		q := make([]string, len(list))
		for i, v := range list {
			q[i] = fmt.Sprintf("%q", v)
		}
		parts = append(parts, name+":["+strings.Join(q, " ")+"]")
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("ResourceNames", r.ResourceNames)
	add("NonResourceURLs", r.NonResourceURLs)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}
