package metrics_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"minik/internal/metrics"
	"minik/internal/metrics/metricstest"
)

func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if addr, err := metrics.Serve(ctx, "", metrics.NewRegistry()); addr != nil || err != nil {
		t.Fatalf("an empty address serves %v, %v; want off", addr, err)
	}
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "minik_test_total", Help: "test"})
	addr, err := metrics.Serve(ctx, "127.0.0.1:0", metrics.NewRegistry(c))
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + addr.String() + "/metrics"
	_, before := metricstest.Scrape(t, http.DefaultClient, url)
	c.Inc()
	code, after := metricstest.Scrape(t, http.DefaultClient, url)
	if code != http.StatusOK || after.Value("minik_test_total", nil) != before.Value("minik_test_total", nil)+1 {
		t.Errorf("scrape %d: the counter went from %v to %v", code, before.Value("minik_test_total", nil), after.Value("minik_test_total", nil))
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if after[name] == nil {
			t.Errorf("no %s", name)
		}
	}
}

// TestEmbeddedEtcdGathersOnlyEtcdsOwnMetrics: an embedded etcd's metrics
// (in the default registry) are served beside a component's registry,
// without the default registry's Go and process metrics (the registry has
// them) and without the name the apiserver owns.
func TestEmbeddedEtcdGathersOnlyEtcdsOwnMetrics(t *testing.T) {
	proposals := prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_server_proposals_committed_total", Help: "test"})
	owned := prometheus.NewCounter(prometheus.CounterOpts{Name: "etcd_request_duration_seconds", Help: "test"})
	prometheus.MustRegister(proposals, owned)
	defer prometheus.Unregister(proposals)
	defer prometheus.Unregister(owned)
	proposals.Add(3)

	mfs, err := prometheus.Gatherers{metrics.NewRegistry(), metrics.EmbeddedEtcd()}.Gather()
	if err != nil {
		t.Fatalf("gathering with the component's registry: %v", err)
	}
	got := map[string]int{}
	for _, mf := range mfs {
		got[mf.GetName()]++
	}
	if got["etcd_server_proposals_committed_total"] != 1 {
		t.Errorf("etcd's own metric is missing: %v", got)
	}
	if got["etcd_request_duration_seconds"] != 0 {
		t.Error("the apiserver's etcd_request_duration_seconds was taken from the default registry")
	}
	if got["go_goroutines"] != 1 {
		t.Errorf("go_goroutines gathered %d times, want once (from the registry)", got["go_goroutines"])
	}
}
