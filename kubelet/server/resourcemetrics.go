package server

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"minik/internal/resourcemetrics"
)

// The kubelet's /metrics/resource series, with upstream's names and
// labels; each sample carries the time of its reading.
var (
	nodeCPUDesc = prometheus.NewDesc("node_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the node in core-seconds", nil, nil)
	nodeMemoryDesc = prometheus.NewDesc("node_memory_working_set_bytes",
		"Current working set of the node in bytes", nil, nil)
	podCPUDesc = prometheus.NewDesc("pod_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the pod in core-seconds", []string{"pod", "namespace"}, nil)
	podMemoryDesc = prometheus.NewDesc("pod_memory_working_set_bytes",
		"Current working set of the pod in bytes", []string{"pod", "namespace"}, nil)
	containerCPUDesc = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the container in core-seconds", []string{"container", "pod", "namespace"}, nil)
	containerMemoryDesc = prometheus.NewDesc("container_memory_working_set_bytes",
		"Current working set of the container in bytes", []string{"container", "pod", "namespace"}, nil)
	containerStartDesc = prometheus.NewDesc("container_start_time_seconds",
		"Start time of the container since unix epoch in seconds", []string{"container", "pod", "namespace"}, nil)
	scrapeErrorDesc = prometheus.NewDesc("scrape_error",
		"1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
)

// summaryCollector exposes one stats summary per scrape as Prometheus
// series (the kubelet's resource metrics endpoint).
type summaryCollector struct {
	read func() (*resourcemetrics.Summary, error)
}

func (c summaryCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodeCPUDesc, nodeMemoryDesc, podCPUDesc, podMemoryDesc,
		containerCPUDesc, containerMemoryDesc, containerStartDesc, scrapeErrorDesc} {
		ch <- d
	}
}

func (c summaryCollector) Collect(ch chan<- prometheus.Metric) {
	s, err := c.read()
	scrapeErr := 0.0
	if err != nil {
		scrapeErr = 1
	}
	ch <- prometheus.MustNewConstMetric(scrapeErrorDesc, prometheus.GaugeValue, scrapeErr)
	if s == nil {
		return
	}
	emit := func(d *prometheus.Desc, t prometheus.ValueType, at time.Time, v float64, labels ...string) {
		ch <- prometheus.NewMetricWithTimestamp(at, prometheus.MustNewConstMetric(d, t, v, labels...))
	}
	cpu := func(d *prometheus.Desc, c *resourcemetrics.CPUStats, labels ...string) {
		if c != nil && c.UsageCoreNanoSeconds != nil {
			emit(d, prometheus.CounterValue, c.Time.Time, float64(*c.UsageCoreNanoSeconds)/1e9, labels...)
		}
	}
	memory := func(d *prometheus.Desc, m *resourcemetrics.MemoryStats, labels ...string) {
		if m != nil && m.WorkingSetBytes != nil {
			emit(d, prometheus.GaugeValue, m.Time.Time, float64(*m.WorkingSetBytes), labels...)
		}
	}
	cpu(nodeCPUDesc, s.Node.CPU)
	memory(nodeMemoryDesc, s.Node.Memory)
	for _, p := range s.Pods {
		cpu(podCPUDesc, p.CPU, p.PodRef.Name, p.PodRef.Namespace)
		memory(podMemoryDesc, p.Memory, p.PodRef.Name, p.PodRef.Namespace)
		for _, ct := range p.Containers {
			cpu(containerCPUDesc, ct.CPU, ct.Name, p.PodRef.Name, p.PodRef.Namespace)
			memory(containerMemoryDesc, ct.Memory, ct.Name, p.PodRef.Name, p.PodRef.Namespace)
			ch <- prometheus.MustNewConstMetric(containerStartDesc, prometheus.GaugeValue,
				float64(ct.StartTime.UnixNano())/1e9, ct.Name, p.PodRef.Name, p.PodRef.Namespace)
		}
	}
}

// resourceMetricsHandler serves /metrics/resource: the stats summary in
// the Prometheus text format, as the kubelet's resource metrics endpoint.
func resourceMetricsHandler(read func(context.Context) (*resourcemetrics.Summary, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(summaryCollector{read: func() (*resourcemetrics.Summary, error) { return read(r.Context()) }})
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	})
}
