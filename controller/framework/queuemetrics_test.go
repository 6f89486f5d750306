package framework

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"minik/internal/metrics"
	"minik/internal/metrics/metricstest"
)

func TestQueueMetricsMoveWithAddsAndGets(t *testing.T) {
	srv := httptest.NewServer(metrics.Handler(metrics.NewRegistry(Collectors()...)))
	defer srv.Close()
	clk := clocktesting.NewFakeClock(time.Now())
	q := NewQueue(QueueConfig{Name: "test-queue", Clock: clk})
	name := map[string]string{"name": "test-queue"}

	_, before := metricstest.Scrape(t, http.DefaultClient, srv.URL)
	q.Add("a")
	q.Add("a") // deduplicated: not an add
	q.Add("b")
	_, queued := metricstest.Scrape(t, http.DefaultClient, srv.URL)
	if got := queued.Value("workqueue_adds_total", name) - before.Value("workqueue_adds_total", name); got != 2 {
		t.Errorf("adds moved by %v, want 2", got)
	}
	if got := queued.Value("workqueue_depth", name); got != 2 {
		t.Errorf("depth %v, want 2", got)
	}
	clk.Step(3 * time.Second)
	key, _ := q.Get()
	q.Done(key)
	_, after := metricstest.Scrape(t, http.DefaultClient, srv.URL)
	if got := after.Value("workqueue_depth", name); got != 1 {
		t.Errorf("depth after a get %v, want 1", got)
	}
	fam := after["workqueue_queue_duration_seconds"]
	if fam == nil || after.Value("workqueue_queue_duration_seconds", name) != 1 {
		t.Fatalf("queue duration not observed once: %v", fam)
	}
	for _, m := range fam.GetMetric() {
		if h := m.GetHistogram(); h.GetSampleSum() < 3 {
			t.Errorf("waited %vs, want 3s", h.GetSampleSum())
		}
	}
}
