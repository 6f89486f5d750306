// Package nodelifecycle watches node heartbeats (the Lease each kubelet
// renews in kube-node-lease, and the Ready condition's heartbeat) and
// turns silence and conditions into status and taints:
//
//	lease/node event ─▶ Observe: heartbeat changed? probe time := now (our clock)
//	every monitor period, per node ─▶ Plan(node, health, its pods, queued?, now) ─▶ actions:
//	   silent > grace ─▶ UpdateNodeStatus: Ready/MemoryPressure/DiskPressure/PIDPressure := Unknown
//	                     (alone: the rest waits for it to come back through the informer)
//	   Ready False    ─▶ UpdateTaints node.kubernetes.io/not-ready:NoSchedule, AwaitNoExecute
//	   Ready Unknown  ─▶ the same with node.kubernetes.io/unreachable
//	   Ready True     ─▶ the NoExecute taints come off, CancelNoExecute (out of the TaintQueue)
//	   conditions     ─▶ matching NoSchedule taints (memory/disk/pid pressure, ...)
//	   not Ready      ─▶ MarkPodNotReady for each of its Ready pods
//	every monitor period, and when a node is queued ─▶ zone pass:
//	   JudgeZones(nodes by ZoneKey: topology.kubernetes.io/region and zone, or their
//	      failure-domain.beta.kubernetes.io forms): Normal / PartialDisruption / FullDisruption
//	      ─▶ per zone rate: --node-eviction-rate; partial: --secondary-node-eviction-rate, 0 if small
//	      ─▶ every zone fully disrupted: no NoExecute taint anywhere (ZoneTaints takes them off)
//	   TaintQueue.Pop(now) ─▶ ZoneTaints: the nodes whose turn came get their NoExecute taint
//	   ─▶ requeue when the next token is due
//
// The NoExecute taint is what evicts a node's pods (see tainteviction),
// so, as in Kubernetes, it is rate limited per zone, and withheld when
// the whole cluster looks down (the control plane is then more likely
// cut off than every node dead).
//
// Silence is judged by when this controller saw the heartbeat change,
// not by the timestamps in it, so the clocks of nodes do not matter.
//
// The driver performs the actions through a framework.Sink (apiSink:
// the API writes, the events and the TaintQueue); a FakeSink in tests.
package nodelifecycle

import (
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/controller/framework"
)

// Health is what the controller remembers of one node's heartbeats.
type Health struct {
	// ProbeTime is when (on our clock) a heartbeat last changed.
	ProbeTime time.Time
	// ReadyHeartbeat and LeaseRenew are the last heartbeats seen.
	ReadyHeartbeat metav1.Time
	LeaseRenew     metav1.MicroTime
}

// Observe returns h updated for node and its lease (nil if none) at now.
func Observe(h Health, node *corev1.Node, lease *coordinationv1.Lease, now time.Time) Health {
	if h.ProbeTime.IsZero() {
		h.ProbeTime = now // first sight: the grace period starts now
	}
	if c := condition(node, corev1.NodeReady); c != nil && !c.LastHeartbeatTime.Equal(&h.ReadyHeartbeat) {
		h.ReadyHeartbeat = c.LastHeartbeatTime
		h.ProbeTime = now
	}
	if lease != nil && lease.Spec.RenewTime != nil && !lease.Spec.RenewTime.Equal(&h.LeaseRenew) {
		h.LeaseRenew = *lease.Spec.RenewTime
		h.ProbeTime = now
	}
	return h
}

// Config is the policy.
type Config struct {
	// GracePeriod is how long a node that reported Ready may be silent.
	GracePeriod time.Duration
	// StartupGracePeriod is how long a node that never reported may be.
	StartupGracePeriod time.Duration
	// MonitorPeriod is how often every node is checked, and the zones.
	MonitorPeriod time.Duration
	// Eviction rate limits the NoExecute taints per zone, every field as
	// given (DefaultEvictionConfig has Kubernetes' defaults).
	Eviction EvictionConfig
}

// Taint keys the controller manages.
const (
	TaintNotReady           = corev1.TaintNodeNotReady
	TaintUnreachable        = corev1.TaintNodeUnreachable
	TaintMemoryPressure     = corev1.TaintNodeMemoryPressure
	TaintDiskPressure       = corev1.TaintNodeDiskPressure
	TaintPIDPressure        = corev1.TaintNodePIDPressure
	TaintNetworkUnavailable = corev1.TaintNodeNetworkUnavailable
	TaintUnschedulable      = corev1.TaintNodeUnschedulable
)

// ActionType says what an Action does.
type ActionType string

// The actions of a node's sync and of the zone pass.
const (
	// ReportNotReady records the event NodeNotReady: Ready just left True.
	ReportNotReady ActionType = "ReportNotReady"
	// UpdateNodeStatus writes Node, its conditions set to Unknown.
	UpdateNodeStatus ActionType = "UpdateNodeStatus"
	// UpdateTaints writes Node with its new taint list (maybe empty).
	UpdateTaints ActionType = "UpdateTaints"
	// AwaitNoExecute queues Node in Zone's TaintQueue: it needs a
	// NoExecute taint it lacks, and waits for its zone's turn.
	AwaitNoExecute ActionType = "AwaitNoExecute"
	// CancelNoExecute takes Node out of the TaintQueue: it no longer
	// needs the taint.
	CancelNoExecute ActionType = "CancelNoExecute"
	// MarkPodNotReady writes Pod's status with Ready=False: its node is
	// not Ready.
	MarkPodNotReady ActionType = "MarkPodNotReady"
)

// Action is one step for the driver.
type Action struct {
	Type ActionType
	Node *corev1.Node
	Zone string
	Pod  *corev1.Pod
}

// String names the action and its target, as "UpdateTaints n1".
func (a Action) String() string {
	if a.Pod != nil {
		return string(a.Type) + " " + a.Pod.Namespace + "/" + a.Pod.Name
	}
	return string(a.Type) + " " + a.Node.Name
}

// Output is what to do about one node, and when to look again.
type Output = framework.Output[Action]

// Input is what Plan judges one node by.
type Input struct {
	Node   *corev1.Node
	Health Health
	// Pods are the pods bound to Node.
	Pods []*corev1.Pod
	// Queued says Node waits in the TaintQueue, in zone QueuedIn.
	Queued   bool
	QueuedIn string
}

// unknownConditions are set to Unknown when a node goes silent.
var unknownConditions = []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure}

// Plan plans the status and taints of a node at now. Conditions going
// Unknown are written alone: the rest waits for the write to come back
// through the informer, so the zone pass judges the node as the cache
// shows. Otherwise it looks again when the grace period would run out.
func Plan(in Input, cfg Config, now time.Time) Output {
	var out Output
	node, h := in.Node, in.Health
	ready := condition(node, corev1.NodeReady)
	grace := cfg.GracePeriod
	if ready == nil {
		grace = cfg.StartupGracePeriod
	}
	wasReady := ready != nil && ready.Status == corev1.ConditionTrue
	var status *corev1.Node
	if now.Sub(h.ProbeTime) > grace {
		cp := node.DeepCopy()
		changed := false
		t := metav1.NewTime(now)
		for _, typ := range unknownConditions {
			c := condition(cp, typ)
			switch {
			case c == nil:
				cp.Status.Conditions = append(cp.Status.Conditions, corev1.NodeCondition{Type: typ, Status: corev1.ConditionUnknown,
					Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.", LastHeartbeatTime: cp.CreationTimestamp, LastTransitionTime: t})
				changed = true
			case c.Status != corev1.ConditionUnknown:
				c.Status, c.Reason, c.Message, c.LastTransitionTime = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.", t
				changed = true
			}
		}
		if changed {
			status = cp
		}
	}
	act := func(a Action) { out.Actions = append(out.Actions, a) }
	if wasReady && status != nil {
		act(Action{Type: ReportNotReady, Node: node})
	}
	if status != nil {
		act(Action{Type: UpdateNodeStatus, Node: status})
		return out
	}
	taints, changed, await := desiredTaints(node, now, false)
	if changed {
		cp := node.DeepCopy()
		cp.Spec.Taints = taints
		act(Action{Type: UpdateTaints, Node: cp})
	}
	switch zone := ZoneKey(node); {
	case await && !(in.Queued && in.QueuedIn == zone):
		act(Action{Type: AwaitNoExecute, Node: node, Zone: zone})
	case !await && in.Queued:
		act(Action{Type: CancelNoExecute, Node: node})
	}
	if ready != nil && ready.Status != corev1.ConditionTrue {
		for _, p := range in.Pods {
			if !framework.IsPodReady(p) || framework.IsPodTerminal(p) {
				continue
			}
			cp := p.DeepCopy()
			for i := range cp.Status.Conditions {
				if cp.Status.Conditions[i].Type == corev1.PodReady {
					cp.Status.Conditions[i].Status = corev1.ConditionFalse
					cp.Status.Conditions[i].LastTransitionTime = metav1.NewTime(now)
				}
			}
			act(Action{Type: MarkPodNotReady, Node: node, Pod: cp})
		}
	}
	out.RequeueAfter = h.ProbeTime.Add(grace).Sub(now) + time.Millisecond
	if out.RequeueAfter <= 0 {
		out.RequeueAfter = cfg.MonitorPeriod
	}
	return out
}

// ZoneTaints returns the taint writes of a zone pass at now, from the
// cached nodes: when the cluster just became all fully disrupted, every
// node's NoExecute taints come off; the due nodes (their zone's turn
// came) get theirs.
func ZoneTaints(nodes []*corev1.Node, enteredFullDisruption bool, due []string, now time.Time) []Action {
	var out []Action
	update := func(n *corev1.Node, taints []corev1.Taint) {
		cp := n.DeepCopy()
		cp.Spec.Taints = taints
		out = append(out, Action{Type: UpdateTaints, Node: cp})
	}
	if enteredFullDisruption {
		for _, n := range nodes {
			if taints, had := withoutNoExecute(n); had {
				update(n, taints)
			}
		}
	}
	for _, name := range due {
		i := slices.IndexFunc(nodes, func(n *corev1.Node) bool { return n.Name == name })
		if i < 0 {
			continue // gone
		}
		if taints, changed, _ := desiredTaints(nodes[i], now, true); changed {
			update(nodes[i], taints)
		}
	}
	return out
}

// noExecuteKey returns the NoExecute taint n's Ready condition calls for:
// not-ready when False, unreachable when Unknown, none otherwise.
func noExecuteKey(n *corev1.Node) string {
	if c := condition(n, corev1.NodeReady); c != nil {
		switch c.Status {
		case corev1.ConditionFalse:
			return TaintNotReady
		case corev1.ConditionUnknown:
			return TaintUnreachable
		}
	}
	return ""
}

// desiredTaints returns n's taints with the managed ones matching its
// conditions, and whether that differs from what it has. The NoSchedule
// taints follow the conditions at once; so does a NoExecute taint coming
// off, or replacing the other one (not-ready and unreachable swap, as
// in Kubernetes). A NoExecute taint the node lacks altogether evicts its
// pods, so it is added only with addNoExecute (its zone's turn came);
// otherwise awaitNoExecute reports that it is due.
func desiredTaints(n *corev1.Node, now time.Time, addNoExecute bool) (taints []corev1.Taint, changed, awaitNoExecute bool) {
	type key struct {
		k string
		e corev1.TaintEffect
	}
	want := map[key]bool{}
	if k := noExecuteKey(n); k != "" {
		want[key{k, corev1.TaintEffectNoSchedule}] = true
		hasEither := false
		for _, t := range n.Spec.Taints {
			hasEither = hasEither || t.Effect == corev1.TaintEffectNoExecute && (t.Key == TaintNotReady || t.Key == TaintUnreachable)
		}
		if hasEither || addNoExecute {
			want[key{k, corev1.TaintEffectNoExecute}] = true
		} else {
			awaitNoExecute = true
		}
	}
	for typ, k := range map[corev1.NodeConditionType]string{corev1.NodeMemoryPressure: TaintMemoryPressure,
		corev1.NodeDiskPressure: TaintDiskPressure, corev1.NodePIDPressure: TaintPIDPressure, corev1.NodeNetworkUnavailable: TaintNetworkUnavailable} {
		if c := condition(n, typ); c != nil && c.Status == corev1.ConditionTrue {
			want[key{k, corev1.TaintEffectNoSchedule}] = true
		}
	}
	if n.Spec.Unschedulable {
		want[key{TaintUnschedulable, corev1.TaintEffectNoSchedule}] = true
	}
	managed := func(k string) bool {
		return slices.Contains([]string{TaintNotReady, TaintUnreachable, TaintMemoryPressure, TaintDiskPressure, TaintPIDPressure,
			TaintNetworkUnavailable, TaintUnschedulable}, k)
	}
	var out []corev1.Taint
	have := map[key]bool{}
	for _, t := range n.Spec.Taints {
		k := key{t.Key, t.Effect}
		if managed(t.Key) && !want[k] {
			changed = true
			continue
		}
		have[k] = true
		out = append(out, t)
	}
	ts := metav1.NewTime(now)
	for _, k := range []key{{TaintNotReady, corev1.TaintEffectNoSchedule}, {TaintNotReady, corev1.TaintEffectNoExecute},
		{TaintUnreachable, corev1.TaintEffectNoSchedule}, {TaintUnreachable, corev1.TaintEffectNoExecute},
		{TaintMemoryPressure, corev1.TaintEffectNoSchedule}, {TaintDiskPressure, corev1.TaintEffectNoSchedule},
		{TaintPIDPressure, corev1.TaintEffectNoSchedule}, {TaintNetworkUnavailable, corev1.TaintEffectNoSchedule},
		{TaintUnschedulable, corev1.TaintEffectNoSchedule}} {
		if want[k] && !have[k] {
			t := corev1.Taint{Key: k.k, Effect: k.e}
			if k.e == corev1.TaintEffectNoExecute {
				t.TimeAdded = &ts
			}
			out = append(out, t)
			changed = true
		}
	}
	return out, changed, awaitNoExecute
}

// withoutNoExecute returns n's taints less the NoExecute not-ready and
// unreachable ones, and whether it had any.
func withoutNoExecute(n *corev1.Node) ([]corev1.Taint, bool) {
	var out []corev1.Taint
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute && (t.Key == TaintNotReady || t.Key == TaintUnreachable) {
			continue
		}
		out = append(out, t)
	}
	return out, len(out) != len(n.Spec.Taints)
}

func condition(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}
