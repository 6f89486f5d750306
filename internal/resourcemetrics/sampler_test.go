package resourcemetrics

import (
	"testing"
	"time"
)

func TestRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name      string
		prev, cur Sample
		want      uint64
		wantOK    bool
	}{
		{"half a core over two seconds", Sample{t0, 1e9}, Sample{t0.Add(2 * time.Second), 2e9}, 5e8, true},
		{"an idle container uses nothing", Sample{t0, 7}, Sample{t0.Add(time.Second), 7}, 0, true},
		{"a counter that went back (restart) gives no rate", Sample{t0, 5e9}, Sample{t0.Add(time.Second), 1e6}, 0, false},
		{"an empty window gives no rate", Sample{t0, 1}, Sample{t0, 2}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Rate(tt.prev, tt.cur)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("Rate = %d, %v; want %d, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestSampler(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	type step struct {
		at      float64
		counter uint64
		want    uint64
		window  time.Duration
		ok      bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"the first reading gives no rate, the next one a full window's",
			[]step{{0, 0, 0, 0, false}, {10, 5e9, 5e8, 10 * time.Second, true}}},
		{"before a full window the short window's rate is given without moving the baseline",
			[]step{{0, 0, 0, 0, false}, {1, 1e9, 1e9, time.Second, true}, {10, 2e9, 2e8, 10 * time.Second, true}}},
		{"after a full window a quick second reading repeats the last rate",
			[]step{{0, 0, 0, 0, false}, {10, 1e10, 1e9, 10 * time.Second, true}, {11, 1e10, 1e9, 10 * time.Second, true},
				{20, 1e10, 0, 10 * time.Second, true}}},
		{"a counter reset starts over",
			[]step{{0, 5e9, 0, 0, false}, {10, 6e9, 1e8, 10 * time.Second, true}, {20, 1e6, 0, 0, false},
				{30, 1e9 + 1e6, 1e8, 10 * time.Second, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Sampler{MinWindow: 10 * time.Second}
			for i, st := range tt.steps {
				got, w, ok := s.Observe("c", Sample{at(st.at), st.counter})
				if got != st.want || w != st.window || ok != st.ok {
					t.Errorf("step %d: Observe = %d, %v, %v; want %d, %v, %v", i, got, w, ok, st.want, st.window, st.ok)
				}
			}
		})
	}
}

func TestSamplerForgetsKeysNotRead(t *testing.T) {
	s := &Sampler{MinWindow: time.Second, Forget: time.Minute}
	t0 := time.Unix(1000, 0)
	s.Observe("gone", Sample{t0, 1})
	s.Observe("kept", Sample{t0.Add(2 * time.Minute), 1})
	if s.Len() != 1 {
		t.Errorf("%d keys kept, want only the one read within a minute", s.Len())
	}
}
