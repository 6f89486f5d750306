package server

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"minik/internal/resourcemetrics"
)

func TestResourceMetricsEndpoint(t *testing.T) {
	at := metav1.NewTime(time.Unix(1700000000, 0))
	summary := &resourcemetrics.Summary{
		Node: resourcemetrics.NodeStats{NodeName: "n1",
			CPU:    &resourcemetrics.CPUStats{Time: at, UsageCoreNanoSeconds: ptr.To(uint64(12_500_000_000))},
			Memory: &resourcemetrics.MemoryStats{Time: at, WorkingSetBytes: ptr.To(uint64(1 << 30))}},
		Pods: []resourcemetrics.PodStats{{PodRef: resourcemetrics.PodReference{Name: "web", Namespace: "default", UID: "u"},
			CPU:    &resourcemetrics.CPUStats{Time: at, UsageCoreNanoSeconds: ptr.To(uint64(2_000_000_000))},
			Memory: &resourcemetrics.MemoryStats{Time: at, WorkingSetBytes: ptr.To(uint64(4 << 20))},
			Containers: []resourcemetrics.ContainerStats{{Name: "app", StartTime: at,
				CPU:    &resourcemetrics.CPUStats{Time: at, UsageCoreNanoSeconds: ptr.To(uint64(2_000_000_000))},
				Memory: &resourcemetrics.MemoryStats{Time: at, WorkingSetBytes: ptr.To(uint64(4 << 20))}}}}},
	}
	scrape := func(t *testing.T, s *resourcemetrics.Summary, err error) map[string]float64 {
		t.Helper()
		h := resourceMetricsHandler(func(context.Context) (*resourcemetrics.Summary, error) { return s, err })
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics/resource", nil))
		parser := expfmt.NewTextParser(model.LegacyValidation)
		families, perr := parser.TextToMetricFamilies(rec.Body)
		if perr != nil {
			t.Fatalf("parsing %q: %v", rec.Body.String(), perr)
		}
		out := map[string]float64{}
		for name, f := range families {
			for _, m := range f.Metric {
				key := name
				for _, l := range m.Label {
					key += "," + l.GetName() + "=" + l.GetValue()
				}
				switch {
				case m.Counter != nil:
					out[key] = m.Counter.GetValue()
				case m.Gauge != nil:
					out[key] = m.Gauge.GetValue()
				}
				if m.TimestampMs != nil && *m.TimestampMs != at.UnixMilli() {
					t.Errorf("%s has timestamp %d, want the reading's %d", key, *m.TimestampMs, at.UnixMilli())
				}
			}
		}
		return out
	}
	t.Run("the summary's usage appears under upstream's names, cpu in core-seconds", func(t *testing.T) {
		got := scrape(t, summary, nil)
		want := map[string]float64{
			"node_cpu_usage_seconds_total":                                               12.5,
			"node_memory_working_set_bytes":                                              1 << 30,
			"pod_cpu_usage_seconds_total,namespace=default,pod=web":                      2,
			"pod_memory_working_set_bytes,namespace=default,pod=web":                     4 << 20,
			"container_cpu_usage_seconds_total,container=app,namespace=default,pod=web":  2,
			"container_memory_working_set_bytes,container=app,namespace=default,pod=web": 4 << 20,
			"container_start_time_seconds,container=app,namespace=default,pod=web":       1700000000,
			"scrape_error": 0,
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s = %v, want %v", k, got[k], v)
			}
		}
		if len(got) != len(want) {
			t.Errorf("series %v, want exactly %d", got, len(want))
		}
	})
	t.Run("a failed reading is scrape_error 1", func(t *testing.T) {
		if got := scrape(t, nil, errors.New("runtime down")); got["scrape_error"] != 1 || len(got) != 1 {
			t.Errorf("series %v, want only scrape_error 1", got)
		}
	})
}
