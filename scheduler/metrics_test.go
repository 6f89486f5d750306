package scheduler

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik/internal/metrics"
	"minik/internal/metrics/metricstest"
	"minik/scheduler/framework"
	"minik/scheduler/internal/st"
)

// serveMetrics serves the scheduler's metrics for the test and returns
// a scrape of them.
func serveMetrics(t *testing.T) func() metricstest.Families {
	srv := httptest.NewServer(metrics.Handler(metrics.NewRegistry(Collectors()...)))
	t.Cleanup(srv.Close)
	return func() metricstest.Families {
		_, f := metricstest.Scrape(t, http.DefaultClient, srv.URL)
		return f
	}
}

func TestMetricsMoveWhenPodsAreScheduled(t *testing.T) {
	scrape := serveMetrics(t)
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

// A preemption counts an attempt and observes its victims, as
// kube-scheduler's scheduler_preemption_* do.
func TestPreemptionMetrics(t *testing.T) {
	scrape := serveMetrics(t)
	node := st.MakeNode().Name("n").Capacity("cpu", "2", "memory", "1Gi", "pods", "110").Obj()
	s := newTestScheduler([]*corev1.Node{node}, []*corev1.Pod{
		st.MakePod().Name("low-1").Node("n").Priority(1).Req("cpu", "1").Obj(),
		st.MakePod().Name("low-2").Node("n").Priority(1).Req("cpu", "1").Obj(),
	})
	s.log = slog.New(slog.DiscardHandler)
	before := scrape()
	for _, pod := range []*corev1.Pod{
		st.MakePod().Name("urgent").Priority(1000).Req("cpu", "2").Obj(), // both lows go
		st.MakePod().Name("polite").Priority(1000).PreemptNever().Req("cpu", "1").Obj(),
	} {
		state := framework.NewCycleState()
		s.cache.UpdateSnapshot(s.snapshot)
		_, err := s.schedulePod(t.Context(), state, pod)
		var fe *framework.FitError
		if !errors.As(err, &fe) {
			t.Fatalf("%s: got %v, want a FitError", pod.Name, err)
		}
		s.preempt(state, pod, fe)
	}
	after := scrape()
	if d := after.Value("scheduler_preemption_attempts_total", nil) - before.Value("scheduler_preemption_attempts_total", nil); d != 2 {
		t.Errorf("scheduler_preemption_attempts_total moved by %v, want 2", d)
	}
	if d := after.Value("scheduler_preemption_victims", nil) - before.Value("scheduler_preemption_victims", nil); d != 1 {
		t.Errorf("scheduler_preemption_victims observed %v preemptions, want 1", d)
	}
	sum := func(f metricstest.Families) float64 {
		if fam := f["scheduler_preemption_victims"]; fam != nil && len(fam.GetMetric()) == 1 {
			return fam.GetMetric()[0].GetHistogram().GetSampleSum()
		}
		return 0
	}
	if d := sum(after) - sum(before); d != 2 {
		t.Errorf("scheduler_preemption_victims summed %v victims, want 2", d)
	}
}
