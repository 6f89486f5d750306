package garbagecollector

import (
	"context"
	"log/slog"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/controller/framework"
	"minik/controller/internal/synctest"
	"minik/controller/internal/testutil"
)

// TestSyncRunsThePlanThroughTheSink drives the collector's sync over
// caches filled by hand and a FakeSink: no apiserver. Every owner here is
// cached, so no live GET is needed to judge it.
func TestSyncRunsThePlanThroughTheSink(t *testing.T) {
	rs := func(finalizer string) *appsv1.ReplicaSet {
		r := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "default", UID: "uid-rs"}}
		if finalizer != "" {
			now := metav1.NewTime(testutil.T0)
			r.DeletionTimestamp, r.Finalizers = &now, []string{finalizer}
		}
		return r
	}
	// One dependent each: the cache's index returns several in no order.
	pods := func(owner *appsv1.ReplicaSet, name string) []*corev1.Pod {
		return []*corev1.Pod{testutil.Pod(name).Owner(owner, "apps/v1", "ReplicaSet").Obj()}
	}
	orphaning, foreground := rs(metav1.FinalizerOrphanDependents), rs(metav1.FinalizerDeleteDependents)
	cases := []struct {
		name     string
		rs       *appsv1.ReplicaSet
		pods     []*corev1.Pod
		key      string
		fail     ActionType // the sink refuses this action
		wantDone []string
		wantErr  string
	}{
		{name: "an owner deleted with orphan frees its dependents, then drops its finalizer",
			rs: orphaning, pods: pods(orphaning, "p1"), key: "replicasets.apps|default|rs",
			wantDone: []string{"RemoveOwnerRefs default/p1", "RemoveFinalizer default/rs"}},
		{name: "a foreground owner queues its blocking dependents and keeps its finalizer",
			rs: foreground, pods: pods(foreground, "p1"), key: "replicasets.apps|default|rs",
			wantDone: []string{"Enqueue default/p1"}},
		{name: "a dependent of an owner waiting in the foreground is deleted",
			rs: foreground, pods: pods(foreground, "p1"), key: "pods|default|p1",
			wantDone: []string{"Delete default/p1"}},
		{name: "a dependent of a solid owner is left alone",
			rs: rs(""), pods: pods(rs(""), "p1"), key: "pods|default|p1"},
		{name: "a refused write ends the sync with its error; the finalizer stays",
			rs: orphaning, pods: pods(orphaning, "p1"), key: "replicasets.apps|default|rs", fail: RemoveOwnerRefs,
			wantErr: "RemoveOwnerRefs default/p1: refused"},
		{name: "an object no longer in the cache is nothing to do", key: "pods|default|gone"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
			if tc.rs != nil {
				inf.ReplicaSets.Replace([]*appsv1.ReplicaSet{tc.rs})
			}
			inf.Pods.Replace(tc.pods)
			sink := synctest.Refusing(func(a Action) bool { return a.Type == tc.fail })
			gc := New(&client.Client{}, inf, slog.New(slog.DiscardHandler))
			gc.sink = sink
			_, err := gc.sync(context.Background(), tc.key)
			synctest.Check(t, err, tc.wantErr, sink, tc.wantDone)
		})
	}
}
