// Package profiling serves Go's pprof under /debug/pprof/, for the
// apiserver (as kube-apiserver's --profiling) and the kubelet (as the
// kubelet's debugging handlers). Each caller authorizes the request first.
package profiling

import (
	"net/http"
	"net/http/pprof"
	"strings"
)

// Serve answers /debug/pprof/ (the index and the named profiles, e.g.
// heap, goroutine), /debug/pprof/profile (CPU, ?seconds=N),
// /debug/pprof/trace, /debug/pprof/symbol and /debug/pprof/cmdline.
func Serve(w http.ResponseWriter, r *http.Request) {
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
