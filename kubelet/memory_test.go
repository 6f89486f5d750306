package kubelet

import (
	"testing"
	"time"
)

func TestBurstEndIsQuietOnceAfterTheLastChange(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var b burstEnd
	steps := []struct {
		at      time.Duration
		changed bool
		quiet   bool
	}{
		{0, false, false}, // nothing happened yet: no burst to end
		{time.Minute, false, false},
		{time.Minute + time.Second, true, false}, // a burst
		{time.Minute + 2*time.Second, true, false},
		{time.Minute + 6*time.Second, false, false}, // 4s quiet
		{time.Minute + 7*time.Second, false, true},  // 5s quiet: once
		{time.Minute + 8*time.Second, false, false},
		{time.Hour, false, false},
		{time.Hour + time.Second, true, false}, // the next burst
		{time.Hour + 6*time.Second, false, true},
	}
	for _, s := range steps {
		if got := b.quiet(t0.Add(s.at), s.changed); got != s.quiet {
			t.Fatalf("at %v (changed %v): quiet = %v, want %v", s.at, s.changed, got, s.quiet)
		}
	}
}
