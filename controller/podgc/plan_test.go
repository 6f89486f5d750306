package podgc

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik/controller/internal/testutil"
)

var now = testutil.T0.Add(time.Hour)

func nodeMap(nodes ...*corev1.Node) map[string]*corev1.Node {
	m := map[string]*corev1.Node{}
	for _, n := range nodes {
		m[n.Name] = n
	}
	return m
}

func TestQuarantineStep(t *testing.T) {
	const q = DefaultQuarantineTime
	cases := []struct {
		name     string
		state    Quarantine
		pods     []*corev1.Pod
		nodes    map[string]*corev1.Node
		want     Quarantine
		wantDue  []string
		wantWake time.Time
	}{
		{"a pod on a known node quarantines nothing",
			Quarantine{}, []*corev1.Pod{testutil.Pod("a").Node("n1").Obj()}, nodeMap(testutil.Node("n1").Obj()),
			Quarantine{}, nil, time.Time{}},
		{"a node missing from the cache enters quarantine now and is due after 40s",
			Quarantine{}, []*corev1.Pod{testutil.Pod("a").Node("gone").Obj(), testutil.Pod("b").Node("gone").Obj()}, nodeMap(),
			Quarantine{"gone": now}, nil, now.Add(q)},
		{"a quarantine keeps its start across passes",
			Quarantine{"gone": now.Add(-30 * time.Second)}, []*corev1.Pod{testutil.Pod("a").Node("gone").Obj()}, nodeMap(),
			Quarantine{"gone": now.Add(-30 * time.Second)}, nil, now.Add(10 * time.Second)},
		{"a quarantine of 40s is over",
			Quarantine{"gone": now.Add(-q)}, []*corev1.Pod{testutil.Pod("a").Node("gone").Obj()}, nodeMap(),
			Quarantine{"gone": now.Add(-q)}, []string{"gone"}, time.Time{}},
		{"a node back in the cache leaves quarantine",
			Quarantine{"late": now.Add(-q)}, []*corev1.Pod{testutil.Pod("a").Node("late").Obj()}, nodeMap(testutil.Node("late").Obj()),
			Quarantine{}, nil, time.Time{}},
		{"a node no pod names leaves quarantine",
			Quarantine{"gone": now.Add(-time.Second)}, []*corev1.Pod{testutil.Pod("a").Obj()}, nodeMap(),
			Quarantine{}, nil, time.Time{}},
		{"due nodes come in name order, the next wake is the earliest pending one",
			Quarantine{"z": now.Add(-time.Minute), "a": now.Add(-time.Minute), "m": now.Add(-20 * time.Second)},
			[]*corev1.Pod{testutil.Pod("1").Node("z").Obj(), testutil.Pod("2").Node("a").Obj(), testutil.Pod("3").Node("m").Obj(), testutil.Pod("4").Node("new").Obj()}, nodeMap(),
			Quarantine{"z": now.Add(-time.Minute), "a": now.Add(-time.Minute), "m": now.Add(-20 * time.Second), "new": now},
			[]string{"a", "z"}, now.Add(20 * time.Second)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, due, wake := tc.state.Step(tc.pods, tc.nodes, now, q)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("state = %v, want %v", got, tc.want)
			}
			if !slices.Equal(due, tc.wantDue) {
				t.Errorf("due = %v, want %v", due, tc.wantDue)
			}
			if !wake.Equal(tc.wantWake) {
				t.Errorf("wake = %v, want %v", wake, tc.wantWake)
			}
		})
	}
}

func TestRequarantineRestartsTheClock(t *testing.T) {
	q := Quarantine{"n": now.Add(-time.Minute)}
	q.Requarantine("n", now)
	q.Requarantine("other", now)
	if want := (Quarantine{"n": now}); fmt.Sprint(q) != fmt.Sprint(want) {
		t.Fatalf("state = %v, want %v", q, want)
	}
}

type want struct {
	pod    string
	reason Reason
}

func TestCollect(t *testing.T) {
	ready := testutil.Node("ready").Condition(corev1.NodeReady, corev1.ConditionTrue, now).Obj()
	notReady := testutil.Node("down").Condition(corev1.NodeReady, corev1.ConditionFalse, now).Obj()
	outOfService := testutil.Node("oos").Condition(corev1.NodeReady, corev1.ConditionFalse, now).Taint(corev1.TaintNodeOutOfService, corev1.TaintEffectNoExecute).Obj()
	readyOOS := testutil.Node("rdyoos").Condition(corev1.NodeReady, corev1.ConditionTrue, now).Taint(corev1.TaintNodeOutOfService, corev1.TaintEffectNoExecute).Obj()
	nodes := nodeMap(ready, notReady, outOfService, readyOOS)
	evicted := testutil.Pod("evicted").Node("ready").Phase(corev1.PodFailed).Created(now).Obj()
	evicted.Status.Reason = "Evicted"
	cases := []struct {
		name      string
		pods      []*corev1.Pod
		gone      map[string]bool
		threshold int
		want      []want
	}{
		{"running pods on live nodes are kept", []*corev1.Pod{testutil.Pod("a").Node("ready").Ready(now).Obj()}, nil, 1, nil},
		{"pods on a gone node are orphans", []*corev1.Pod{testutil.Pod("a").Node("gone").Ready(now).Obj(), testutil.Pod("b").Node("ready").Obj()},
			map[string]bool{"gone": true}, 0, []want{{"a", Orphaned}}},
		{"pods on a node still in quarantine are kept", []*corev1.Pod{testutil.Pod("a").Node("missing").Obj()}, nil, 0, nil},
		{"a node found again by the cache is no orphan's", []*corev1.Pod{testutil.Pod("a").Node("ready").Obj()}, map[string]bool{"ready": true}, 0, nil},
		{"terminated pods over the threshold go, oldest first",
			[]*corev1.Pod{
				testutil.Pod("new").Node("ready").Phase(corev1.PodSucceeded).Created(now).Obj(),
				testutil.Pod("old").Node("ready").Phase(corev1.PodFailed).Created(now.Add(-time.Hour)).Obj(),
				testutil.Pod("mid").Node("ready").Phase(corev1.PodSucceeded).Created(now.Add(-time.Minute)).Obj(),
				testutil.Pod("running").Node("ready").Ready(now).Created(now.Add(-2 * time.Hour)).Obj(),
			}, nil, 1, []want{{"old", Terminated}, {"mid", Terminated}}},
		{"evicted pods go before older terminated ones",
			[]*corev1.Pod{testutil.Pod("old").Node("ready").Phase(corev1.PodSucceeded).Created(now.Add(-time.Hour)).Obj(), evicted},
			nil, 1, []want{{"evicted", Terminated}}},
		{"equal creation times are broken by name",
			[]*corev1.Pod{testutil.Pod("b").Phase(corev1.PodSucceeded).Obj(), testutil.Pod("a").Phase(corev1.PodSucceeded).Obj()},
			nil, 1, []want{{"a", Terminated}}},
		{"a threshold of 0 keeps every terminated pod",
			[]*corev1.Pod{testutil.Pod("a").Phase(corev1.PodSucceeded).Obj(), testutil.Pod("b").Phase(corev1.PodFailed).Obj()}, nil, 0, nil},
		{"terminating pods on a not-ready out-of-service node go",
			[]*corev1.Pod{testutil.Pod("a").Node("oos").Deleting().Obj(), testutil.Pod("b").Node("oos").Ready(now).Obj()},
			nil, 0, []want{{"a", TerminatingOutOfService}}},
		{"terminating pods on a not-ready node without the taint wait for their kubelet",
			[]*corev1.Pod{testutil.Pod("a").Node("down").Deleting().Obj()}, nil, 0, nil},
		{"terminating pods on a ready node with the taint wait for their kubelet",
			[]*corev1.Pod{testutil.Pod("a").Node("rdyoos").Deleting().Obj()}, nil, 0, nil},
		{"terminating pods that were never scheduled go",
			[]*corev1.Pod{testutil.Pod("a").Deleting().Obj(), testutil.Pod("b").Obj()}, nil, 0, []want{{"a", TerminatingUnscheduled}}},
		{"a pod meeting several reasons is listed once, for the first",
			[]*corev1.Pod{testutil.Pod("a").Node("gone").Phase(corev1.PodFailed).Deleting().Obj(), testutil.Pod("b").Node("gone").Phase(corev1.PodFailed).Obj()},
			map[string]bool{"gone": true}, 1, []want{{"a", Terminated}, {"b", Orphaned}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []want
			for _, d := range Collect(tc.pods, nodes, tc.gone, tc.threshold) {
				got = append(got, want{d.Pod.Name, d.Reason})
				if (d.Reason == Orphaned) != (d.Condition != nil) {
					t.Errorf("%s: condition %v for reason %q", d.Pod.Name, d.Condition, d.Reason)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Collect = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFailedStatus(t *testing.T) {
	cond := &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByPodGC", Message: "PodGC: node no longer exists"}
	t.Run("a running pod becomes Failed with the condition", func(t *testing.T) {
		st := FailedStatus(testutil.Pod("a").Ready(testutil.T0).Obj(), cond, now)
		if st == nil || st.Phase != corev1.PodFailed {
			t.Fatalf("status = %+v, want phase Failed", st)
		}
		var found *corev1.PodCondition
		for i := range st.Conditions {
			if st.Conditions[i].Type == corev1.DisruptionTarget {
				found = &st.Conditions[i]
			}
		}
		if found == nil || found.Reason != "DeletionByPodGC" || !found.LastTransitionTime.Time.Equal(now) || len(st.Conditions) != 2 {
			t.Fatalf("conditions = %+v", st.Conditions)
		}
	})
	t.Run("an ended pod is not rewritten", func(t *testing.T) {
		if st := FailedStatus(testutil.Pod("a").Phase(corev1.PodSucceeded).Obj(), cond, now); st != nil {
			t.Fatalf("status = %+v, want nil", st)
		}
	})
	t.Run("without a condition only the phase changes", func(t *testing.T) {
		st := FailedStatus(testutil.Pod("a").Obj(), nil, now)
		if st == nil || st.Phase != corev1.PodFailed || len(st.Conditions) != 0 {
			t.Fatalf("status = %+v", st)
		}
	})
}
