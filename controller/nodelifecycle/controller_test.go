package nodelifecycle

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"minik/client"
	"minik/controller/framework"
	"minik/controller/internal/testutil"
)

// newTestController returns a controller over caches holding nodes and
// pods, whose writes go to a FakeSink refusing the actions named in fail
// (by their String). Every node was last heard from at T0.
func newTestController(nodes []*corev1.Node, pods []*corev1.Pod, fail ...string) (*Controller, *framework.FakeSink[Action]) {
	inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
	inf.Nodes.Replace(nodes)
	inf.Pods.Replace(pods)
	cfg := Config{GracePeriod: 40 * time.Second, StartupGracePeriod: time.Minute, MonitorPeriod: 5 * time.Second, Eviction: DefaultEvictionConfig()}
	nc := New(&client.Client{}, inf, nil, testingclock.NewFakeClock(testutil.T0), cfg, slog.New(slog.DiscardHandler))
	for _, n := range nodes {
		nc.healths[n.Name] = Observe(Health{}, n, nil, testutil.T0)
	}
	sink := &framework.FakeSink[Action]{Fail: func(a Action) error {
		if slices.Contains(fail, a.String()) {
			return errors.New("refused")
		}
		return nil
	}}
	nc.sink = sink
	return nc, sink
}

func strs(actions []Action) []string {
	var out []string
	for _, a := range actions {
		out = append(out, a.String())
	}
	return out
}

// TestSyncRunsThePlanThroughTheSink drives a node's sync over caches
// filled by hand and a FakeSink: no apiserver.
func TestSyncRunsThePlanThroughTheSink(t *testing.T) {
	t0 := testutil.T0
	notReady := testutil.Node("n").Condition(corev1.NodeReady, corev1.ConditionFalse, t0).Obj()
	pods := []*corev1.Pod{testutil.Pod("p1").Node("n").Ready(t0).Obj(), testutil.Pod("p2").Node("n").Ready(t0).Obj(),
		testutil.Pod("done").Node("n").Phase(corev1.PodSucceeded).Obj()}
	cases := []struct {
		name     string
		node     *corev1.Node
		now      time.Time
		fail     []string
		wantDone []string // in order, but the pods' order is the cache's
		wantErr  string
	}{
		{name: "a Ready node gone silent only reports it and writes its status: the rest waits for that write",
			node: testutil.Node("n").Condition(corev1.NodeReady, corev1.ConditionTrue, t0).Obj(), now: t0.Add(41 * time.Second),
			wantDone: []string{"ReportNotReady n", "UpdateNodeStatus n"}},
		{name: "a NotReady node is tainted NoSchedule, waits for its NoExecute taint, and its running pods are marked",
			node: notReady, now: t0,
			wantDone: []string{"UpdateTaints n", "AwaitNoExecute n", "MarkPodNotReady default/p1", "MarkPodNotReady default/p2"}},
		{name: "a refused taint write ends the sync: the node is not queued, no pod is marked",
			node: notReady, now: t0, fail: []string{"UpdateTaints n"}, wantErr: "UpdateTaints n: refused"},
		{name: "a refused pod does not keep the others Ready",
			node: notReady, now: t0, fail: []string{"MarkPodNotReady default/p1"},
			wantDone: []string{"UpdateTaints n", "AwaitNoExecute n", "MarkPodNotReady default/p2"}, wantErr: "MarkPodNotReady default/p1: refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc, sink := newTestController([]*corev1.Node{tc.node}, pods, tc.fail...)
			nc.clock.(*testingclock.FakeClock).SetTime(tc.now)
			_, err := nc.sync(context.Background(), "n")
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("sync error %v, want one containing %q", err, tc.wantErr)
			}
			done := strs(sink.Done())
			slices.Sort(done[min(2, len(done)):]) // the pods
			if !slices.Equal(done, tc.wantDone) {
				t.Errorf("actions done %v, want %v", done, tc.wantDone)
			}
		})
	}
}

// TestSyncZonesTaintsTheDueNodesThroughTheSink runs the zone pass over
// two zones, each with a Ready node and a NotReady one queued: each
// zone's one token lets its node through, and a refused write does not
// hold back the other zone's.
func TestSyncZonesTaintsTheDueNodesThroughTheSink(t *testing.T) {
	t0 := testutil.T0
	node := func(name, zone string, st corev1.ConditionStatus) *corev1.Node {
		n := testutil.Node(name).Condition(corev1.NodeReady, st, t0).Label(corev1.LabelTopologyZone, zone).Obj()
		if st != corev1.ConditionTrue {
			n.Spec.Taints = []corev1.Taint{{Key: TaintNotReady, Effect: corev1.TaintEffectNoSchedule}}
		}
		return n
	}
	nodes := []*corev1.Node{node("a1", "a", corev1.ConditionTrue), node("a2", "a", corev1.ConditionFalse),
		node("b1", "b", corev1.ConditionTrue), node("b2", "b", corev1.ConditionFalse)}
	cases := []struct {
		name     string
		fail     []string
		wantDone []string
		wantErr  string
	}{
		{name: "each zone's due node gets its NoExecute taint", wantDone: []string{"UpdateTaints a2", "UpdateTaints b2"}},
		{name: "a refused write does not hold back the other zone's", fail: []string{"UpdateTaints a2"},
			wantDone: []string{"UpdateTaints b2"}, wantErr: "UpdateTaints a2: refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc, sink := newTestController(nodes, nil, tc.fail...)
			for _, n := range []*corev1.Node{nodes[1], nodes[3]} {
				nc.tainting.Add(ZoneKey(n), n.Name)
			}
			_, err := nc.syncZones(context.Background(), zonesKey)
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("zone pass error %v, want one containing %q", err, tc.wantErr)
			}
			if done := strs(sink.Done()); !slices.Equal(done, tc.wantDone) {
				t.Errorf("actions done %v, want %v", done, tc.wantDone)
			}
			for _, a := range sink.Done() {
				if !slices.ContainsFunc(a.Node.Spec.Taints, func(t corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }) {
					t.Errorf("%s without a NoExecute taint: %v", a, a.Node.Spec.Taints)
				}
			}
		})
	}
}
