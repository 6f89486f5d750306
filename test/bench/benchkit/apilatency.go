package benchkit

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"minik/client"
)

// RequestLatencies is a reading of the apiserver's own
// apiserver_request_duration_seconds histogram: per (verb, resource,
// subresource, scope), the count in each bucket. Two readings' difference
// is what the requests between them took.
type RequestLatencies map[CallKind]*histogram

// CallKind is the SLI's unit: the API call latency SLO holds for every
// (resource, verb) pair, read-only calls also by scope.
type CallKind struct{ Verb, Resource, Subresource, Scope string }

func (k CallKind) String() string { return fmt.Sprintf("%s (%s)", k.Name(), k.Scope) }

// Name is the call without its scope, as the benches count calls per
// pod: "POST pods/binding".
func (k CallKind) Name() string {
	r := k.Resource
	if k.Subresource != "" {
		r += "/" + k.Subresource
	}
	return k.Verb + " " + r
}

// Mutating reports whether the call writes; read-only calls are GET and
// LIST. WATCH and CONNECT are long-running and in no SLI.
func (k CallKind) Mutating() bool {
	switch k.Verb {
	case "POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY":
		return true
	}
	return false
}

func (k CallKind) readOnly() bool { return k.Verb == "GET" || k.Verb == "LIST" }

type histogram struct {
	bounds []float64 // upper bounds in seconds, ascending, +Inf last
	counts []uint64  // cumulative
}

// ReadRequestLatencies scrapes the apiserver's /metrics (c must be
// allowed: the admin, or the group system:monitoring).
func ReadRequestLatencies(ctx context.Context, c *client.Client) (RequestLatencies, error) {
	var raw []byte
	if err := c.Do(ctx, "GET", "/metrics", nil, nil, &raw); err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	fam, ok := families["apiserver_request_duration_seconds"]
	if !ok {
		return nil, fmt.Errorf("the apiserver's /metrics has no apiserver_request_duration_seconds")
	}
	out := RequestLatencies{}
	for _, m := range fam.GetMetric() {
		k := CallKind{label(m, "verb"), label(m, "resource"), label(m, "subresource"), label(m, "scope")}
		h := &histogram{}
		for _, b := range m.GetHistogram().GetBucket() {
			h.bounds = append(h.bounds, b.GetUpperBound())
			h.counts = append(h.counts, b.GetCumulativeCount())
		}
		if n := len(h.bounds); n == 0 || !math.IsInf(h.bounds[n-1], 1) {
			h.bounds = append(h.bounds, math.Inf(1))
			h.counts = append(h.counts, m.GetHistogram().GetSampleCount())
		}
		out[k] = h
	}
	return out, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// Calls counts the calls of the kinds keep accepts.
func (r RequestLatencies) Calls(keep func(CallKind) bool) uint64 {
	var n uint64
	for k, h := range r {
		if keep(k) {
			n += h.counts[len(h.counts)-1]
		}
	}
	return n
}

// CallLatency is one kind of call's p99 over a period, and how many calls.
type CallLatency struct {
	Kind  CallKind
	P99   float64 // seconds
	Calls uint64
}

// Since returns, for every kind of call made since before, its p99,
// worst first: the figure the API call latency SLO checks per kind.
func (after RequestLatencies) Since(before RequestLatencies) []CallLatency {
	var out []CallLatency
	for k, h := range after {
		if !k.Mutating() && !k.readOnly() {
			continue
		}
		d := h.minus(before[k])
		if n := d.counts[len(d.counts)-1]; n > 0 {
			out = append(out, CallLatency{Kind: k, P99: d.quantile(0.99), Calls: n})
		}
	}
	slices.SortFunc(out, func(a, b CallLatency) int {
		if a.P99 != b.P99 {
			if a.P99 > b.P99 {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Kind.String(), b.Kind.String())
	})
	return out
}

func (h *histogram) minus(before *histogram) *histogram {
	d := &histogram{bounds: h.bounds, counts: slices.Clone(h.counts)}
	if before != nil && len(before.counts) == len(d.counts) {
		for i := range d.counts {
			d.counts[i] -= before.counts[i]
		}
	}
	return d
}

// quantile interpolates linearly within the bucket the rank falls in, as
// Prometheus' histogram_quantile does (the SLO dashboards' query); in the
// +Inf bucket it answers the highest finite bound.
func (h *histogram) quantile(q float64) float64 {
	total := float64(h.counts[len(h.counts)-1])
	rank := q * total
	lower, prev := 0.0, 0.0
	for i, c := range h.counts {
		if float64(c) >= rank {
			if math.IsInf(h.bounds[i], 1) {
				return lower
			}
			if float64(c) == prev {
				return h.bounds[i]
			}
			return lower + (h.bounds[i]-lower)*(rank-prev)/(float64(c)-prev)
		}
		lower, prev = h.bounds[i], float64(c)
	}
	return lower
}

// Worst returns the worst mutating and the worst read-only kind of call
// of ls (which Since sorted worst first).
func Worst(ls []CallLatency) (mutating, readOnly CallLatency) {
	for _, l := range ls {
		if l.Kind.Mutating() && mutating.Calls == 0 {
			mutating = l
		}
		if !l.Kind.Mutating() && readOnly.Calls == 0 {
			readOnly = l
		}
	}
	return mutating, readOnly
}
