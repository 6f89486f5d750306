package framework

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The work queues' metrics, with client-go's workqueue names and labels
// (name is the controller's). Package-wide as upstream's; a queue without
// a name is not measured.
//
//	add (new key) ──▶ workqueue_adds_total
//	key into items ──▶ workqueue_depth +1, remember the time
//	Get           ──▶ workqueue_depth −1, workqueue_queue_duration_seconds (time waited)
var (
	queueDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "workqueue_depth", Help: "Current depth of workqueue",
	}, []string{"name"})
	queueAdds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "workqueue_adds_total", Help: "Total number of adds handled by workqueue",
	}, []string{"name"})
	queueDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "workqueue_queue_duration_seconds",
		Help:    "How long in seconds an item stays in workqueue before being requested.",
		Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12),
	}, []string{"name"})
)

// Collectors returns the work queues' metrics, for the process's registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{queueDepth, queueAdds, queueDuration}
}

// queueMetrics are one queue's series, resolved once.
type queueMetrics struct {
	depth    prometheus.Gauge
	adds     prometheus.Counter
	duration prometheus.Observer
	addedAt  map[string]time.Time // keys waiting in items
}

func newQueueMetrics(name string) *queueMetrics {
	if name == "" {
		return nil
	}
	return &queueMetrics{depth: queueDepth.WithLabelValues(name), adds: queueAdds.WithLabelValues(name),
		duration: queueDuration.WithLabelValues(name), addedAt: map[string]time.Time{}}
}

// added counts a key that was not waiting yet.
func (m *queueMetrics) added() {
	if m != nil {
		m.adds.Inc()
	}
}

// queued notes key appended to items.
func (m *queueMetrics) queued(key string, now time.Time) {
	if m == nil {
		return
	}
	m.depth.Inc()
	m.addedAt[key] = now
}

// taken notes key handed to a worker.
func (m *queueMetrics) taken(key string, now time.Time) {
	if m == nil {
		return
	}
	m.depth.Dec()
	if t, ok := m.addedAt[key]; ok {
		m.duration.Observe(now.Sub(t).Seconds())
		delete(m.addedAt, key)
	}
}
