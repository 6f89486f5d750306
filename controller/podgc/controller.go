package podgc

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"minik/client"
	"minik/controller/framework"
)

// Name is the controller's name.
const Name = "pod-garbage-collector"

// Config is the collector's policy; zero fields take the defaults.
type Config struct {
	// CheckPeriod is how often it runs. Default 20s.
	CheckPeriod time.Duration
	// QuarantineTime is how long a node may be missing from the cache
	// before a live GET decides. Default 40s.
	QuarantineTime time.Duration
	// TerminatedPodThreshold is how many ended pods are kept; negative
	// keeps all. Default (0): 12500, Kubernetes' --terminated-pod-gc-threshold.
	TerminatedPodThreshold int
}

func (c *Config) defaults() {
	if c.CheckPeriod <= 0 {
		c.CheckPeriod = DefaultCheckPeriod
	}
	if c.QuarantineTime <= 0 {
		c.QuarantineTime = DefaultQuarantineTime
	}
	switch {
	case c.TerminatedPodThreshold == 0:
		c.TerminatedPodThreshold = DefaultTerminatedPodThreshold
	case c.TerminatedPodThreshold < 0:
		c.TerminatedPodThreshold = 0 // Collect's "no limit"
	}
}

// Controller is the driver: it feeds the caches and the clock to the
// plan and performs its GETs and deletes.
type Controller struct {
	c     *client.Client
	inf   *framework.Informers
	clock clock.WithTicker
	cfg   Config
	log   *slog.Logger

	quarantine Quarantine // written only by the run loop, from Step
}

// New builds the collector.
func New(c *client.Client, inf *framework.Informers, clk clock.WithTicker, cfg Config, log *slog.Logger) *Controller {
	cfg.defaults()
	return &Controller{c: c, inf: inf, clock: clk, cfg: cfg, log: log.With("controller", Name), quarantine: Quarantine{}}
}

// Run collects every CheckPeriod, and when a quarantine ends, until ctx
// ends. workers is unused: one pass at a time.
func (gc *Controller) Run(ctx context.Context, _ int) {
	for {
		wake := gc.pass(ctx)
		d := gc.cfg.CheckPeriod
		if !wake.IsZero() {
			if w := wake.Sub(gc.clock.Now()); w < d {
				d = max(w, 0)
			}
		}
		t := gc.clock.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// pass runs the plan once and returns when the next quarantine ends.
func (gc *Controller) pass(ctx context.Context) time.Time {
	pods := gc.inf.Pods.Store().List()
	nodes := map[string]*corev1.Node{}
	for _, n := range gc.inf.Nodes.Store().List() {
		nodes[n.Name] = n
	}
	now := gc.clock.Now()
	q, due, wake := gc.quarantine.Step(pods, nodes, now, gc.cfg.QuarantineTime)
	gc.quarantine = q
	gone := map[string]bool{}
	for _, n := range due {
		_, err := gc.c.Nodes().Get(ctx, "", n, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			gone[n] = true
		case err == nil:
			gc.quarantine.Requarantine(n, now)
		default:
			gc.log.Warn("could not check whether a node exists", "node", n, "err", err)
		}
	}
	deletes := Collect(pods, nodes, gone, gc.cfg.TerminatedPodThreshold)
	var wg sync.WaitGroup
	for _, d := range deletes {
		wg.Go(func() {
			if err := gc.forceDelete(ctx, d); err != nil {
				gc.log.Warn("could not delete pod", "pod", framework.KeyOf(d.Pod), "reason", string(d.Reason), "err", err)
			}
		})
	}
	wg.Wait()
	return wake
}

// forceDelete marks the pod Failed (with the plan's condition) unless it
// ended, then deletes it with no grace period: no kubelet will ever
// confirm its end.
func (gc *Controller) forceDelete(ctx context.Context, d Delete) error {
	p := d.Pod
	gc.log.Info("PodGC is force deleting pod", "pod", framework.KeyOf(p), "node", p.Spec.NodeName, "reason", string(d.Reason))
	if st := FailedStatus(p, d.Condition, gc.clock.Now()); st != nil {
		cp := p.DeepCopy()
		cp.Status = *st
		if _, err := gc.c.Pods().UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("mark failed: %w", err) // a conflict: the next pass sees the new pod
		}
	}
	uid := p.UID
	zero := int64(0)
	err := gc.c.Pods().Delete(ctx, p.Namespace, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
		Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete: %w", err)
	}
	return nil
}
