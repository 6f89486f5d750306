package resourcemetrics

import (
	"sync"
	"time"
)

// Sample is one reading of a cumulative CPU counter.
type Sample struct {
	Time            time.Time
	CoreNanoSeconds uint64
}

// Rate is the CPU used between two readings, in nano-cores (1e9 is one
// core). It is not ok when the window is empty or the counter went back
// (the container restarted, so its counter did too).
func Rate(prev, cur Sample) (nanoCores uint64, ok bool) {
	window := cur.Time.Sub(prev.Time)
	if window <= 0 || cur.CoreNanoSeconds < prev.CoreNanoSeconds {
		return 0, false
	}
	return uint64(float64(cur.CoreNanoSeconds-prev.CoreNanoSeconds) / window.Seconds()), true
}

// Sampler turns cumulative counters into rates, as metrics-server does
// with its scrape window: it keeps a baseline reading per key (a node, a
// container), and a reading at least MinWindow after the baseline gives
// the rate over that window and becomes the next baseline. A reading
// sooner than that gives the last rate (so that frequent callers still
// see a full window), or, before there is one, the rate over the short
// window since the baseline.
type Sampler struct {
	// MinWindow is the shortest window that replaces the baseline.
	MinWindow time.Duration
	// Forget drops the keys not read for this long (default 5m).
	Forget time.Duration

	mu      sync.Mutex
	entries map[string]*samplerEntry
	pruned  time.Time
}

type samplerEntry struct {
	base     Sample
	seen     time.Time
	rate     uint64
	window   time.Duration
	haveRate bool
}

// Observe records cur for key and returns the rate and its window; ok is
// false on the first reading of a key (and after a counter reset).
func (s *Sampler) Observe(key string, cur Sample) (nanoCores uint64, window time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries == nil {
		s.entries = map[string]*samplerEntry{}
	}
	s.prune(cur.Time)
	e := s.entries[key]
	if e == nil || cur.CoreNanoSeconds < e.base.CoreNanoSeconds {
		s.entries[key] = &samplerEntry{base: cur, seen: cur.Time}
		return 0, 0, false
	}
	e.seen = cur.Time
	w := cur.Time.Sub(e.base.Time)
	if w >= s.MinWindow {
		if r, ok := Rate(e.base, cur); ok {
			e.base, e.rate, e.window, e.haveRate = cur, r, w, true
			return r, w, true
		}
	}
	if e.haveRate {
		return e.rate, e.window, true
	}
	if r, ok := Rate(e.base, cur); ok {
		return r, w, true
	}
	return 0, 0, false
}

// prune drops entries unseen for Forget, at most once a minute; s.mu is held.
func (s *Sampler) prune(now time.Time) {
	forget := s.Forget
	if forget == 0 {
		forget = 5 * time.Minute
	}
	if now.Sub(s.pruned) < time.Minute {
		return
	}
	s.pruned = now
	for k, e := range s.entries {
		if now.Sub(e.seen) > forget {
			delete(s.entries, k)
		}
	}
}

// Len is the number of keys kept.
func (s *Sampler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}
