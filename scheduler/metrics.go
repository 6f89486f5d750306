package scheduler

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"minik/scheduler/framework"
	"minik/scheduler/queue"
)

// Metrics of the scheduler, with kube-scheduler's names and labels. They
// are package-wide, as upstream's, so a scheduler re-created after a
// leader election keeps adding to them; the process serves them from
// the registry Collectors is registered in.
//
//	scheduleOne ──▶ scheduler_schedule_attempts_total{result,profile}
//	            ──▶ scheduler_scheduling_attempt_duration_seconds{result,profile}
//	PreFilter, Filter, PreScore, Score, Bind ──▶ scheduler_framework_extension_point_duration_seconds
//	PostFilter ──▶ scheduler_preemption_attempts_total,
//	               scheduler_preemption_victims (per preemption decided)
//	queues (read when scraped) ──▶ scheduler_pending_pods{queue}
var (
	scheduleAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scheduler_schedule_attempts_total",
		Help: "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem.",
	}, []string{"result", "profile"})
	attemptDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "scheduler_scheduling_attempt_duration_seconds",
		Help:    "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"result", "profile"})
	extensionPointDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "scheduler_framework_extension_point_duration_seconds",
		Help:    "Latency for running all plugins of a specific extension point.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 12),
	}, []string{"extension_point", "status", "profile"})
	preemptionAttempts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "scheduler_preemption_attempts_total",
		Help: "Total preemption attempts in the cluster till now",
	})
	preemptionVictims = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "scheduler_preemption_victims",
		Help:    "Number of selected preemption victims",
		Buckets: prometheus.ExponentialBuckets(1, 2, 7),
	})
	pending = &pendingCollector{queues: map[*queue.Queue]struct{}{}, desc: prometheus.NewDesc("scheduler_pending_pods",
		"Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods.",
		[]string{"queue"}, nil)}
)

// Collectors returns the scheduler's metrics, for the process's registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{scheduleAttempts, attemptDuration, extensionPointDuration, preemptionAttempts, preemptionVictims, pending}
}

// The results of a scheduling attempt.
const (
	resultScheduled     = "scheduled"
	resultUnschedulable = "unschedulable"
	resultError         = "error"
)

// observeAttempt records one scheduling attempt begun at start.
func (s *Scheduler) observeAttempt(result string, start time.Time) {
	scheduleAttempts.WithLabelValues(result, s.cfg.SchedulerName).Inc()
	attemptDuration.WithLabelValues(result, s.cfg.SchedulerName).Observe(time.Since(start).Seconds())
}

// observePoint records one extension point's run begun at start.
func (s *Scheduler) observePoint(point string, st *framework.Status, start time.Time) {
	extensionPointDuration.WithLabelValues(point, st.Code().String(), s.cfg.SchedulerName).Observe(time.Since(start).Seconds())
}

// pendingCollector sums the lengths of the running schedulers' queues
// when scraped: nothing to update while pods come and go.
type pendingCollector struct {
	desc   *prometheus.Desc
	mu     sync.Mutex
	queues map[*queue.Queue]struct{}
}

func (c *pendingCollector) add(q *queue.Queue) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queues[q] = struct{}{}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.queues, q)
	}
}

func (c *pendingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *pendingCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	var a, b, u int
	for q := range c.queues {
		qa, qb, qu := q.Lengths()
		a, b, u = a+qa, b+qb, u+qu
	}
	c.mu.Unlock()
	for _, v := range []struct {
		queue string
		n     int
	}{{"active", a}, {"backoff", b}, {"unschedulable", u}} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(v.n), v.queue)
	}
}
