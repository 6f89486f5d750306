package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

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
	c     *client.Client
	inf   *framework.Informers
	rec   *record.Recorder
	log   *slog.Logger
	clock clock.WithTicker
	cfg   Config
	// queue holds node names; zoneQueue holds zonesKey.
	queue     *framework.Queue
	zoneQueue *framework.Queue

	mu         sync.Mutex
	healths    map[string]Health
	zoneStates map[string]ZoneState
	tainting   *TaintQueue

	// sink performs the actions (apiSink; a FakeSink in tests).
	sink framework.Sink[Action]
}

// New registers the controller.
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, clk clock.WithTicker, cfg Config, log *slog.Logger) *Controller {
	nc := &Controller{c: c, inf: inf, rec: rec, log: log.With("controller", Name), clock: clk, cfg: cfg,
		queue: framework.NewQueue(framework.QueueConfig{Name: Name, Clock: clk}), zoneQueue: framework.NewQueue(framework.QueueConfig{Clock: clk}),
		healths: map[string]Health{}, zoneStates: map[string]ZoneState{}, tainting: NewTaintQueue(cfg.Eviction.Rate)}
	nc.sink = apiSink{nc}
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
	heartbeat := func(l *coordinationv1.Lease) {
		if l.Namespace == corev1.NamespaceNodeLease { // the informer holds every Lease
			nc.observe(l.Name)
		}
	}
	inf.Leases.AddHandler(informer.Handler[coordinationv1.Lease]{
		OnAdd:    heartbeat,
		OnUpdate: func(_, l *coordinationv1.Lease) { heartbeat(l) },
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
		t := nc.clock.NewTicker(nc.cfg.MonitorPeriod)
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
	queuedIn, queued := nc.tainting.ZoneOf(name)
	nc.mu.Unlock()

	out := Plan(Input{Node: node, Health: h, Pods: nc.inf.Pods.Store().ByIndex(informer.NodeNameIndex, name),
		Queued: queued, QueuedIn: queuedIn}, nc.cfg, now)
	nc.log.Debug("node checked", "node", name, "silentFor", now.Sub(h.ProbeTime), "actions", len(out.Actions), "rv", node.ResourceVersion)
	// The node's own actions go in order, the first failure ends them;
	// then every pod is marked whatever became of the others, so one
	// refused write does not leave the rest Ready.
	own, pods := out.Actions, []Action(nil)
	if i := slices.IndexFunc(own, func(a Action) bool { return a.Type == MarkPodNotReady }); i >= 0 {
		own, pods = own[:i], own[i:]
	}
	if err := framework.Execute(ctx, nc.sink, own); err != nil {
		return framework.Result{}, err
	}
	return framework.Result{RequeueAfter: out.RequeueAfter}, nc.doEach(ctx, pods)
}

// doEach performs every action, past failures, and returns them joined.
func (nc *Controller) doEach(ctx context.Context, actions []Action) error {
	var errs []error
	for _, a := range actions {
		if err := nc.sink.Do(ctx, a); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", a, err))
		}
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
	switch {
	case d.EnteredFullDisruption:
		nc.log.Info("no node is Ready: entering full disruption mode, NoExecute taints withheld")
	case d.LeftFullDisruption:
		nc.log.Info("some nodes are Ready: leaving full disruption mode")
	}
	for _, name := range due {
		nc.log.Info("tainting not-ready node NoExecute", "node", name)
	}
	// Every node's taints are written whatever became of the others':
	// the due nodes spent their zone's tokens.
	return framework.Result{RequeueAfter: next}, nc.doEach(ctx, ZoneTaints(nodes, d.EnteredFullDisruption, due, now))
}

// apiSink performs the actions through the apiserver and the
// controller's TaintQueue.
type apiSink struct{ nc *Controller }

func (s apiSink) Do(ctx context.Context, a Action) error {
	nc := s.nc
	switch a.Type {
	case ReportNotReady:
		nc.rec.Eventf(a.Node, corev1.EventTypeNormal, "NodeNotReady", "Node %s status is now: NodeNotReady", a.Node.Name)
	case UpdateNodeStatus:
		nc.log.Info("node stopped reporting", "node", a.Node.Name)
		_, err := nc.c.Nodes().UpdateStatus(ctx, a.Node, metav1.UpdateOptions{})
		return err
	case UpdateTaints:
		// A node deleted meanwhile needs no taints.
		if _, err := nc.c.Nodes().Update(ctx, a.Node, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	case AwaitNoExecute:
		nc.mu.Lock()
		queued := nc.tainting.Add(a.Zone, a.Node.Name)
		nc.mu.Unlock()
		if queued {
			nc.zoneQueue.Add(zonesKey)
		}
	case CancelNoExecute:
		nc.mu.Lock()
		nc.tainting.Remove(a.Node.Name)
		nc.mu.Unlock()
	case MarkPodNotReady:
		if _, err := nc.c.Pods().UpdateStatus(ctx, a.Pod, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		nc.rec.Eventf(a.Pod, corev1.EventTypeWarning, "NodeNotReady", "Node is not ready")
	}
	return nil
}
