package nodelifecycle

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/controller/framework"
	"minik/controller/internal/testutil"
)

var cfg = Config{GracePeriod: 40 * time.Second, StartupGracePeriod: 60 * time.Second}

func lease(renew time.Time) *coordinationv1.Lease {
	t := metav1.NewMicroTime(renew)
	return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: &t}}
}

func TestObserve(t *testing.T) {
	t0 := testutil.T0
	node := testutil.Node("n").Condition(corev1.NodeReady, corev1.ConditionTrue, t0).Obj()
	cases := []struct {
		name string
		prev Health
		l    *coordinationv1.Lease
		now  time.Time
		want time.Time
	}{
		{"the first sight starts the clock", Health{}, nil, t0.Add(5 * time.Second), t0.Add(5 * time.Second)},
		{"a renewed lease moves the probe time to now, whatever its own timestamp", Health{ProbeTime: t0, ReadyHeartbeat: metav1.NewTime(t0), LeaseRenew: metav1.NewMicroTime(t0)},
			lease(t0.Add(-time.Hour)), t0.Add(30 * time.Second), t0.Add(30 * time.Second)},
		{"an unchanged lease and heartbeat keep the probe time", Health{ProbeTime: t0, ReadyHeartbeat: metav1.NewTime(t0), LeaseRenew: metav1.NewMicroTime(t0)},
			lease(t0), t0.Add(30 * time.Second), t0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Observe(tc.prev, node, tc.l, tc.now); !got.ProbeTime.Equal(tc.want) {
				t.Fatalf("probe time %v, want %v", got.ProbeTime, tc.want)
			}
		})
	}
}

func taintSet(ts []corev1.Taint) map[string]bool {
	m := map[string]bool{}
	for _, t := range ts {
		m[t.Key+":"+string(t.Effect)] = true
	}
	return m
}

func TestPlan(t *testing.T) {
	t0 := testutil.T0
	fresh := Health{ProbeTime: t0}
	cases := []struct {
		name         string
		node         *corev1.Node
		h            Health
		now          time.Time
		wantReady    corev1.ConditionStatus // "" if status is not rewritten
		wantTaints   []string               // nil: taints unchanged
		wantMarkPods bool
		wantAwait    bool // the NoExecute taint waits for the zone's turn
	}{
		{name: "a healthy node within the grace period is left alone",
			node: testutil.Node("n").Condition(corev1.NodeReady, corev1.ConditionTrue, t0).Obj(), h: fresh, now: t0.Add(39 * time.Second)},
		{name: "a silent node past the grace period goes Unknown, gets the unreachable NoSchedule taint and awaits the NoExecute one",
			node: testutil.Node("n").Condition(corev1.NodeReady, corev1.ConditionTrue, t0).Obj(), h: fresh, now: t0.Add(41 * time.Second),
			wantReady:    corev1.ConditionUnknown,
			wantTaints:   []string{"node.kubernetes.io/unreachable:NoSchedule"},
			wantMarkPods: true, wantAwait: true},
		{name: "a node that never reported gets the startup grace period",
			node: testutil.Node("n").Obj(), h: fresh, now: t0.Add(50 * time.Second)},
		{name: "a node that never reported and outlived the startup grace goes Unknown",
			node: testutil.Node("n").Obj(), h: fresh, now: t0.Add(61 * time.Second), wantReady: corev1.ConditionUnknown,
			wantTaints: []string{"node.kubernetes.io/unreachable:NoSchedule"}, wantMarkPods: true, wantAwait: true},
		{name: "a kubelet reporting NotReady gets the not-ready NoSchedule taint and awaits the NoExecute one",
			node: testutil.Node("n").Condition(corev1.NodeReady, corev1.ConditionFalse, t0).Obj(), h: fresh, now: t0,
			wantTaints: []string{"node.kubernetes.io/not-ready:NoSchedule"}, wantMarkPods: true, wantAwait: true},
		{name: "a NotReady node that has its NoExecute taint keeps it",
			node: testutil.Node("n").Condition(corev1.NodeReady, corev1.ConditionFalse, t0).Taint(TaintNotReady, corev1.TaintEffectNoExecute).
				Taint(TaintNotReady, corev1.TaintEffectNoSchedule).Obj(), h: fresh, now: t0, wantMarkPods: true},
		{name: "a tainted node going from NotReady to Unknown swaps not-ready for unreachable at once",
			node: testutil.Node("n").Condition(corev1.NodeReady, corev1.ConditionUnknown, t0).Taint(TaintNotReady, corev1.TaintEffectNoExecute).
				Taint(TaintNotReady, corev1.TaintEffectNoSchedule).Obj(), h: fresh, now: t0,
			wantTaints: []string{"node.kubernetes.io/unreachable:NoExecute", "node.kubernetes.io/unreachable:NoSchedule"}, wantMarkPods: true},
		{name: "pressure conditions get their NoSchedule taints",
			node: testutil.Node("n").Condition(corev1.NodeReady, corev1.ConditionTrue, t0).Condition(corev1.NodeMemoryPressure, corev1.ConditionTrue, t0).
				Condition(corev1.NodeDiskPressure, corev1.ConditionTrue, t0).Condition(corev1.NodePIDPressure, corev1.ConditionTrue, t0).Obj(), h: fresh, now: t0,
			wantTaints: []string{"node.kubernetes.io/memory-pressure:NoSchedule", "node.kubernetes.io/disk-pressure:NoSchedule", "node.kubernetes.io/pid-pressure:NoSchedule"}},
		{name: "a cordoned node gets the unschedulable taint",
			node: testutil.Node("n").Condition(corev1.NodeReady, corev1.ConditionTrue, t0).Unschedulable().Obj(), h: fresh, now: t0,
			wantTaints: []string{"node.kubernetes.io/unschedulable:NoSchedule"}},
		{name: "a node Ready again loses the managed taints and keeps the others",
			node: testutil.Node("n").Condition(corev1.NodeReady, corev1.ConditionTrue, t0).Taint(TaintUnreachable, corev1.TaintEffectNoExecute).
				Taint("dedicated", corev1.TaintEffectNoSchedule).Obj(), h: fresh, now: t0,
			wantTaints: []string{"dedicated:NoSchedule"}},
	}
	pod := testutil.Pod("p").Node("n").Ready(t0).Obj()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Node: tc.node, Health: tc.h, Pods: []*corev1.Pod{pod}}
			out := Plan(in, cfg, tc.now)
			status := find(out.Actions, UpdateNodeStatus)
			switch {
			case tc.wantReady == "" && status != nil:
				t.Errorf("status rewritten: %+v", status.Node.Status.Conditions)
			case tc.wantReady != "":
				if status == nil {
					t.Fatalf("status not rewritten: %v", out.Actions)
				}
				for _, typ := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
					if c := condition(status.Node, typ); c == nil || c.Status != tc.wantReady {
						t.Errorf("condition %s = %+v", typ, c)
					}
				}
				// The rest waits for the write to come back through the
				// informer: plan again on the node as written.
				if out.Actions[len(out.Actions)-1].Type != UpdateNodeStatus || out.RequeueAfter != 0 {
					t.Errorf("the status write is not the last action: %v, requeue %v", out.Actions, out.RequeueAfter)
				}
				in.Node = status.Node
				out = Plan(in, cfg, tc.now)
			}
			taints := find(out.Actions, UpdateTaints)
			if tc.wantTaints == nil {
				if taints != nil {
					t.Errorf("taints changed to %v", taints.Node.Spec.Taints)
				}
			} else {
				if taints == nil {
					t.Fatalf("taints unchanged, want %v", tc.wantTaints)
				}
				got := taintSet(taints.Node.Spec.Taints)
				if len(got) != len(tc.wantTaints) {
					t.Fatalf("taints %v, want %v", got, tc.wantTaints)
				}
				for _, w := range tc.wantTaints {
					if !got[w] {
						t.Errorf("missing taint %s in %v", w, got)
					}
				}
			}
			if await := find(out.Actions, AwaitNoExecute) != nil; await != tc.wantAwait {
				t.Errorf("AwaitNoExecute = %v, want %v", await, tc.wantAwait)
			}
			mark := find(out.Actions, MarkPodNotReady)
			if (mark != nil) != tc.wantMarkPods {
				t.Errorf("MarkPodNotReady = %v", mark)
			}
			if mark != nil && framework.IsPodReady(mark.Pod) {
				t.Errorf("pod marked still Ready: %+v", mark.Pod.Status.Conditions)
			}
		})
	}
}

// find returns the first action of type typ, nil if none.
func find(actions []Action, typ ActionType) *Action {
	for i := range actions {
		if actions[i].Type == typ {
			return &actions[i]
		}
	}
	return nil
}

func TestPlanQueueEventsAndRequeue(t *testing.T) {
	t0 := testutil.T0
	fresh := Health{ProbeTime: t0}
	notReady := testutil.Node("n").Condition(corev1.NodeReady, corev1.ConditionFalse, t0).Taint(TaintNotReady, corev1.TaintEffectNoSchedule).
		Label(corev1.LabelTopologyZone, "a").Obj()
	ready := testutil.Node("n").Condition(corev1.NodeReady, corev1.ConditionTrue, t0).Obj()
	unknown := testutil.Node("n").Condition(corev1.NodeReady, corev1.ConditionUnknown, t0).Condition(corev1.NodeMemoryPressure, corev1.ConditionUnknown, t0).
		Condition(corev1.NodeDiskPressure, corev1.ConditionUnknown, t0).Condition(corev1.NodePIDPressure, corev1.ConditionUnknown, t0).
		Taint(TaintUnreachable, corev1.TaintEffectNoSchedule).Taint(TaintUnreachable, corev1.TaintEffectNoExecute).Obj()
	withPeriod := cfg
	withPeriod.MonitorPeriod = 5 * time.Second
	cases := []struct {
		name        string
		in          Input
		now         time.Time
		want        []string
		wantRequeue time.Duration
	}{
		{name: "a node due for its NoExecute taint and queued in its zone already is not queued again",
			in: Input{Node: notReady, Health: fresh, Queued: true, QueuedIn: ZoneKey(notReady)}, now: t0, want: nil, wantRequeue: 40*time.Second + time.Millisecond},
		{name: "a node due for its NoExecute taint that moved zones is queued in its new one",
			in: Input{Node: notReady, Health: fresh, Queued: true, QueuedIn: ""}, now: t0, want: []string{"AwaitNoExecute n"}, wantRequeue: 40*time.Second + time.Millisecond},
		{name: "a Ready node still queued leaves the queue",
			in: Input{Node: ready, Health: fresh, Queued: true}, now: t0.Add(10 * time.Second), want: []string{"CancelNoExecute n"}, wantRequeue: 30*time.Second + time.Millisecond},
		{name: "a Ready node going silent reports NodeNotReady before its status is written, and waits for that write",
			in: Input{Node: ready, Health: fresh}, now: t0.Add(41 * time.Second), want: []string{"ReportNotReady n", "UpdateNodeStatus n"}},
		{name: "a silent node already Unknown and tainted is looked at again after the monitor period",
			in: Input{Node: unknown, Health: fresh}, now: t0.Add(time.Hour), want: nil, wantRequeue: 5 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := Plan(tc.in, withPeriod, tc.now)
			var got []string
			for _, a := range out.Actions {
				got = append(got, a.String())
			}
			if !slices.Equal(got, tc.want) || out.RequeueAfter != tc.wantRequeue {
				t.Errorf("actions %v requeue %v, want %v requeue %v", got, out.RequeueAfter, tc.want, tc.wantRequeue)
			}
		})
	}
}

func TestZoneTaints(t *testing.T) {
	t0 := testutil.T0
	tainted := testutil.Node("a").Condition(corev1.NodeReady, corev1.ConditionFalse, t0).Taint(TaintNotReady, corev1.TaintEffectNoSchedule).
		Taint(TaintNotReady, corev1.TaintEffectNoExecute).Obj()
	due := testutil.Node("b").Condition(corev1.NodeReady, corev1.ConditionFalse, t0).Taint(TaintNotReady, corev1.TaintEffectNoSchedule).Obj()
	nodes := []*corev1.Node{tainted, due}
	cases := []struct {
		name        string
		enteredFull bool
		due         []string
		want        []string // node: its taints after the write
	}{
		{"a due node gets its NoExecute taint", false, []string{"b"},
			[]string{"b: node.kubernetes.io/not-ready:NoExecute node.kubernetes.io/not-ready:NoSchedule"}},
		{"a due node gone from the cache is skipped", false, []string{"gone"}, nil},
		{"entering full disruption takes the NoExecute taints off", true, nil,
			[]string{"a: node.kubernetes.io/not-ready:NoSchedule"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, a := range ZoneTaints(nodes, tc.enteredFull, tc.due, t0) {
				keys := slices.Sorted(maps.Keys(taintSet(a.Node.Spec.Taints)))
				got = append(got, a.Node.Name+": "+strings.Join(keys, " "))
				if a.Type != UpdateTaints {
					t.Errorf("action %s", a)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("writes %q, want %q", got, tc.want)
			}
		})
	}
}
