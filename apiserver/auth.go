package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
	})
}

// authorize checks a resource request against the built-in policy.
func (s *Server) authorize(r *http.Request, ri *requestInfo) error {
	return s.authorizeAttrs(UserFrom(r.Context()), ri.verb, ri.handler, ri.subresource, ri.namespace, ri.name)
}

// authorizeObject checks one object touched by a collection request.
func (s *Server) authorizeObject(r *http.Request, verb string, h *resourceHandler, namespace, name string) error {
	return s.authorizeAttrs(UserFrom(r.Context()), verb, h, "", namespace, name)
}

// authorizeAttrs is minik's authorizer: a short, readable policy in the
// spirit of Kubernetes' default roles.
//   - system:masters, the scheduler and the controller manager may do anything;
//   - kubelets (group system:nodes, user system:node:NAME) may read what
//     they run, write their own Node and Lease, pod status, mirror pods
//     and events;
//   - anyone else is refused.
func (s *Server) authorizeAttrs(u *User, verb string, h *resourceHandler, sub, namespace, name string) error {
	if u == nil {
		return apierrors.NewUnauthorized("Unauthorized")
	}
	if u.in("system:masters") || u.Name == "system:kube-scheduler" || u.Name == "system:kube-controller-manager" {
		return nil
	}
	res := h.res.Resource
	if u.in("system:nodes") && strings.HasPrefix(u.Name, "system:node:") {
		node := strings.TrimPrefix(u.Name, "system:node:")
		read := verb == "get" || verb == "list" || verb == "watch"
		switch {
		case read:
			return nil
		case res == "nodes":
			if name == node || (verb == "create" && name == "") {
				return nil
			}
		case res == "pods":
			// Status, and mirror pods (create, delete). Not exec, binding or
			// eviction: as Kubernetes' node authorizer, a kubelet may not
			// run commands in pods or place them.
			if sub == "status" || (sub == "" && (verb == "create" || verb == "delete")) {
				return nil
			}
		case res == "events":
			return nil
		case res == "leases" && namespace == "kube-node-lease":
			return nil
		}
	}
	what := res
	if sub != "" {
		what += "/" + sub
	}
	scope := ""
	if namespace != "" {
		scope = fmt.Sprintf(" in the namespace %q", namespace)
	} else if h.res.Namespaced {
		scope = " at the cluster scope"
	}
	return apierrors.NewForbidden(h.res.GroupResource(), name,
		fmt.Errorf("User %q cannot %s resource %q in API group %q%s", u.Name, verb, what, h.res.Group, scope))
}
