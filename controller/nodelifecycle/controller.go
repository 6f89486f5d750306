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

// zonesKey is the one key of the zone queue: the zone pass covers every
// zone at once, since whether all of them are disrupted decides for each.
const zonesKey = "zones"

// Controller is the node lifecycle controller.
type Controller struct {
	c      *client.Client
	inf    *framework.Informers
	rec    *record.Recorder
	log    *slog.Logger
	clock  clock.WithTicker
	cfg    Config
	period time.Duration
	// queue holds node names; zoneQueue holds zonesKey.
	queue     *framework.Queue
	zoneQueue *framework.Queue

	mu         sync.Mutex
	healths    map[string]Health
	zoneStates map[string]ZoneState
	tainting   *TaintQueue
}

// New registers the controller. period is how often every node is
// checked.
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, clk clock.WithTicker, cfg Config, period time.Duration, log *slog.Logger) *Controller {
	nc := &Controller{c: c, inf: inf, rec: rec, log: log.With("controller", Name), clock: clk, cfg: cfg, period: period,
		queue: framework.NewQueue(framework.QueueConfig{Name: Name, Clock: clk}), zoneQueue: framework.NewQueue(framework.QueueConfig{Clock: clk}),
		healths: map[string]Health{}, zoneStates: map[string]ZoneState{}, tainting: NewTaintQueue(cfg.Eviction.Rate)}
	inf.Nodes.AddHandler(informer.Handler[corev1.Node]{
		OnAdd: func(n *corev1.Node) {
			nc.observe(n.Name)
			nc.zoneQueue.Add(zonesKey)
		},
		OnUpdate: func(old, n *corev1.Node) {
			nc.observe(n.Name)
			// A zone's health changes with its nodes' readiness and zone.
			if readyStatus(old) != readyStatus(n) || ZoneKey(old) != ZoneKey(n) {
				nc.zoneQueue.Add(zonesKey)
			}
		},
		OnDelete: func(n *corev1.Node) {
			nc.mu.Lock()
			delete(nc.healths, n.Name)
			nc.tainting.Remove(n.Name)
			nc.mu.Unlock()
			nc.zoneQueue.Add(zonesKey)
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
				nc.zoneQueue.Add(zonesKey)
			}
		}
	})
	wg.Go(func() {
		framework.RunWorkers(ctx, nc.zoneQueue, 1, nc.syncZones, func(_ string, err error) {
			nc.log.Warn("zone pass failed", "err", err)
		})
	})
	framework.RunWorkers(ctx, nc.queue, workers, nc.sync, func(key string, err error) {
		nc.log.Warn("sync failed", "node", key, "err", err)
	})
	wg.Wait()
}

// readyStatus is the status of n's Ready condition, "" without one.
func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	if c := condition(n, corev1.NodeReady); c != nil {
		return c.Status
	}
	return ""
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

	plan := Plan(node, h, nc.cfg, now)
	nc.log.Debug("node checked", "node", name, "silentFor", now.Sub(h.ProbeTime), "taints", plan.TaintsChanged, "status", plan.Status != nil, "rv", node.ResourceVersion)
	if plan.BecameNotReady {
		nc.rec.Eventf(node, corev1.EventTypeNormal, "NodeNotReady", "Node %s status is now: NodeNotReady", name)
	}
	if plan.Status != nil {
		// The rest waits for the update to come back through the
		// informer, so the zone pass judges the node as the cache shows.
		nc.log.Info("node stopped reporting", "node", name, "silentFor", now.Sub(h.ProbeTime).Round(time.Second))
		if _, err := nc.c.Nodes().UpdateStatus(ctx, plan.Status, metav1.UpdateOptions{}); err != nil {
			return framework.Result{}, fmt.Errorf("update status: %w", err)
		}
		return framework.Result{}, nil
	}
	if plan.TaintsChanged {
		cp := node.DeepCopy()
		cp.Spec.Taints = plan.Taints
		if _, err := nc.c.Nodes().Update(ctx, cp, metav1.UpdateOptions{}); err != nil {
			return framework.Result{}, fmt.Errorf("update taints: %w", err)
		}
	}
	nc.mu.Lock()
	queued := false
	if plan.AwaitNoExecute {
		queued = nc.tainting.Add(ZoneKey(node), name)
	} else {
		nc.tainting.Remove(name)
	}
	nc.mu.Unlock()
	if queued {
		nc.zoneQueue.Add(zonesKey)
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

// syncZones is the zone pass: it judges every zone, sets their tainting
// rates, and gives the NoExecute taint to the queued nodes whose turn came.
func (nc *Controller) syncZones(ctx context.Context, _ string) (framework.Result, error) {
	now := nc.clock.Now()
	nodes := nc.inf.Nodes.Store().List()
	stillDue := func(name string) bool {
		n, ok := nc.inf.Nodes.Store().Get("", name)
		if !ok {
			return false
		}
		_, _, await := desiredTaints(n, now, false)
		return await
	}
	nc.mu.Lock()
	prev := nc.zoneStates
	d := JudgeZones(nodes, prev, nc.cfg.Eviction)
	nc.zoneStates = d.States
	for zone, rate := range d.Rates {
		nc.tainting.SetRate(zone, rate, now)
	}
	nc.tainting.Forget(d.States)
	if d.LeftFullDisruption {
		for name, h := range nc.healths {
			h.ProbeTime = now
			nc.healths[name] = h
		}
	}
	due := nc.tainting.Pop(now, stillDue)
	next := nc.tainting.NextIn(now)
	nc.mu.Unlock()

	for zone, st := range d.States {
		if prev[zone] != st {
			nc.log.Info("zone state changed", "zone", zone, "state", st, "rate", d.Rates[zone])
		}
	}
	var errs []error
	switch {
	case d.EnteredFullDisruption:
		nc.log.Info("no node is Ready: entering full disruption mode, NoExecute taints withheld")
		for _, n := range nodes {
			errs = append(errs, nc.setTaints(ctx, n.Name, withoutNoExecute))
		}
	case d.LeftFullDisruption:
		nc.log.Info("some nodes are Ready: leaving full disruption mode")
	}
	for _, name := range due {
		nc.log.Info("tainting not-ready node NoExecute", "node", name)
		errs = append(errs, nc.setTaints(ctx, name, func(n *corev1.Node) ([]corev1.Taint, bool) {
			taints, changed, _ := desiredTaints(n, now, true)
			return taints, changed
		}))
	}
	return framework.Result{RequeueAfter: next}, errors.Join(errs...)
}

// setTaints writes the taints change returns for the cached node name,
// if it changes them.
func (nc *Controller) setTaints(ctx context.Context, name string, change func(*corev1.Node) ([]corev1.Taint, bool)) error {
	n, ok := nc.inf.Nodes.Store().Get("", name)
	if !ok {
		return nil
	}
	taints, changed := change(n)
	if !changed {
		return nil
	}
	cp := n.DeepCopy()
	cp.Spec.Taints = taints
	if _, err := nc.c.Nodes().Update(ctx, cp, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update taints of %s: %w", name, err)
	}
	return nil
}
