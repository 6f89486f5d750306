package apiserver

import (
	"context"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
)

// User is an authenticated identity: from a client certificate, the
// Common Name is the user and the Organizations are the groups, as in
// Kubernetes.
type User struct {
	Name   string
	Groups []string
}

func (u *User) in(group string) bool {
	for _, g := range u.Groups {
		if g == group {
			return true
		}
	}
	return false
}

type userKey struct{}

// UserFrom returns the request's user.
func UserFrom(ctx context.Context) *User {
	u, _ := ctx.Value(userKey{}).(*User)
	return u
}

// withUser returns ctx carrying u (the apiserver's own writes carry none).
func withUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// authenticate requires a verified client certificate. Anonymous
// requests answer 401 except for the health and version endpoints,
// which are routed before this middleware.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
			writeError(w, r, apierrors.NewUnauthorized("Unauthorized"))
			return
		}
		cert := r.TLS.VerifiedChains[0][0]
		u := &User{Name: cert.Subject.CommonName, Groups: append([]string{"system:authenticated"}, cert.Subject.Organization...)}
		next.ServeHTTP(w, r.WithContext(withUser(r.Context(), u)))
	})
}

// authorize checks a resource request against the authorizer chain.
func (s *Server) authorize(r *http.Request, ri *requestInfo) error {
	a := ri.attributes(UserFrom(r.Context()))
	if ri.verb == "list" || ri.verb == "watch" || ri.verb == "deletecollection" {
		if sel := r.URL.Query().Get("fieldSelector"); sel != "" {
			if parsed, err := fields.ParseSelector(sel); err == nil {
				a.fieldSelector = parsed.Requirements()
				// As kube-apiserver: a list of one name is authorized as
				// a read of that object.
				for _, req := range a.fieldSelector {
					if req.Field == "metadata.name" && a.fieldEquals("metadata.name", req.Value) {
						a.name = req.Value
					}
				}
			}
		}
	}
	return s.authorizeAttrs(r.Context(), a)
}

// authorizeObject checks one object touched by a collection request.
func (s *Server) authorizeObject(r *http.Request, verb string, h *resourceHandler, namespace, name string) error {
	return s.authorizeAttrs(r.Context(), &attributes{user: UserFrom(r.Context()), verb: verb,
		group: h.res.Group, resource: h.res.Resource, namespace: namespace, name: name})
}

// attributes are the request's authorization attributes.
func (ri *requestInfo) attributes(u *User) *attributes {
	return &attributes{user: u, verb: ri.verb, group: ri.handler.res.Group, resource: ri.handler.res.Resource,
		subresource: ri.subresource, namespace: ri.namespace, name: ri.name}
}

// builtinAuthorizer holds the rights of minik's own components until
// RBAC roles carry them: system:masters may do anything, and so (for now)
// may the scheduler and the controller manager; the node proxy and the
// cluster DNS have their roles' rules (policy.go).
type builtinAuthorizer struct{}

func (builtinAuthorizer) authorize(_ context.Context, a *attributes) (decision, string) {
	u := a.user
	if u.in("system:masters") || u.Name == "system:kube-scheduler" || u.Name == "system:kube-controller-manager" {
		return allow, ""
	}
	if p, ok := componentPolicies[u.Name]; ok && p.allows(a) {
		return allow, ""
	}
	return noOpinion, ""
}
