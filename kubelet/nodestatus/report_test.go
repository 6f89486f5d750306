package nodestatus

import (
	"testing"
	"time"
)

// A status that does not change is written again interval after the last
// write; after a write that carried a change (and at start) once with a
// random delay in [-interval/2, interval/2) added, as the kubelet does.
func TestReportSchedule(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type step struct {
		at      time.Duration
		due     bool
		wrote   bool // the loop wrote at this check
		changed bool
	}
	cases := []struct {
		name   string
		jitter float64
		steps  []step
	}{
		{"the largest delay puts the first report at 1.5 intervals, the next one interval on", 0.999999, []step{
			{at: 5 * time.Minute, due: false},
			{at: 7*time.Minute + 29*time.Second, due: false},
			{at: 7*time.Minute + 30*time.Second, due: true, wrote: true},
			{at: 12*time.Minute + 20*time.Second, due: false},
			{at: 12*time.Minute + 30*time.Second, due: true, wrote: true},
		}},
		{"the smallest delay puts the first report at half an interval", 0, []step{
			{at: 2*time.Minute + 20*time.Second, due: false},
			{at: 2*time.Minute + 30*time.Second, due: true, wrote: true},
			{at: 7*time.Minute + 30*time.Second, due: true, wrote: true},
		}},
		{"a change is written and draws a new delay", 0.75, []step{ // +75s
			{at: 3 * time.Minute, due: false, wrote: true, changed: true},
			{at: 8 * time.Minute, due: false},
			{at: 9*time.Minute + 15*time.Second, due: true, wrote: true},
			{at: 14*time.Minute + 15*time.Second, due: true, wrote: true},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := reportSchedule{interval: 5 * time.Minute, jitter: func() float64 { return tc.jitter }}
			s.wrote(t0, true) // start
			for _, st := range tc.steps {
				if got := s.due(at(st.at)); got != st.due {
					t.Fatalf("at %v: due = %v, want %v", st.at, got, st.due)
				}
				if st.wrote {
					s.wrote(at(st.at), st.changed)
				}
			}
		})
	}
}
