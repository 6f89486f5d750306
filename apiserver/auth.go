package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
)

// User is an authenticated identity: from a client certificate, the
// Common Name is the user and the Organizations are the groups, as in
// Kubernetes.
type User struct {
	Name   string
	Groups []string
	UID    string              // a service account's UID; "" otherwise
	Extra  map[string][]string // a service-account token's pod, node and credential ID
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
// authenticatedKey holds the user protect authenticated before it gave
// the request a slot, so that authenticate does not do it again.
type authenticatedKey struct{}

func withAuthenticated(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, authenticatedKey{}, u)
}

func authenticatedFrom(ctx context.Context) (*User, bool) {
	u, ok := ctx.Value(authenticatedKey{}).(*User)
	return u, ok
}

func withUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// authenticate requires a client certificate or a bearer token. Anonymous
// requests answer 401 except for the health, version and issuer
// discovery endpoints, which are routed before this middleware.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := authenticatedFrom(r.Context())
		if !ok {
			u = s.authenticateRequest(r)
		}
		if u == nil {
			writeError(w, r, apierrors.NewUnauthorized("Unauthorized"))
			return
		}
		if impersonating(r) {
			var err error
			if u, err = s.impersonate(r.WithContext(withUser(r.Context(), u)), u); err != nil {
				writeError(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(withUser(r.Context(), u)))
	})
}

// authenticateRequest returns the request's user: from a verified client
// certificate (CN the user, O the groups; an empty CN is no user, as in
// kube-apiserver), else from a bearer token. nil means anonymous.
func (s *Server) authenticateRequest(r *http.Request) *User {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		cert := r.TLS.VerifiedChains[0][0]
		if cert.Subject.CommonName == "" {
			return nil
		}
		return &User{Name: cert.Subject.CommonName, Groups: append([]string{"system:authenticated"}, cert.Subject.Organization...)}
	}
	if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && token != "" {
		if u, ok := s.authenticateToken(r.Context(), strings.TrimSpace(token)); ok {
			return u
		}
	}
	return nil
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

// authorizePath authorizes a request to a non-resource URL (discovery,
// OpenAPI, profiling) before next serves it.
func (s *Server) authorizePath(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := &attributes{user: UserFrom(r.Context()), verb: strings.ToLower(r.Method), path: r.URL.Path}
		if err := s.authorizeAttrs(r.Context(), a); err != nil {
			writeError(w, r, err)
			return
		}
		next(w, r)
	})
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

// privilegedGroups allows system:masters everything before any other
// authorizer is asked, as kube-apiserver does: an admin keeps its power
// even if the RBAC objects are broken or deleted.
type privilegedGroups struct{}

func (privilegedGroups) authorize(_ context.Context, a *attributes) (decision, string) {
	if a.user.in("system:masters") {
		return allow, ""
	}
	return noOpinion, ""
}

// The impersonation headers kubectl --as, --as-group and --as-uid send.
const (
	impersonateUser        = "Impersonate-User"
	impersonateGroup       = "Impersonate-Group"
	impersonateUID         = "Impersonate-Uid"
	impersonateExtraPrefix = "Impersonate-Extra-"
)

func impersonating(r *http.Request) bool {
	for k := range r.Header {
		if k == impersonateUser || k == impersonateGroup || k == impersonateUID || strings.HasPrefix(k, impersonateExtraPrefix) {
			return true
		}
	}
	return false
}

// impersonate returns the user the request acts as, once the real user
// is allowed the impersonate verb on each part of it (users or service
// accounts, groups, uids, user extras), as kube-apiserver checks.
func (s *Server) impersonate(r *http.Request, real *User) (*User, error) {
	name := r.Header.Get(impersonateUser)
	groups := r.Header.Values(impersonateGroup)
	if name == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("requested impersonation of groups %v without impersonating a user", groups))
	}
	check := func(a *attributes) error {
		a.user, a.verb = real, "impersonate"
		return s.authorizeAttrs(r.Context(), a)
	}
	u := &User{Name: name}
	if ns, sa, ok := strings.Cut(strings.TrimPrefix(name, "system:serviceaccount:"), ":"); ok && strings.HasPrefix(name, "system:serviceaccount:") {
		if err := check(&attributes{resource: "serviceaccounts", namespace: ns, name: sa}); err != nil {
			return nil, err
		}
		u.Groups = append(u.Groups, "system:serviceaccounts", "system:serviceaccounts:"+ns)
	} else if err := check(&attributes{resource: "users", name: name}); err != nil {
		return nil, err
	}
	for _, g := range groups {
		if err := check(&attributes{resource: "groups", name: g}); err != nil {
			return nil, err
		}
		u.Groups = append(u.Groups, g)
	}
	if uid := r.Header.Get(impersonateUID); uid != "" {
		if err := check(&attributes{group: "authentication.k8s.io", resource: "uids", name: uid}); err != nil {
			return nil, err
		}
	}
	for k, values := range r.Header {
		if key, ok := strings.CutPrefix(k, impersonateExtraPrefix); ok {
			for _, v := range values {
				if err := check(&attributes{group: "authentication.k8s.io", resource: "userextras", subresource: strings.ToLower(key), name: v}); err != nil {
					return nil, err
				}
			}
		}
	}
	if name == "system:anonymous" {
		u.Groups = append(u.Groups, "system:unauthenticated")
	} else if !u.in("system:authenticated") {
		u.Groups = append(u.Groups, "system:authenticated")
	}
	return u, nil
}
