package apiserver

import (
	"net/http"

	"minik/internal/profiling"
)

// profiling serves Go's pprof under /debug/pprof/ on the secure port, as
// Kubernetes' apiserver does with --profiling: for those allowed the path
// /debug/pprof/* (system:masters through cluster-admin). `go tool pprof` reads it with the admin certificate, e.g.
//
//	curl --cacert .minik/pki/ca.crt --cert .minik/pki/admin.crt --key .minik/pki/admin.key \
//	     https://127.0.0.1:6443/debug/pprof/profile?seconds=10 > cpu.out
func (s *Server) profiling(w http.ResponseWriter, r *http.Request) {
	profiling.Serve(w, r)
}
