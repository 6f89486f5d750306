package main

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"minik/internal/metrics"
)

// metricsFlag adds --metrics-bind-address, off unless set, as the
// Kubernetes components have it.
func metricsFlag(f *pflag.FlagSet, addr *string) {
	f.StringVar(addr, "metrics-bind-address", "", "serve Prometheus metrics at http://ADDRESS/metrics (e.g. 127.0.0.1:10251; empty or 0: off)")
}

// serveMetrics serves a process registry of the Go and process
// collectors and cs at addr (nothing if addr is empty).
func serveMetrics(ctx context.Context, addr string, cs ...prometheus.Collector) error {
	if addr == "" || addr == "0" {
		return nil
	}
	_, err := metrics.Serve(ctx, addr, metrics.NewRegistry(cs...))
	return err
}
