package nodelifecycle

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := Plan(tc.node, tc.h, cfg, tc.now)
			switch {
			case tc.wantReady == "" && plan.Status != nil:
				t.Errorf("status rewritten: %+v", plan.Status.Status.Conditions)
			case tc.wantReady != "":
				if plan.Status == nil {
					t.Fatal("status not rewritten")
				}
				for _, typ := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
					if c := condition(plan.Status, typ); c == nil || c.Status != tc.wantReady {
						t.Errorf("condition %s = %+v", typ, c)
					}
				}
			}
			if tc.wantTaints == nil {
				if plan.TaintsChanged {
					t.Errorf("taints changed to %v", plan.Taints)
				}
			} else {
				got := taintSet(plan.Taints)
				if !plan.TaintsChanged || len(got) != len(tc.wantTaints) {
					t.Fatalf("taints %v, want %v", got, tc.wantTaints)
				}
				for _, w := range tc.wantTaints {
					if !got[w] {
						t.Errorf("missing taint %s in %v", w, got)
					}
				}
			}
			if plan.AwaitNoExecute != tc.wantAwait {
				t.Errorf("AwaitNoExecute = %v, want %v", plan.AwaitNoExecute, tc.wantAwait)
			}
			if plan.MarkPodsNotReady != tc.wantMarkPods {
				t.Errorf("MarkPodsNotReady = %v", plan.MarkPodsNotReady)
			}
		})
	}
}
