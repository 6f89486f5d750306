// Package metricstest scrapes a /metrics endpoint in tests with the
// Prometheus text parser and reads samples out of it.
package metricstest

import (
	"io"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families are the parsed metric families, by name.
type Families map[string]*dto.MetricFamily

// Scrape gets url (the /metrics address) with hc and parses it; a status
// other than 200 returns the code and no families.
func Scrape(t testing.TB, hc *http.Client, url string) (int, Families) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, fams
}

// Value sums the counters, gauges and histogram counts of name whose
// labels include want.
func (f Families) Value(name string, want map[string]string) float64 {
	var sum float64
	fam := f[name]
	if fam == nil {
		return 0
	}
next:
	for _, m := range fam.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}
