package eviction

import (
	"context"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"minik/client/record"
	"minik/kubelet/nodestatus"
)

// podCleanupTimeout bounds the wait for an evicted pod's containers and
// volumes to go before the next synchronize (the kubelet's value).
const podCleanupTimeout = 30 * time.Second

// StatsProvider reads what the eviction manager decides from: the node's
// signals and, with pods, each pod's usage (every container's stats and a
// walk of its logs and emptyDirs: asked for only to rank pods once a
// threshold is met, not every 10s).
type StatsProvider interface {
	Summary(ctx context.Context, pods bool) (*Summary, error)
}

// Pods is what the eviction loop needs from the kubelet.
type Pods interface {
	// Active are the pods admitted and neither finished nor being evicted.
	Active() []*corev1.Pod
	// Evict fails the pod with reason Evicted and message: its worker
	// kills its containers at once (a hard threshold allows no grace
	// period) and removes its volumes. It returns a channel closed when
	// that is done, nil if the kubelet does not run the pod.
	Evict(pod *corev1.Pod, message string) <-chan struct{}
}

// LoopConfig is what the eviction loop needs from the kubelet.
type LoopConfig struct {
	NodeName string
	Manager  *Manager
	Stats    StatsProvider
	Pods     Pods
	// Interval is how often the thresholds are checked.
	Interval time.Duration
	// PressureChanged is called when the node's pressure conditions change.
	PressureChanged func()
	Recorder        *record.Recorder
	Clock           clock.Clock
	Log             *slog.Logger
}

// RunLoop is the eviction manager's driver: every monitoring
// interval it reads the stats, lets the manager decide, reports pressure
// changes in the node status, and evicts at most one pod. After an
// eviction it waits for the pod's cleanup and synchronizes again at once,
// as the kubelet does.
func RunLoop(ctx context.Context, cfg LoopConfig) error {
	for {
		evicted := synchronize(ctx, cfg)
		if evicted != nil {
			select {
			case <-evicted:
			case <-ctx.Done():
				return nil
			case <-cfg.Clock.After(podCleanupTimeout):
				cfg.Log.Warn("eviction manager: pod cleanup timed out")
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-cfg.Clock.After(cfg.Interval):
		}
	}
}

// synchronize runs one pass of the eviction manager. It returns
// a channel closed once the pod it evicted is cleaned up, nil when it
// evicted none.
func synchronize(ctx context.Context, cfg LoopConfig) <-chan struct{} {
	summary, err := cfg.Stats.Summary(ctx, false)
	if err == nil && cfg.Manager.Met(summary.Node) {
		summary, err = cfg.Stats.Summary(ctx, true)
	}
	if err != nil {
		cfg.Log.Warn("eviction manager: reading stats", "err", err)
		if summary == nil {
			return nil
		}
	}
	before := cfg.Manager.Conditions()
	d := cfg.Manager.Synchronize(cfg.Clock.Now(), summary, cfg.Pods.Active())
	if !slices.Equal(before, d.Conditions) {
		cfg.Log.Info("eviction manager: node pressure changed", "conditions", d.Conditions)
		cfg.PressureChanged()
	}
	if d.Reclaim == "" {
		return nil
	}
	cfg.Log.Info("eviction manager: attempting to reclaim", "resource", d.Reclaim)
	cfg.Recorder.Eventf(nodestatus.Ref(cfg.NodeName), corev1.EventTypeWarning, "EvictionThresholdMet", "Attempting to reclaim %s", d.Reclaim)
	for _, pod := range d.Candidates {
		if done := cfg.Pods.Evict(pod, d.Message(pod)); done != nil {
			return done
		}
	}
	cfg.Log.Info("eviction manager: unable to evict any pods from the node")
	return nil
}
