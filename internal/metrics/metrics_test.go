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
