// Package metrics holds what every minik component shares to expose
// Prometheus metrics: one registry per process (with Go runtime and
// process collectors, as every Kubernetes component has) and an HTTP
// endpoint serving it in the text format.
//
//	component ──collectors──▶ NewRegistry ──▶ Handler (/metrics) ──▶ Serve(--metrics-bind-address)
//	embedded etcd ──default registry──▶ EmbeddedEtcd ──┘ (gathered with it, in minik up)
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
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// NewRegistry returns a registry holding the Go runtime and process
// collectors and cs.
func NewRegistry(cs ...prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(cs...)
	return reg
}

// Handler serves g (a registry, or several gathered together) in the
// Prometheus text format (or what the scraper negotiates).
func Handler(g prometheus.Gatherer) http.Handler {
	opts := promhttp.HandlerOpts{}
	if reg, ok := g.(*prometheus.Registry); ok {
		opts.Registry = reg
	}
	return promhttp.HandlerFor(g, opts)
}

// EmbeddedEtcd gathers the metrics of an etcd member running in this
// process (etcd_server_*, etcd_disk_*, etcd_mvcc_*, ...: etcd registers
// them in the default registry), as a standalone member serves them at
// its own /metrics. The process's Go and process metrics are left to the
// component's registry, which has them already.
func EmbeddedEtcd() prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := prometheus.DefaultGatherer.Gather()
		kept := mfs[:0]
		for _, mf := range mfs {
			if name := mf.GetName(); strings.HasPrefix(name, "etcd_") && !apiserverOwned[name] {
				kept = append(kept, mf)
			}
		}
		return kept, err
	})
}

// apiserverOwned are metric names the apiserver defines (as client of
// etcd) that the embedded etcd must not be taken to define too.
var apiserverOwned = map[string]bool{"etcd_request_duration_seconds": true}

// Serve serves g at /metrics on addr until ctx ends. An empty addr or
// "0" turns the endpoint off, as kube-scheduler's --metrics-bind-address
// does. The listener is returned bound, so a caller asking for port 0
// learns the port.
func Serve(ctx context.Context, addr string, g prometheus.Gatherer) (net.Addr, error) {
	if addr == "" || addr == "0" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", Handler(g))
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
