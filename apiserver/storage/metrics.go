package storage

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"minik/internal/metrics"
)

// etcdRequestDuration is kube-apiserver's etcd_request_duration_seconds:
// the latency of each storage operation, by operation and resource
// ("pods", "deployments.apps"). Package-wide, as upstream's: every Store
// of the process adds to it.
var etcdRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "etcd_request_duration_seconds",
	Help:    "Etcd request latency in seconds for each operation and object type.",
	Buckets: metrics.EtcdBuckets,
}, []string{"operation", "type"})

// Collectors returns the storage layer's metrics, for the apiserver's registry.
func Collectors() []prometheus.Collector { return []prometheus.Collector{etcdRequestDuration} }

// The storage operations measured, indexes of Store.durations.
const (
	opGet = iota
	opCreate
	opUpdate
	opDelete
	opList
	numOps
)

var opNames = [numOps]string{"get", "create", "update", "delete", "list"}

// durationObservers resolves the labels once per Store, so an operation
// costs one Observe.
func durationObservers(typ string) (o [numOps]prometheus.Observer) {
	for i, name := range opNames {
		o[i] = etcdRequestDuration.WithLabelValues(name, typ)
	}
	return o
}

// observe records an operation started at start; deferred by each one.
func (s *Store) observe(op int, start time.Time) {
	s.durations[op].Observe(time.Since(start).Seconds())
}
