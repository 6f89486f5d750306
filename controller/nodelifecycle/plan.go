// Package nodelifecycle watches node heartbeats (the Lease each kubelet
// renews in kube-node-lease, and the Ready condition's heartbeat) and
// turns silence and conditions into status and taints:
//
//	lease/node event ─▶ Observe: heartbeat changed? probe time := now (our clock)
//	every monitor period, per node ─▶ Plan(node, health, now)
//	   silent > grace ─▶ Ready/MemoryPressure/DiskPressure/PIDPressure := Unknown
//	   Ready False    ─▶ taint node.kubernetes.io/not-ready:NoSchedule, and queue for :NoExecute
//	   Ready Unknown  ─▶ the same with node.kubernetes.io/unreachable
//	   Ready True     ─▶ the NoExecute taints come off, out of the queue
//	   conditions     ─▶ matching NoSchedule taints (memory/disk/pid pressure, ...)
//	   not Ready      ─▶ its pods get Ready=False
//	every monitor period, and when a node is queued ─▶ zone pass:
//	   JudgeZones(nodes by topology.kubernetes.io/zone): Normal / PartialDisruption / FullDisruption
//	      ─▶ per zone rate: --node-eviction-rate; partial: --secondary-node-eviction-rate, 0 if small
//	      ─▶ every zone fully disrupted: no NoExecute taint anywhere (the taints come off)
//	   TaintQueue.Pop(now) ─▶ the nodes whose turn came get their NoExecute taint
//	   ─▶ requeue when the next token is due
//
// The NoExecute taint is what evicts a node's pods (see tainteviction),
// so, as in Kubernetes, it is rate limited per zone, and withheld when
// the whole cluster looks down (the control plane is then more likely
// cut off than every node dead).
//
// Silence is judged by when this controller saw the heartbeat change,
// not by the timestamps in it, so the clocks of nodes do not matter.
package nodelifecycle

import (
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// Output is what to write for one node.
type Output struct {
	// Status, if not nil, is the node with its conditions set to Unknown.
	Status *corev1.Node
	// TaintsChanged says Taints is the node's new taint list (maybe empty).
	TaintsChanged bool
	Taints        []corev1.Taint
	// MarkPodsNotReady says the node is not Ready: its pods must not be.
	MarkPodsNotReady bool
	// BecameNotReady says Ready just left True (for an event).
	BecameNotReady bool
	// AwaitNoExecute says the node should get a NoExecute taint it lacks:
	// it waits for its turn in its zone's TaintQueue.
	AwaitNoExecute bool
}

// unknownConditions are set to Unknown when a node goes silent.
var unknownConditions = []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure}

// Plan plans the status and taints of node at now.
func Plan(node *corev1.Node, h Health, cfg Config, now time.Time) Output {
	var plan Output
	n := node
	ready := condition(node, corev1.NodeReady)
	grace := cfg.GracePeriod
	if ready == nil {
		grace = cfg.StartupGracePeriod
	}
	wasReady := ready != nil && ready.Status == corev1.ConditionTrue
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
			plan.Status = cp
			n = cp
		}
	}
	ready = condition(n, corev1.NodeReady)
	if ready == nil || ready.Status != corev1.ConditionTrue {
		plan.MarkPodsNotReady = ready != nil
		plan.BecameNotReady = wasReady
	}
	plan.Taints, plan.TaintsChanged, plan.AwaitNoExecute = desiredTaints(n, now, false)
	return plan
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
