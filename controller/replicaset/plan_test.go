package replicaset

import (
	"errors"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"minik/controller/internal/synctest"
	"minik/controller/internal/testutil"
)

var rs = &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "rs-uid"}}

func workload(replicas int32, minReady int32) Workload {
	return Workload{Meta: rs, Replicas: replicas, Selector: labels.SelectorFromSet(labels.Set{"app": "web"}),
		TemplateLabels: map[string]string{"app": "web", "tier": "front"}, MinReadySeconds: minReady, Generation: 4}
}

func pod(name string) *testutil.PodBuilder {
	return testutil.Pod(name).Label("app", "web").Owner(rs, "apps/v1", "ReplicaSet")
}

func TestPlan(t *testing.T) {
	now := testutil.T0.Add(time.Hour)
	cases := []struct {
		name        string
		w           Workload
		pods        []*corev1.Pod
		satisfied   bool
		wantCreate  int
		wantDelete  []string
		wantAdopt   []string
		wantStatus  Status
		wantRequeue time.Duration
	}{
		{name: "too few pods: create the difference", w: workload(3, 0), satisfied: true,
			pods:       []*corev1.Pod{pod("a").Ready(testutil.T0).Obj()},
			wantCreate: 2, wantStatus: Status{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 4}},
		{name: "creations are capped at BurstReplicas per sync", w: workload(3000, 0), satisfied: true,
			wantCreate: BurstReplicas, wantStatus: Status{ObservedGeneration: 4}},
		{name: "unsatisfied expectations create nothing but still report status", w: workload(3, 0), satisfied: false,
			pods: []*corev1.Pod{pod("a").Obj()}, wantStatus: Status{Replicas: 1, ObservedGeneration: 4}},
		{name: "too many pods: delete unscheduled, then pending, then not ready, then newest", w: workload(1, 0), satisfied: true,
			pods: []*corev1.Pod{
				pod("old-ready").Node("n").Ready(testutil.T0).Obj(),
				pod("new-ready").Node("n").Ready(testutil.T0).Created(testutil.T0.Add(time.Minute)).Obj(),
				pod("not-ready").Node("n").Phase(corev1.PodRunning).Obj(),
				pod("pending").Node("n").Obj(),
				pod("unscheduled").Obj(),
			},
			wantDelete: []string{"unscheduled", "pending", "not-ready", "new-ready"},
			wantStatus: Status{Replicas: 5, ReadyReplicas: 2, AvailableReplicas: 2, ObservedGeneration: 4}},
		{name: "finished and terminating pods do not count", w: workload(2, 0), satisfied: true,
			pods:       []*corev1.Pod{pod("done").Phase(corev1.PodSucceeded).Obj(), pod("failed").Phase(corev1.PodFailed).Obj(), pod("dying").Deleting().Obj(), pod("a").Obj()},
			wantCreate: 1, wantStatus: Status{Replicas: 1, ObservedGeneration: 4}},
		{name: "a matching orphan is adopted and counted", w: workload(1, 0), satisfied: true,
			pods:      []*corev1.Pod{testutil.Pod("orphan").Label("app", "web").Obj()},
			wantAdopt: []string{"orphan"}, wantStatus: Status{Replicas: 1, ObservedGeneration: 4}},
		{name: "fully labeled counts pods with every template label", w: workload(2, 0), satisfied: true,
			pods:       []*corev1.Pod{pod("a").Label("tier", "front").Obj(), pod("b").Obj()},
			wantStatus: Status{Replicas: 2, FullyLabeledReplicas: 1, ObservedGeneration: 4}},
		{name: "a pod ready for less than minReadySeconds is not available, and the sync comes back when it will be", w: workload(1, 60), satisfied: true,
			pods:        []*corev1.Pod{pod("a").Ready(now.Add(-20 * time.Second)).Obj()},
			wantStatus:  Status{Replicas: 1, ReadyReplicas: 1, ObservedGeneration: 4},
			wantRequeue: 41 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := Plan(tc.w, tc.pods, tc.satisfied, now)
			plan := split(t, out)
			if plan.create != tc.wantCreate {
				t.Errorf("create %d, want %d", plan.create, tc.wantCreate)
			}
			if got := testutil.Names(plan.delete); !slices.Equal(got, tc.wantDelete) && len(got)+len(tc.wantDelete) > 0 {
				t.Errorf("delete %v, want %v", got, tc.wantDelete)
			}
			if got := testutil.Names(plan.adopt); !slices.Equal(got, tc.wantAdopt) && len(got)+len(tc.wantAdopt) > 0 {
				t.Errorf("adopt %v, want %v", got, tc.wantAdopt)
			}
			if plan.status.Status != tc.wantStatus {
				t.Errorf("status %+v, want %+v", plan.status.Status, tc.wantStatus)
			}
			if out.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeue %v, want %v", out.RequeueAfter, tc.wantRequeue)
			}
		})
	}
}

// planned is a plan's actions by kind.
type planned struct {
	create        int
	delete, adopt []*corev1.Pod
	status        Action
}

// split sorts out's actions by kind, checking they come in the order
// the driver needs: claims, then creates or deletes, then the status.
func split(t *testing.T, out Output) planned {
	t.Helper()
	var p planned
	synctest.CheckOrder(t, out.Actions, func(a Action) ActionType { return a.Type }, []ActionType{AdoptPod, ReleasePod, CreatePods, DeletePods, UpdateStatus})
	for _, a := range out.Actions {
		switch a.Type {
		case AdoptPod:
			p.adopt = append(p.adopt, a.Pod)
		case CreatePods:
			p.create = a.Count
		case DeletePods:
			p.delete = a.Pods
		case UpdateStatus:
			p.status = a
		}
	}
	if n := len(out.Actions); n == 0 || slices.IndexFunc(out.Actions, func(a Action) bool { return a.Type == UpdateStatus }) != n-1 {
		t.Fatalf("actions %v: the status must come once, last", out.Actions)
	}
	return p
}

func TestSlowStartBatches(t *testing.T) {
	cases := []struct {
		name     string
		n, first int
		want     []int
	}{
		{"nothing to create makes no batch", 0, 1, nil},
		{"one pod is one batch", 1, 1, []int{1}},
		{"batches double from 1 and the last takes the rest", 10, 1, []int{1, 2, 4, 3}},
		{"500 pods from 1 take 9 batches", 500, 1, []int{1, 2, 4, 8, 16, 32, 64, 128, 245}},
		{"a later start skips the small batches", 500, 128, []int{128, 256, 116}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := SlowStartBatches(tc.n, tc.first); !slices.Equal(got, tc.want) {
				t.Fatalf("SlowStartBatches(%d, %d) = %v, want %v", tc.n, tc.first, got, tc.want)
			}
		})
	}
}

func TestReplicaFailureAfter(t *testing.T) {
	now := testutil.T0
	earlier := &ReplicaFailure{Reason: ReasonFailedCreate, Message: "old", LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}
	quota := errors.New(`pods "web-x" is forbidden: exceeded quota`)
	cases := []struct {
		name    string
		current *ReplicaFailure
		err     error
		diff    int
		want    *ReplicaFailure
	}{
		{name: "a failed create with pods missing sets FailedCreate with the error's message", err: quota, diff: -2,
			want: &ReplicaFailure{Reason: ReasonFailedCreate, Message: quota.Error(), LastTransitionTime: metav1.NewTime(now)}},
		{name: "a failed delete with pods extra sets FailedDelete", err: quota, diff: 1,
			want: &ReplicaFailure{Reason: ReasonFailedDelete, Message: quota.Error(), LastTransitionTime: metav1.NewTime(now)}},
		{name: "a condition already set stays as it was through more failures", current: earlier, err: quota, diff: -1, want: earlier},
		{name: "a sync without failure clears it", current: earlier, diff: -1},
		{name: "no failure, no condition", diff: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ReplicaFailureAfter(tc.current, tc.err, tc.diff, now)
			if !EqualReplicaFailures(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestPlanReportsDiffAndKeepsTheCondition(t *testing.T) {
	w := workload(3, 0)
	w.ReplicaFailure = &ReplicaFailure{Reason: ReasonFailedCreate, Message: "m"}
	st := split(t, Plan(w, []*corev1.Pod{pod("a").Obj()}, true, testutil.T0)).status
	if st.Diff != -2 || st.Status.ReplicaFailure != w.ReplicaFailure {
		t.Fatalf("diff %d failure %+v", st.Diff, st.Status.ReplicaFailure)
	}
}

func TestApplyStatusCarriesReplicaFailure(t *testing.T) {
	other := appsv1.ReplicaSetCondition{Type: "Other", Status: corev1.ConditionTrue}
	cached := appsv1.ReplicaSetStatus{Conditions: []appsv1.ReplicaSetCondition{other}}
	failure := &ReplicaFailure{Reason: ReasonFailedCreate, Message: "no", LastTransitionTime: metav1.NewTime(testutil.T0)}
	set, changed := applyStatus(cached, Status{ReplicaFailure: failure})
	if !changed || len(set.Conditions) != 2 || set.Conditions[1].Type != appsv1.ReplicaSetReplicaFailure ||
		set.Conditions[1].Reason != ReasonFailedCreate || set.Conditions[1].Message != "no" {
		t.Fatalf("conditions %+v", set.Conditions)
	}
	if !EqualReplicaFailures(ReplicaFailureOf(set.Conditions), failure) {
		t.Fatalf("read back %+v", ReplicaFailureOf(set.Conditions))
	}
	if _, changed := applyStatus(set, Status{ReplicaFailure: failure}); changed {
		t.Fatal("an unchanged condition must not cause a write")
	}
	cleared, changed := applyStatus(set, Status{})
	if !changed || len(cleared.Conditions) != 1 || cleared.Conditions[0].Type != "Other" {
		t.Fatalf("clearing left %+v", cleared.Conditions)
	}
	if len(set.Conditions) != 2 || len(cached.Conditions) != 1 || cached.Conditions[0] != other {
		t.Fatalf("the input's conditions changed: %+v, %+v", set.Conditions, cached.Conditions)
	}
}
