package tainteviction

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"minik/client"
	"minik/controller/framework"
	"minik/controller/internal/synctest"
	"minik/controller/internal/testutil"
)

// TestSyncRunsThePlanThroughTheSink drives the controller's sync over
// caches filled by hand and a FakeSink: no apiserver.
func TestSyncRunsThePlanThroughTheSink(t *testing.T) {
	now := testutil.T0
	tainted := testutil.Node("n").Taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute).Obj()
	cases := []struct {
		name          string
		pod           *corev1.Pod
		since         time.Time // a countdown already running
		fail          ActionType
		wantDone      []string
		wantErr       string
		wantCountdown bool // the countdown is kept after the sync
	}{
		{name: "an untolerating pod is evicted: event, DisruptionTarget, delete", pod: testutil.Pod("p").Node("n").Obj(),
			wantDone: []string{"MarkForDeletion default/p", "SetDisruptionTarget default/p", "DeletePod default/p"}},
		{name: "a refused delete fails the sync and keeps the countdown that ran out", pod: testutil.Pod("p").Node("n").Tolerate(corev1.TaintNodeUnreachable, testutil.Int64(30)).Obj(),
			since: now.Add(-time.Minute), fail: DeletePod, wantErr: "DeletePod default/p: refused",
			wantDone: []string{"MarkForDeletion default/p", "SetDisruptionTarget default/p"}, wantCountdown: true},
		{name: "a tolerating pod waits: no action, its countdown kept", pod: testutil.Pod("p").Node("n").Tolerate(corev1.TaintNodeUnreachable, testutil.Int64(300)).Obj(),
			wantCountdown: true},
		{name: "a pod gone forgets its countdown", since: now.Add(-time.Second)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
			inf.Nodes.Replace([]*corev1.Node{tainted})
			if tc.pod != nil {
				inf.Pods.Replace([]*corev1.Pod{tc.pod})
			}
			sink := synctest.Refusing(func(a Action) bool { return a.Type == tc.fail })
			ctl := New(&client.Client{}, inf, nil, testingclock.NewFakeClock(now), slog.New(slog.DiscardHandler))
			ctl.sink = sink
			if !tc.since.IsZero() {
				ctl.countdown["default/p"] = tc.since
			}
			_, err := ctl.sync(context.Background(), "default/p")
			synctest.Check(t, err, tc.wantErr, sink, tc.wantDone)
			if _, kept := ctl.countdown["default/p"]; kept != tc.wantCountdown {
				t.Errorf("countdown kept: %v, want %v", kept, tc.wantCountdown)
			}
		})
	}
}
