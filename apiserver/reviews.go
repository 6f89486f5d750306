package apiserver

import (
	"context"
	"net/http"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
)

// serveReview answers a create of one of the review kinds, which are
// computed, never stored: who am I (SelfSubjectReview, `kubectl auth
// whoami`), whom does this token name (TokenReview), may I or may they (Self/Local/SubjectAccessReview, `kubectl
// auth can-i`), and what may I do here (SelfSubjectRulesReview, `kubectl
// auth can-i --list`).
func (s *Server) serveReview(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	obj, err := decodeRequest(w, r, ri.handler.res)
	if err != nil {
		writeError(w, r, err)
		return
	}
	ctx := r.Context()
	me := UserFrom(ctx)
	switch o := obj.(type) {
	case *authenticationv1.SelfSubjectReview:
		o.Status.UserInfo = userInfo(me)
	case *authenticationv1.TokenReview:
		if o.Spec.Token == "" {
			writeError(w, r, apierrors.NewBadRequest("token is required for TokenReview in authentication"))
			return
		}
		o.Status = s.tokenReview(ctx, o.Spec)
	case *authorizationv1.SelfSubjectAccessReview:
		o.Status = s.accessReview(r, me, o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes)
	case *authorizationv1.SubjectAccessReview:
		if o.Spec.User == "" && len(o.Spec.Groups) == 0 {
			writeError(w, r, apierrors.NewBadRequest("at least one of user or group must be specified"))
			return
		}
		o.Status = s.accessReview(r, &User{Name: o.Spec.User, Groups: o.Spec.Groups}, o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes)
	case *authorizationv1.LocalSubjectAccessReview:
		if ra := o.Spec.ResourceAttributes; ra == nil || ra.Namespace != ri.namespace {
			writeError(w, r, apierrors.NewBadRequest("spec.resourceAttributes.namespace must match namespace: "+ri.namespace))
			return
		}
		o.Namespace = ri.namespace
		o.Status = s.accessReview(r, &User{Name: o.Spec.User, Groups: o.Spec.Groups}, o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes)
	case *authorizationv1.SelfSubjectRulesReview:
		o.Status = s.rulesReview(me, o.Spec.Namespace)
	}
	writeObject(w, r, http.StatusCreated, obj)
}

// tokenReview authenticates a token for the spec's audiences (the
// apiserver's own when none): the user and the audiences it is valid for,
// or Authenticated false.
func (s *Server) tokenReview(ctx context.Context, spec authenticationv1.TokenReviewSpec) authenticationv1.TokenReviewStatus {
	u, audiences, ok := s.reviewToken(ctx, spec.Token, spec.Audiences)
	if !ok {
		return authenticationv1.TokenReviewStatus{}
	}
	if len(spec.Audiences) > 0 && audiences == nil {
		audiences = spec.Audiences // a static token is good for any
	}
	return authenticationv1.TokenReviewStatus{Authenticated: true, User: userInfo(u), Audiences: audiences}
}

// userInfo is u as the authentication API shows it.
func userInfo(u *User) authenticationv1.UserInfo {
	info := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	for k, v := range u.Extra {
		if info.Extra == nil {
			info.Extra = map[string]authenticationv1.ExtraValue{}
		}
		info.Extra[k] = v
	}
	return info
}

// accessReview runs the authorizer chain for u on the given attributes.
func (s *Server) accessReview(r *http.Request, u *User, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) authorizationv1.SubjectAccessReviewStatus {
	a := &attributes{user: u}
	switch {
	case ra != nil:
		a.verb, a.group, a.resource, a.subresource, a.namespace, a.name = ra.Verb, ra.Group, ra.Resource, ra.Subresource, ra.Namespace, ra.Name
		if fs := ra.FieldSelector; fs != nil && fs.RawSelector != "" {
			if sel, err := fields.ParseSelector(fs.RawSelector); err == nil {
				a.fieldSelector = sel.Requirements()
			}
		}
	case nra != nil:
		a.verb, a.path = nra.Verb, nra.Path
	default:
		return authorizationv1.SubjectAccessReviewStatus{EvaluationError: "missing resourceAttributes or nonResourceAttributes"}
	}
	allowed, reasons := s.decide(r.Context(), a)
	return authorizationv1.SubjectAccessReviewStatus{Allowed: allowed, Reason: strings.Join(reasons, ", ")}
}

// rulesReview lists what u may do in namespace: its RBAC rules there and
// cluster-wide (system:masters through cluster-admin).
func (s *Server) rulesReview(u *User, namespace string) authorizationv1.SubjectRulesReviewStatus {
	var st authorizationv1.SubjectRulesReviewStatus
	rules := s.rbac.rulesFor(u, namespace)
	if u.in("system:masters") && !slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "*") }) {
		rules = append(rules, rule("*", "*", "*"), urlRule("*", "*"))
	}
	if node, ok := nodeIdentity(u); ok && node != "" {
		rules = append(rules, nodeRules...)
		st.Incomplete = true
		st.EvaluationError = "the node authorizer's per-object rights are not listed"
	}
	for _, r := range rules {
		if len(r.NonResourceURLs) > 0 {
			st.NonResourceRules = append(st.NonResourceRules, authorizationv1.NonResourceRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
			continue
		}
		st.ResourceRules = append(st.ResourceRules, authorizationv1.ResourceRule{Verbs: r.Verbs, APIGroups: r.APIGroups,
			Resources: r.Resources, ResourceNames: r.ResourceNames})
	}
	return st
}
