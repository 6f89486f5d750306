package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"minik/internal/pki"
	"minik/internal/profiling"
	"minik/internal/resourcemetrics"
	"minik/kubelet/runtime"
	"minik/proto/cri"
)

// Pods is what the server knows of the pods the kubelet runs.
type Pods interface {
	// Find returns the pod with that namespace and name (a static pod's
	// too), nil when this node does not run it.
	Find(namespace, name string) *corev1.Pod
	// All returns every pod the kubelet runs, for the stats summary.
	All() []*corev1.Pod
	// WaitingReason says why a container of the pod has not started
	// (ContainerCreating when nothing holds it back).
	WaitingReason(uid types.UID, container string) string
}

// Config is what the server needs from the kubelet.
type Config struct {
	NodeName string
	// RootDir is the kubelet's directory, whose file system the node's
	// stats report.
	RootDir string
	// TLSCertFile and TLSKeyFile are the serving certificate; ClientCAFile
	// verifies clients (the apiserver).
	TLSCertFile, TLSKeyFile, ClientCAFile string
	Runtime                               runtime.Runtime
	Pods                                  Pods
	Clock                                 clock.Clock
}

// Server is the kubelet's HTTPS endpoint.
type Server struct {
	cfg Config
	// startTime is when the kubelet started; cpuSampler turns the CPU
	// counters /stats/summary reads into rates (summary.go).
	startTime  time.Time
	cpuSampler resourcemetrics.Sampler
}

// New returns the server of a kubelet started now.
func New(cfg Config) *Server {
	return &Server{cfg: cfg, startTime: cfg.Clock.Now(), cpuSampler: resourcemetrics.Sampler{MinWindow: 10 * time.Second}}
}

// Serve runs the kubelet's HTTPS endpoint: /containerLogs for the
// apiserver's pods/log, /exec for its pods/exec (exec.go), /portForward
// for its pods/portforward (portforward.go), /stats/summary for the
// metrics.k8s.io API (summary.go) and the same in Prometheus' format at
// /metrics/resource (resourcemetrics.go), /debug/pprof/ (Go's profiles)
// and /healthz.
// Clients must present a certificate signed by the cluster CA, of the
// apiserver (group system:masters).
func (srv *Server) Serve(ctx context.Context, l net.Listener) error {
	cert, err := tls.LoadX509KeyPair(srv.cfg.TLSCertFile, srv.cfg.TLSKeyFile)
	if err != nil {
		return fmt.Errorf("kubelet serving certificate: %w", err)
	}
	caPEM, err := os.ReadFile(srv.cfg.ClientCAFile)
	if err != nil {
		return fmt.Errorf("kubelet client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("kubelet client CA: no certificate found")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })
	mux.HandleFunc("GET /stats/summary", srv.statsSummary)
	mux.Handle("GET /metrics/resource", resourceMetricsHandler(srv.summary))
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", srv.containerLogs)
	mux.HandleFunc("GET /exec/{namespace}/{pod}/{container}", srv.exec)
	mux.HandleFunc("POST /exec/{namespace}/{pod}/{container}", srv.exec) // SPDY
	mux.HandleFunc("GET /attach/{namespace}/{pod}/{container}", srv.attach)
	mux.HandleFunc("POST /attach/{namespace}/{pod}/{container}", srv.attach)
	mux.HandleFunc("GET /portForward/{namespace}/{pod}", srv.portForward)
	mux.HandleFunc("POST /portForward/{namespace}/{pod}", srv.portForward)
	// As the kubelet's debugging handlers: the kubelet's own profiles.
	mux.HandleFunc("GET /debug/pprof/", profiling.Serve)
	hs := &http.Server{
		Handler: authorizeClient(mux),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// authorizeClient admits only the apiserver (its kubelet-client certificate)
// and admins (system:masters).
func authorizeClient(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		subj := r.TLS.PeerCertificates[0].Subject
		if !slices.Contains(subj.Organization, "system:masters") && subj.CommonName != pki.KubeletClientUser {
			http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=get, resource=nodes, subresource=proxy)", subj.CommonName), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// pathPod finds the pod a /containerLogs, /exec or /portForward path
// names, its container's name and what the runtime holds for it; it
// answers 404 when this node does not run the pod.
func (srv *Server) pathPod(w http.ResponseWriter, r *http.Request) (pod *corev1.Pod, container string, obs *runtime.Pod, ok bool) {
	ns, name := r.PathValue("namespace"), r.PathValue("pod")
	if pod = srv.cfg.Pods.Find(ns, name); pod == nil {
		http.Error(w, fmt.Sprintf("pod %s/%s not found on node %s", ns, name, srv.cfg.NodeName), http.StatusNotFound)
		return nil, "", nil, false
	}
	obs, err := runtime.ObservePod(r.Context(), srv.cfg.Runtime, pod.UID)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return nil, "", nil, false
	}
	return pod, r.PathValue("container"), obs, true
}

func (srv *Server) containerLogs(w http.ResponseWriter, r *http.Request) {
	pod, container, obs, ok := srv.pathPod(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	previous, _ := strconv.ParseBool(q.Get("previous"))
	req, err := logRequest(q, srv.cfg.Clock.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	cur, prev := obs.Latest(container)
	target := cur
	if previous {
		// The previous instance: the one before the current, or the
		// current one when it exited and waits to restart.
		target = prev
		if cur != nil && cur.State == cri.ContainerState_CONTAINER_EXITED && prev == nil {
			target = cur
		}
		if target == nil {
			http.Error(w, fmt.Sprintf("previous terminated container %q in pod %q not found", container, r.PathValue("pod")), http.StatusBadRequest)
			return
		}
	}
	if target == nil {
		http.Error(w, fmt.Sprintf("container %q in pod %q is waiting to start: %s", container, r.PathValue("pod"), srv.cfg.Pods.WaitingReason(pod.UID, container)), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	fw := &flushWriter{w: w}
	if f, ok := w.(http.Flusher); ok {
		fw.f = f
	}
	req.ContainerId = target.Id
	_ = srv.cfg.Runtime.ReadLog(r.Context(), req, fw)
}

// logRequest reads the pod log options of a containerLogs query
// (follow, tailLines, limitBytes, timestamps, sinceSeconds, sinceTime),
// checked as the API checks PodLogOptions. A sinceSeconds is counted
// back from now; with both, the later time wins, as in the kubelet.
func logRequest(q url.Values, now time.Time) (*cri.ReadLogRequest, error) {
	req := &cri.ReadLogRequest{TailLines: -1}
	var err error
	if v := q.Get("follow"); v != "" {
		if req.Follow, err = strconv.ParseBool(v); err != nil {
			return nil, fmt.Errorf("follow: %w", err)
		}
	}
	if v := q.Get("timestamps"); v != "" {
		if req.Timestamps, err = strconv.ParseBool(v); err != nil {
			return nil, fmt.Errorf("timestamps: %w", err)
		}
	}
	positive := func(name string, min int64) (int64, bool, error) {
		v := q.Get(name)
		if v == "" {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < min {
			return 0, false, fmt.Errorf("%s: Invalid value: %q: must be greater than or equal to %d", name, v, min)
		}
		return n, true, nil
	}
	if n, ok, err := positive("tailLines", 0); err != nil {
		return nil, err
	} else if ok {
		req.TailLines = n
	}
	if req.LimitBytes, _, err = positive("limitBytes", 1); err != nil {
		return nil, err
	}
	seconds, hasSeconds, err := positive("sinceSeconds", 1)
	if err != nil {
		return nil, err
	}
	sinceTime := q.Get("sinceTime")
	if hasSeconds && sinceTime != "" {
		return nil, errors.New("at most one of `sinceTime` or `sinceSeconds` may be specified")
	}
	if hasSeconds {
		req.SinceTime = now.Add(-time.Duration(seconds) * time.Second).UnixNano()
	}
	if sinceTime != "" {
		t, err := time.Parse(time.RFC3339, sinceTime)
		if err != nil {
			return nil, fmt.Errorf("sinceTime: %w", err)
		}
		req.SinceTime = t.UnixNano()
	}
	return req, nil
}

type flushWriter struct {
	w http.ResponseWriter
	f http.Flusher
}

func (f *flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if f.f != nil {
		f.f.Flush()
	}
	return n, err
}
