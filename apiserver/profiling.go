package apiserver

import (
	"fmt"
	"net/http"
	"net/http/pprof"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// profiling serves Go's pprof under /debug/pprof/ on the secure port, as
// Kubernetes' apiserver does with --profiling: only system:masters may use
// it. `go tool pprof` reads it with the admin certificate, e.g.
//
//	curl --cacert .minik/pki/ca.crt --cert .minik/pki/admin.crt --key .minik/pki/admin.key \
//	     https://127.0.0.1:6443/debug/pprof/profile?seconds=10 > cpu.out
func (s *Server) profiling(w http.ResponseWriter, r *http.Request) {
	if u := UserFrom(r.Context()); !u.in("system:masters") {
		writeError(w, r, statusError(http.StatusForbidden, metav1.StatusReasonForbidden,
			fmt.Sprintf("forbidden: User %q cannot get path %q", u.Name, r.URL.Path)))
		return
	}
	switch strings.TrimPrefix(r.URL.Path, "/debug/pprof/") {
	case "profile":
		pprof.Profile(w, r)
	case "trace":
		pprof.Trace(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "cmdline":
		pprof.Cmdline(w, r)
	default:
		pprof.Index(w, r)
	}
}
