package scheduler

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik/internal/metrics"
	"minik/internal/metrics/metricstest"
	"minik/scheduler/internal/st"
)

func TestMetricsMoveWhenPodsAreScheduled(t *testing.T) {
	srv := httptest.NewServer(metrics.Handler(metrics.NewRegistry(Collectors()...)))
	defer srv.Close()
	scrape := func() metricstest.Families {
		_, f := metricstest.Scrape(t, http.DefaultClient, srv.URL)
		return f
	}
	nodes := []*corev1.Node{st.MakeNode().Name("n").Capacity("cpu", "1", "memory", "1Gi", "pods", "110").Obj()}
	s := newTestScheduler(nodes, nil)
	defer pending.add(s.queue)()
	before := scrape()

	start := time.Now()
	if _, err := s.try(st.MakePod().Name("fits").Req("cpu", "100m").Obj()); err != nil {
		t.Fatal(err)
	}
	s.observeAttempt(resultScheduled, start)
	if _, err := s.try(st.MakePod().Name("too-big").Req("cpu", "2").Obj()); err == nil {
		t.Fatal("a pod asking for 2 CPUs fit a node of 1")
	}
	s.queue.Add(st.MakePod().Name("waiting").Obj())
	after := scrape()

	moved := []struct {
		name   string
		labels map[string]string
	}{
		{"scheduler_schedule_attempts_total", map[string]string{"result": "scheduled"}},
		{"scheduler_scheduling_attempt_duration_seconds", map[string]string{"result": "scheduled"}},
		{"scheduler_framework_extension_point_duration_seconds", map[string]string{"extension_point": "PreFilter", "status": "Success"}},
		{"scheduler_framework_extension_point_duration_seconds", map[string]string{"extension_point": "Filter", "status": "Success"}},
		{"scheduler_framework_extension_point_duration_seconds", map[string]string{"extension_point": "Filter", "status": "Unschedulable"}},
	}
	for _, m := range moved {
		if b, a := before.Value(m.name, m.labels), after.Value(m.name, m.labels); a <= b {
			t.Errorf("%s%v did not move: %v before, %v after", m.name, m.labels, b, a)
		}
	}
	if got := after.Value("scheduler_pending_pods", map[string]string{"queue": "active"}); got != 1 {
		t.Errorf("scheduler_pending_pods{queue=active} = %v, want 1", got)
	}
}
