package resourcequota

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	testingclock "k8s.io/utils/clock/testing"

	"minik/controller/framework"
	"minik/controller/internal/synctest"
)

// TestSyncRunsThePlanThroughTheSink drives the controller's sync over
// caches filled by hand (older than the quota), canned live lists and a
// FakeSink: no apiserver.
func TestSyncRunsThePlanThroughTheSink(t *testing.T) {
	const podsPath = "/api/v1/namespaces/ns/pods"
	cached := []*corev1.Pod{pod("a", corev1.PodRunning, nil)}
	live := func(names ...string) synctest.Reads {
		l := &corev1.PodList{}
		for _, n := range names {
			l.Items = append(l.Items, *pod(n, corev1.PodRunning, nil))
		}
		return synctest.Reads{podsPath: l}
	}
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "resourcequotas"}, "q", nil)
	cases := []struct {
		name        string
		quota       *corev1.ResourceQuota
		reads       synctest.Reads
		refuseWith  error
		wantDone    []string
		wantErr     string
		wantRequeue time.Duration
	}{
		{name: "a new quota gets its status from the caches, no live list needed to raise a usage",
			quota: podQuota(nil), reads: synctest.Reads{}, wantDone: []string{"UpdateStatus ns/q"}, wantRequeue: ResyncPeriod},
		{name: "a lowering the old cache suggests is checked by a live list, which has the charged pod",
			quota: podQuota(list("pods", "2")), reads: live("a", "b"), wantRequeue: ResyncPeriod},
		{name: "a lowering the live list confirms is written",
			quota: podQuota(list("pods", "2")), reads: live("a"), wantDone: []string{"UpdateStatus ns/q"}, wantRequeue: ResyncPeriod},
		{name: "a failed live list fails the sync, nothing written",
			quota: podQuota(list("pods", "2")), reads: synctest.Reads{}, wantErr: "listing pods"},
		{name: "a refused status write fails the sync",
			quota: podQuota(nil), reads: synctest.Reads{}, refuseWith: apierrors.NewForbidden(schema.GroupResource{Resource: "resourcequotas"}, "q", nil),
			wantErr: "UpdateStatus ns/q: "},
		{name: "a status write that meets a newer quota is retried soon, without an error",
			quota: podQuota(nil), reads: synctest.Reads{}, refuseWith: conflict, wantRequeue: conflictRetry},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.reads.Client()
			inf := framework.NewInformers(c, slog.New(slog.DiscardHandler))
			ctl := New(c, inf, testingclock.NewFakeClock(time.Unix(1000, 0)), slog.New(slog.DiscardHandler))
			inf.Pods.Replace(cached)
			ctl.quotas.Replace([]*corev1.ResourceQuota{tc.quota})
			sink := synctest.RefusingWith(func(Action) bool { return tc.refuseWith != nil }, tc.refuseWith)
			ctl.sink = sink
			res, err := ctl.sync(context.Background(), "ns")
			synctest.Check(t, err, tc.wantErr, sink, tc.wantDone)
			if res.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeue after %v, want %v", res.RequeueAfter, tc.wantRequeue)
			}
		})
	}
}
