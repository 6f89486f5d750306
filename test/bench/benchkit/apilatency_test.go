package benchkit

import (
	"math"
	"testing"
	"time"
)

func TestHistogramQuantile(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		name   string
		bounds []float64
		counts []uint64 // cumulative
		q      float64
		want   float64
	}{
		{"the p99 of calls all in the first bucket is interpolated inside it", []float64{0.1, 0.2, inf}, []uint64{100, 100, 100}, 0.99, 0.099},
		{"the p50 of calls split evenly over two buckets is the first bucket's bound", []float64{0.1, 0.2, inf}, []uint64{50, 100, 100}, 0.5, 0.1},
		{"the p99 falling in the second bucket is interpolated between its bounds", []float64{0.1, 0.2, inf}, []uint64{50, 100, 100}, 0.99, 0.198},
		{"the p99 falling in the +Inf bucket is the highest finite bound", []float64{0.1, 0.2, inf}, []uint64{0, 0, 10}, 0.99, 0.2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := (&histogram{bounds: tc.bounds, counts: tc.counts}).quantile(tc.q)
			if math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}

func TestSinceComparesEachKindOfCallOverThePeriod(t *testing.T) {
	inf := math.Inf(1)
	post := CallKind{"POST", "pods", "", "namespace"}
	get := CallKind{"GET", "nodes", "", "resource"}
	watch := CallKind{"WATCH", "pods", "", "cluster"}
	before := RequestLatencies{
		post:  {bounds: []float64{0.1, 1, inf}, counts: []uint64{100, 100, 100}},
		get:   {bounds: []float64{0.1, 1, inf}, counts: []uint64{10, 10, 10}},
		watch: {bounds: []float64{0.1, 1, inf}, counts: []uint64{0, 0, 5}},
	}
	after := RequestLatencies{
		post:  {bounds: []float64{0.1, 1, inf}, counts: []uint64{100, 200, 200}}, // the period's 100 all took 0.1-1s
		get:   {bounds: []float64{0.1, 1, inf}, counts: []uint64{20, 20, 20}},
		watch: {bounds: []float64{0.1, 1, inf}, counts: []uint64{0, 0, 9}},
	}
	calls := after.Since(before)
	if len(calls) != 2 {
		t.Fatalf("kinds %v, want POST and GET only (WATCH is in no SLI)", calls)
	}
	if n := after.Calls(CallKind.Mutating); n != 200 {
		t.Errorf("Calls(Mutating) = %d, want the 200 POSTs", n)
	}
	mut, ro := Worst(calls)
	if mut.Kind != post || mut.Calls != 100 || math.Abs(mut.P99-0.991) > 1e-9 {
		t.Errorf("worst mutating %+v, want POST pods: 100 calls, p99 0.991s", mut)
	}
	if ro.Kind != get || ro.Calls != 10 || math.Abs(ro.P99-0.099) > 1e-9 {
		t.Errorf("worst read-only %+v, want GET nodes: 10 calls, p99 0.099s", ro)
	}
}

func TestQuantileIsTheNearestRank(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name string
		in   []time.Duration
		q    float64
		want time.Duration
	}{
		{"the p50 of four values is the second", []time.Duration{ms(4), ms(1), ms(3), ms(2)}, 0.5, ms(2)},
		{"the p99 of 100 values is the 99th", func() []time.Duration {
			var ds []time.Duration
			for i := 100; i >= 1; i-- {
				ds = append(ds, ms(i))
			}
			return ds
		}(), 0.99, ms(99)},
		{"the max is the largest", []time.Duration{ms(7), ms(9), ms(8)}, 1, ms(9)},
		{"no values give zero", nil, 0.99, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Quantile(tc.in, tc.q); got != tc.want {
				t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}
