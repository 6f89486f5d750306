package informer

import (
	"slices"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		b    Backoff
		want []time.Duration
	}{
		{
			name: "delays double up to the cap",
			b:    Backoff{Initial: 100 * ms, Max: time.Second, Rand: noJitter},
			want: []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second},
		},
		{
			name: "jitter stretches each delay by up to its fraction",
			b:    Backoff{Initial: 100 * ms, Max: time.Second, Jitter: 0.5, Rand: func() float64 { return 1 }},
			want: []time.Duration{150 * ms, 300 * ms, 600 * ms, time.Second},
		},
		{
			name: "jitter never goes past the cap",
			b:    Backoff{Initial: 800 * ms, Max: time.Second, Jitter: 0.5, Rand: func() float64 { return 0.9 }},
			want: []time.Duration{time.Second, time.Second},
		},
		{
			name: "a custom factor grows delays by that factor",
			b:    Backoff{Initial: 10 * ms, Max: time.Second, Factor: 3, Rand: noJitter},
			want: []time.Duration{10 * ms, 30 * ms, 90 * ms},
		},
		{
			name: "the zero value starts at 500ms and grows by 2",
			b:    Backoff{Rand: noJitter},
			want: []time.Duration{500 * ms, time.Second, 2 * time.Second},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []time.Duration
			for range tt.want {
				got = append(got, tt.b.Next())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("delays %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBackoffResetStartsOver(t *testing.T) {
	b := Backoff{Initial: time.Second, Max: time.Minute, Rand: noJitter}
	b.Next()
	b.Next()
	b.Reset()
	if got := b.Next(); got != time.Second {
		t.Errorf("first delay after Reset %v, want 1s", got)
	}
}
