package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"minik/client"
	"minik/client/informer"
	"minik/client/record"
	"minik/controller/framework"
)

// Name is the controller's name.
const Name = "nodelifecycle"

// Controller is the node lifecycle controller.
type Controller struct {
	c       *client.Client
	inf     *framework.Informers
	rec     *record.Recorder
	log     *slog.Logger
	clock   clock.WithTicker
	cfg     Config
	period  time.Duration
	queue   *framework.Queue
	mu      sync.Mutex
	healths map[string]Health
}

// New registers the controller. period is how often every node is
// checked.
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, clk clock.WithTicker, cfg Config, period time.Duration, log *slog.Logger) *Controller {
	nc := &Controller{c: c, inf: inf, rec: rec, log: log.With("controller", Name), clock: clk, cfg: cfg, period: period,
		queue: framework.NewQueue(framework.QueueConfig{Clock: clk}), healths: map[string]Health{}}
	inf.Nodes.AddHandler(informer.Handler[corev1.Node]{
		OnAdd:    func(n *corev1.Node) { nc.observe(n.Name) },
		OnUpdate: func(_, n *corev1.Node) { nc.observe(n.Name) },
		OnDelete: func(n *corev1.Node) {
			nc.mu.Lock()
			delete(nc.healths, n.Name)
			nc.mu.Unlock()
		},
	})
	inf.Leases.AddHandler(informer.Handler[coordinationv1.Lease]{
		OnAdd:    func(l *coordinationv1.Lease) { nc.observe(l.Name) },
		OnUpdate: func(_, l *coordinationv1.Lease) { nc.observe(l.Name) },
	})
	return nc
}

// observe records heartbeats of node name and queues it.
func (nc *Controller) observe(name string) {
	node, ok := nc.inf.Nodes.Store().Get("", name)
	if !ok {
		return
	}
	lease, _ := nc.inf.Leases.Store().Get(corev1.NamespaceNodeLease, name)
	nc.mu.Lock()
	nc.healths[name] = Observe(nc.healths[name], node, lease, nc.clock.Now())
	nc.mu.Unlock()
	nc.queue.Add(name)
}

// Run checks nodes on events and every period until ctx ends.
func (nc *Controller) Run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	wg.Go(func() {
		t := nc.clock.NewTicker(nc.period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C():
				for _, key := range nc.inf.Nodes.Store().Keys() {
					nc.queue.Add(key)
				}
			}
		}
	})
	framework.RunWorkers(ctx, nc.queue, workers, nc.sync, func(key string, err error) {
		nc.log.Warn("sync failed", "node", key, "err", err)
	})
	wg.Wait()
}

func (nc *Controller) sync(ctx context.Context, name string) (framework.Result, error) {
	node, ok := nc.inf.Nodes.Store().Get("", name)
	if !ok {
		return framework.Result{}, nil
	}
	lease, _ := nc.inf.Leases.Store().Get(corev1.NamespaceNodeLease, name)
	now := nc.clock.Now()
	nc.mu.Lock()
	h := Observe(nc.healths[name], node, lease, now)
	nc.healths[name] = h
	nc.mu.Unlock()

	plan := Reconcile(node, h, nc.cfg, now)
	nc.log.Debug("node checked", "node", name, "silentFor", now.Sub(h.ProbeTime), "taints", plan.TaintsChanged, "status", plan.Status != nil, "rv", node.ResourceVersion)
	if plan.Status != nil {
		nc.log.Info("node stopped reporting", "node", name, "silentFor", now.Sub(h.ProbeTime).Round(time.Second))
		updated, err := nc.c.Nodes().UpdateStatus(ctx, plan.Status, metav1.UpdateOptions{})
		if err != nil {
			return framework.Result{}, fmt.Errorf("update status: %w", err)
		}
		node = updated
		plan.Taints, plan.TaintsChanged = desiredTaints(node, now)
	}
	if plan.BecameNotReady {
		nc.rec.Eventf(node, corev1.EventTypeNormal, "NodeNotReady", "Node %s status is now: NodeNotReady", name)
	}
	if plan.TaintsChanged {
		cp := node.DeepCopy()
		cp.Spec.Taints = plan.Taints
		if _, err := nc.c.Nodes().Update(ctx, cp, metav1.UpdateOptions{}); err != nil {
			return framework.Result{}, fmt.Errorf("update taints: %w", err)
		}
	}
	var errs []error
	if plan.MarkPodsNotReady {
		errs = append(errs, nc.markPodsNotReady(ctx, name))
	}
	// Check again when the grace period would run out.
	grace := nc.cfg.GracePeriod
	if condition(node, corev1.NodeReady) == nil {
		grace = nc.cfg.StartupGracePeriod
	}
	next := h.ProbeTime.Add(grace).Sub(now) + time.Millisecond
	if next <= 0 {
		next = nc.period
	}
	return framework.Result{RequeueAfter: next}, errors.Join(errs...)
}

// markPodsNotReady sets Ready=False on every pod of node that says Ready.
func (nc *Controller) markPodsNotReady(ctx context.Context, node string) error {
	var errs []error
	for _, p := range nc.inf.Pods.Store().ByIndex(informer.NodeNameIndex, node) {
		if !framework.IsPodReady(p) || framework.IsPodTerminal(p) {
			continue
		}
		cp := p.DeepCopy()
		for i := range cp.Status.Conditions {
			if cp.Status.Conditions[i].Type == corev1.PodReady {
				cp.Status.Conditions[i].Status = corev1.ConditionFalse
				cp.Status.Conditions[i].LastTransitionTime = metav1.NewTime(nc.clock.Now())
			}
		}
		if _, err := nc.c.Pods().UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("mark pod %s/%s not ready: %w", p.Namespace, p.Name, err))
			continue
		}
		nc.rec.Eventf(p, corev1.EventTypeWarning, "NodeNotReady", "Node is not ready")
	}
	return errors.Join(errs...)
}
