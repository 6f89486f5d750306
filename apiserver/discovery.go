package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gorilla/mux"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	"minik/apiserver/registry"
)

// Version is the Kubernetes version minik reports; kubectl compares it
// with its own for the version-skew warning.
var Version = version.Info{Major: "1", Minor: "37", GitVersion: "v1.37.2-minik", Platform: runtime.GOOS + "/" + runtime.GOARCH,
	GoVersion: runtime.Version(), Compiler: runtime.Compiler}

type groupVersions struct {
	group     string
	versions  []string
	resources map[string][]*registry.Resource // by version
}

func (s *Server) addGroupVersion(res *registry.Resource) {
	s.groups = addGroupVersion(s.groups, res)
}

// addGroupVersion adds res to the discovery groups; a group's first
// version is its preferred one.
func addGroupVersion(groups []groupVersions, res *registry.Resource) []groupVersions {
	for i := range groups {
		g := &groups[i]
		if g.group == res.Group {
			if _, ok := g.resources[res.Version]; !ok {
				g.versions = append(g.versions, res.Version)
			}
			g.resources[res.Version] = append(g.resources[res.Version], res)
			return groups
		}
	}
	return append(groups, groupVersions{group: res.Group, versions: []string{res.Version},
		resources: map[string][]*registry.Resource{res.Version: {res}}})
}

// allGroups are the built-in groups, then those of custom resources.
func (s *Server) allGroups() []groupVersions {
	custom := s.customGroups()
	if len(custom) == 0 {
		return s.groups
	}
	return append(slices.Clone(s.groups), custom...)
}

// routes wires every endpoint. Resource paths go through one dispatcher
// that parses /api/v1/namespaces/NS/RESOURCE/NAME/SUB.
func (s *Server) routes(openapiHandler http.Handler) *mux.Router {
	r := mux.NewRouter()
	r.UseEncodedPath()
	public := func(h http.HandlerFunc) http.Handler { return h }
	r.Handle("/healthz", public(s.health)).Methods(http.MethodGet)
	r.Handle("/livez", public(s.health)).Methods(http.MethodGet)
	r.Handle("/readyz", public(s.health)).Methods(http.MethodGet)
	version := public(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, Version) })
	r.Handle("/version", version).Methods(http.MethodGet)
	r.Handle("/version/", version).Methods(http.MethodGet)
	// The service-account issuer's discovery documents, public as the
	// issue of tokens to others needs them to be.
	r.Handle("/.well-known/openid-configuration", public(s.serveOpenIDConfiguration)).Methods(http.MethodGet)
	r.Handle("/openid/v1/jwks", public(s.serveJWKS)).Methods(http.MethodGet)

	authed := r.NewRoute().Subrouter()
	authed.Use(s.measure, s.authenticate)
	path := s.authorizePath
	authed.PathPrefix("/openapi/").Handler(path(openapiHandler.ServeHTTP)).Methods(http.MethodGet)
	// Discovery answers with or without a trailing slash, as
	// kube-apiserver's does (`kubectl proxy` clients ask for /api/).
	for _, slash := range []string{"", "/"} {
		authed.Handle("/api"+slash, path(s.serveAPIVersions)).Methods(http.MethodGet)
		authed.Handle("/apis"+slash, path(s.serveAPIGroupList)).Methods(http.MethodGet)
		authed.Handle("/api/{version}"+slash, path(s.serveResourceList)).Methods(http.MethodGet)
		authed.Handle("/apis/{group}"+slash, path(s.serveAPIGroup)).Methods(http.MethodGet)
		authed.Handle("/apis/{group}/{version}"+slash, path(s.serveResourceList)).Methods(http.MethodGet)
	}
	authed.Handle("/metrics", path(s.servePrometheus)).Methods(http.MethodGet)
	authed.PathPrefix("/debug/pprof/").Handler(path(s.profiling))
	authed.PathPrefix("/api/").HandlerFunc(s.serveResource)
	authed.PathPrefix("/apis/").HandlerFunc(s.serveResource)
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		writeError(w, req, notFoundPath(req))
	})
	return r
}

// health answers /healthz, /livez and /readyz as kube-apiserver does:
// "ok", or with ?verbose one line per check, and 500 naming the failed
// checks. /readyz and /healthz include etcd (a quick read); /livez does
// not, so that an etcd outage makes the server unready, not restarted.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	endpoint := strings.TrimPrefix(r.URL.Path, "/")
	type check struct {
		name string
		err  error
	}
	checks := []check{{name: "ping"}}
	select {
	case <-s.ready:
	default:
		checks = append(checks, check{"apiserver-started", errors.New("not started")})
	}
	if endpoint != "livez" {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		// Linearizable, as kube-apiserver's check: it needs a quorum.
		_, err := s.cfg.Etcd.Get(ctx, "health-check", clientv3.WithCountOnly())
		cancel()
		checks = append(checks, check{"etcd", err})
	}
	var out strings.Builder
	failed := false
	for _, c := range checks {
		if c.err != nil {
			failed = true
			fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", c.name)
			slog.Warn("health check failed", "endpoint", endpoint, "check", c.name, "err", c.err)
		} else {
			fmt.Fprintf(&out, "[+]%s ok\n", c.name)
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if failed {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "%s%s check failed\n", out.String(), endpoint)
		return
	}
	if _, verbose := r.URL.Query()["verbose"]; verbose {
		fmt.Fprintf(w, "%s%s check passed\n", out.String(), endpoint)
		return
	}
	_, _ = w.Write([]byte("ok"))
}

func (s *Server) serveAPIVersions(w http.ResponseWriter, r *http.Request) {
	if aggregatedDiscoveryRequested(r) {
		s.serveAggregatedDiscovery(w, r, true)
		return
	}
	writeJSON(w, 200, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}}})
}

func (s *Server) apiGroup(g *groupVersions) metav1.APIGroup {
	out := metav1.APIGroup{Name: g.group}
	for _, v := range g.versions {
		out.Versions = append(out.Versions, metav1.GroupVersionForDiscovery{GroupVersion: g.group + "/" + v, Version: v})
	}
	out.PreferredVersion = out.Versions[0]
	return out
}

func (s *Server) serveAPIGroupList(w http.ResponseWriter, r *http.Request) {
	if aggregatedDiscoveryRequested(r) {
		s.serveAggregatedDiscovery(w, r, false)
		return
	}
	list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	groups := s.allGroups()
	for i := range groups {
		if groups[i].group != "" {
			list.Groups = append(list.Groups, s.apiGroup(&groups[i]))
		}
	}
	writeJSON(w, 200, list)
}

func (s *Server) serveAPIGroup(w http.ResponseWriter, r *http.Request) {
	name := mux.Vars(r)["group"]
	groups := s.allGroups()
	for i := range groups {
		if groups[i].group == name && name != "" {
			g := s.apiGroup(&groups[i])
			g.Kind, g.APIVersion = "APIGroup", "v1"
			writeJSON(w, 200, &g)
			return
		}
	}
	writeError(w, r, notFoundPath(r))
}

// serveResourceList answers /api/v1 and /apis/G/V with the resources,
// their verbs, short names and categories (what kubectl's RESTMapper and
// `kubectl get all` use).
func (s *Server) serveResourceList(w http.ResponseWriter, r *http.Request) {
	vars := mux.Vars(r)
	group, version := vars["group"], vars["version"]
	if strings.HasPrefix(r.URL.Path, "/api/") {
		group = ""
	}
	groups := s.allGroups()
	for i := range groups {
		g := &groups[i]
		res, ok := g.resources[version]
		if g.group != group || !ok {
			continue
		}
		gv := version
		if group != "" {
			gv = group + "/" + version
		}
		list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
		for _, rs := range res {
			list.APIResources = append(list.APIResources, resourceListEntry(rs))
			for _, sub := range rs.Subresources {
				list.APIResources = append(list.APIResources, subresourceDiscovery(rs, sub))
			}
		}
		sort.SliceStable(list.APIResources, func(a, b int) bool { return list.APIResources[a].Name < list.APIResources[b].Name })
		writeJSON(w, 200, list)
		return
	}
	writeError(w, r, notFoundPath(r))
}

// resourceListEntry is rs in its group version's resource list: its
// verbs, short names and categories.
func resourceListEntry(rs *registry.Resource) metav1.APIResource {
	return metav1.APIResource{Name: rs.Resource, SingularName: rs.Singular, Namespaced: rs.Namespaced, Kind: rs.Kind,
		Verbs: rs.ServedVerbs(), ShortNames: rs.ShortNames, Categories: rs.Categories}
}

func subresourceDiscovery(rs *registry.Resource, sub string) metav1.APIResource {
	out := metav1.APIResource{Name: rs.Resource + "/" + sub, Namespaced: rs.Namespaced, Kind: rs.Kind}
	switch sub {
	case "status", "ephemeralcontainers":
		out.Verbs = []string{"get", "patch", "update"}
	case "scale":
		out.Group, out.Version, out.Kind = "autoscaling", "v1", "Scale"
		out.Verbs = []string{"get", "patch", "update"}
	case "binding":
		out.Kind, out.Verbs = "Binding", []string{"create"}
	case "eviction":
		out.Group, out.Version, out.Kind = "policy", "v1", "Eviction"
		out.Verbs = []string{"create"}
	case "log":
		out.Verbs = []string{"get"}
	case "proxy":
		// PodProxyOptions, ServiceProxyOptions.
		out.Kind, out.Verbs = rs.Kind+"ProxyOptions", []string{"create", "delete", "get", "patch", "update"}
	case "exec":
		out.Kind, out.Verbs = "PodExecOptions", []string{"create", "get"}
	case "attach":
		out.Kind, out.Verbs = "PodAttachOptions", []string{"create", "get"}
	case "portforward":
		out.Kind, out.Verbs = "PodPortForwardOptions", []string{"create", "get"}
	case "finalize":
		out.Verbs = []string{"update"}
	case "token":
		out.Group, out.Version, out.Kind = "authentication.k8s.io", "v1", "TokenRequest"
		out.Verbs = []string{"create"}
	}
	return out
}

// slogErrorLog routes net/http's internal errors (TLS handshakes and the
// like) to slog at debug level: they are client problems, not ours.
func slogErrorLog() *log.Logger {
	return slog.NewLogLogger(slog.Default().Handler(), slog.LevelDebug)
}
