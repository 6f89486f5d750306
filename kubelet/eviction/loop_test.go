package eviction

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// countingStats serves node signals and counts the reads of the pods'
// usage, which cost a list of every container's stats and a walk of
// every pod's logs and emptyDirs.
type countingStats struct {
	node     NodeStats
	podReads int
}

func (s *countingStats) Summary(_ context.Context, pods bool) (*Summary, error) {
	if pods {
		s.podReads++
	}
	return &Summary{Node: s.node}, nil
}

type noPods struct{}

func (noPods) Active() []*corev1.Pod                     { return nil }
func (noPods) Evict(*corev1.Pod, string) <-chan struct{} { return nil }

// TestPodsAreReadOnlyUnderPressure: a synchronize with no threshold met
// reads the node's signals alone; Met says when the pods' usage is
// needed to rank them.
func TestPodsAreReadOnlyUnderPressure(t *testing.T) {
	thresholds, err := ParseThresholds("memory.available<100Mi")
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(thresholds, 0)
	plenty := NodeStats{MemoryCapacityBytes: 8 << 30, MemoryWorkingSetBytes: 1 << 30}
	stats := &countingStats{node: plenty}
	cfg := LoopConfig{NodeName: "n", Manager: m, Stats: stats, Pods: noPods{}, PressureChanged: func() {},
		Clock: testingclock.NewFakeClock(time.Unix(1000, 0)), Log: slog.New(slog.DiscardHandler)}
	for range 3 {
		if evicted := synchronize(context.Background(), cfg); evicted != nil {
			t.Fatal("evicted with plenty of memory")
		}
	}
	if stats.podReads != 0 {
		t.Fatalf("the pods' usage was read %d times with no threshold met, want 0", stats.podReads)
	}
	if m.Met(plenty) {
		t.Fatal("Met with plenty of memory")
	}
	if !m.Met(NodeStats{MemoryCapacityBytes: 8 << 30, MemoryWorkingSetBytes: 8<<30 - 50<<20}) {
		t.Fatal("not Met with 50Mi available under a 100Mi threshold")
	}
}
