package kubelet

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

	"minik/internal/pki"

	"minik/proto/cri"
)

// serve runs the kubelet's HTTPS endpoint: /containerLogs for the
// apiserver's pods/log, /exec for its pods/exec (exec.go), /portForward
// for its pods/portforward (portforward.go), /stats/summary for the
// metrics.k8s.io API (summary.go) and the same in Prometheus' format at
// /metrics/resource (resourcemetrics.go), and /healthz.
// Clients must present a certificate signed by the cluster CA, of the
// apiserver (group system:masters).
func (k *Kubelet) serve(ctx context.Context, l net.Listener) error {
	cert, err := tls.LoadX509KeyPair(k.cfg.TLSCertFile, k.cfg.TLSKeyFile)
	if err != nil {
		return fmt.Errorf("kubelet serving certificate: %w", err)
	}
	caPEM, err := os.ReadFile(k.cfg.ClientCAFile)
	if err != nil {
		return fmt.Errorf("kubelet client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("kubelet client CA: no certificate found")
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })
	mux.HandleFunc("GET /stats/summary", k.statsSummary)
	mux.Handle("GET /metrics/resource", resourceMetricsHandler(k.summary))
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", k.containerLogs)
	mux.HandleFunc("GET /exec/{namespace}/{pod}/{container}", k.exec)
	mux.HandleFunc("POST /exec/{namespace}/{pod}/{container}", k.exec) // SPDY
	mux.HandleFunc("GET /attach/{namespace}/{pod}/{container}", k.attach)
	mux.HandleFunc("POST /attach/{namespace}/{pod}/{container}", k.attach)
	mux.HandleFunc("GET /portForward/{namespace}/{pod}", k.portForward)
	mux.HandleFunc("POST /portForward/{namespace}/{pod}", k.portForward)
	srv := &http.Server{
		Handler: authorizeClient(mux),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
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

// findPod finds a pod this kubelet runs by namespace and name (static pods
// by their mirror's name too).
func (k *Kubelet) findPod(ns, name string) *podWorker {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, w := range k.workers {
		w.mu.Lock()
		p := w.pod
		w.mu.Unlock()
		if p != nil && p.Namespace == ns && p.Name == name {
			return w
		}
	}
	return nil
}

// pathPod finds the pod a /containerLogs or /exec path names, and its
// container's name; it answers 404 when this node does not run the pod.
func (k *Kubelet) pathPod(w http.ResponseWriter, r *http.Request) (pw *podWorker, container string, ok bool) {
	ns, name := r.PathValue("namespace"), r.PathValue("pod")
	if pw = k.findPod(ns, name); pw == nil {
		http.Error(w, fmt.Sprintf("pod %s/%s not found on node %s", ns, name, k.cfg.NodeName), http.StatusNotFound)
		return nil, "", false
	}
	return pw, r.PathValue("container"), true
}

func (k *Kubelet) containerLogs(w http.ResponseWriter, r *http.Request) {
	pw, container, ok := k.pathPod(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	previous, _ := strconv.ParseBool(q.Get("previous"))
	req, err := logRequest(q, k.cfg.Clock.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	obs, err := k.observe(r.Context(), pw.uid)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
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
		http.Error(w, fmt.Sprintf("container %q in pod %q is waiting to start: %s", container, r.PathValue("pod"), waitingReason(pw, container)), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	fw := &flushWriter{w: w}
	if f, ok := w.(http.Flusher); ok {
		fw.f = f
	}
	req.ContainerId = target.Id
	_ = k.rt.ReadLog(r.Context(), req, fw)
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

func waitingReason(pw *podWorker, container string) string {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if w, ok := pw.state.waiting[container]; ok {
		return w.Reason
	}
	return "ContainerCreating"
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
