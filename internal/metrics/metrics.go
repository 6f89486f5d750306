// Package metrics holds what every minik component shares to expose
// Prometheus metrics: one registry per process (with Go runtime and
// process collectors, as every Kubernetes component has) and an HTTP
// endpoint serving it in the text format.
//
//	component ──collectors──▶ NewRegistry ──▶ Handler (/metrics) ──▶ Serve(--metrics-bind-address)
//
// The components keep their own metric definitions, with upstream's
// names and labels, next to the code they measure.
package metrics

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry returns a registry holding the Go runtime and process
// collectors and cs.
func NewRegistry(cs ...prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(cs...)
	return reg
}

// Handler serves reg in the Prometheus text format (or what the scraper
// negotiates).
func Handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}

// Serve serves reg at /metrics on addr until ctx ends. An empty addr or
// "0" turns the endpoint off, as kube-scheduler's --metrics-bind-address
// does. The listener is returned bound, so a caller asking for port 0
// learns the port.
func Serve(ctx context.Context, addr string, reg *prometheus.Registry) (net.Addr, error) {
	if addr == "" || addr == "0" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", Handler(reg))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Warn("metrics endpoint stopped", "addr", addr, "err", err)
		}
	}()
	slog.Info("serving metrics", "addr", ln.Addr().String())
	return ln.Addr(), nil
}

// Latency buckets of upstream's request duration histograms (seconds).
var (
	// RequestBuckets are apiserver_request_duration_seconds' buckets.
	RequestBuckets = []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60}
	// EtcdBuckets are etcd_request_duration_seconds' buckets.
	EtcdBuckets = []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60}
)
