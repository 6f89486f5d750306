package informer

import (
	"math/rand/v2"
	"time"
)

// Backoff computes how long to wait before the next retry: Initial, then
// Factor times longer after each failure, never more than Max. Each delay
// is stretched by a random fraction up to Jitter, so that many clients that
// lost the same apiserver do not come back at the same instant.
//
// The zero value uses the defaults given per field.
type Backoff struct {
	Initial time.Duration  // first delay; default 500ms
	Max     time.Duration  // cap, jitter included; default 30s
	Factor  float64        // growth per failure; default 2
	Jitter  float64        // up to this fraction longer; default 0.5
	Rand    func() float64 // in [0,1); default math/rand/v2.Float64

	next time.Duration // delay before jitter for the next call
}

func (b *Backoff) defaults() {
	if b.Initial <= 0 {
		b.Initial = 500 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 30 * time.Second
	}
	if b.Factor < 1 {
		b.Factor = 2
	}
	if b.Jitter < 0 {
		b.Jitter = 0
	} else if b.Jitter == 0 {
		b.Jitter = 0.5
	}
	if b.Rand == nil {
		b.Rand = rand.Float64
	}
}

// Next returns the delay before the next retry and grows the one after.
func (b *Backoff) Next() time.Duration {
	b.defaults()
	if b.next == 0 {
		b.next = b.Initial
	}
	d := b.next
	b.next = min(time.Duration(float64(b.next)*b.Factor), b.Max)
	d += time.Duration(b.Jitter * b.Rand() * float64(d))
	return min(d, b.Max)
}

// Reset starts over from Initial, after something worked.
func (b *Backoff) Reset() { b.next = 0 }
