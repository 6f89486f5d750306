package daemonset

import (
	"context"
	"log/slog"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"minik/client"
	"minik/controller/framework"
	"minik/controller/internal/history"
	"minik/controller/internal/synctest"
	"minik/controller/internal/testutil"
)

// TestSyncRunsThePlanThroughTheSink drives the controller's sync over
// caches filled by hand and a FakeSink: no apiserver.
func TestSyncRunsThePlanThroughTheSink(t *testing.T) {
	ds := makeDS()
	hash := framework.ComputeHash(&ds.Spec.Template, nil)
	data, err := history.Patch(&ds.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	// The revision of the template exists already: sync writes none.
	rev := history.New(ds, "apps/v1", "DaemonSet", history.Name(ds.Name, hash), hash, nil, data, 1)
	running := func(name, node string) *corev1.Pod {
		return testutil.Pod(name).Node(node).Label(RevisionHashLabel, hash).Owner(ds, "apps/v1", "DaemonSet").Ready(testutil.T0).Obj()
	}
	n1, n2 := testutil.Node("n1").Obj(), testutil.Node("n2").Obj()
	cases := []struct {
		name      string
		nodes     []*corev1.Node
		pods      []*corev1.Pod
		expecting bool       // an earlier sync's creates are not all seen yet
		fail      ActionType // the sink refuses this action
		wantDone  []string   // the actions performed
		wantErr   string
	}{
		{name: "a node without a daemon gets one, and the status follows",
			nodes: []*corev1.Node{n1, n2}, pods: []*corev1.Pod{running("p1", "n1")},
			wantDone: []string{"ManagePods create on [n2] delete []", "UpdateStatus desired=2 updated=1"}},
		{name: "the pod of a departed node goes",
			nodes: []*corev1.Node{n1}, pods: []*corev1.Pod{running("p1", "n1"), running("p2", "gone")},
			wantDone: []string{"ManagePods create on [] delete [p2]", "UpdateStatus desired=1 updated=1"}},
		{name: "with creates not yet seen it only writes the status",
			nodes: []*corev1.Node{n1}, expecting: true, wantDone: []string{"UpdateStatus desired=1 updated=0"}},
		{name: "refused creates fail the sync with their error, and the status is still written",
			nodes: []*corev1.Node{n1}, fail: ManagePods,
			wantDone: []string{"UpdateStatus desired=1 updated=0"}, wantErr: "ManagePods create on [n1] delete []: refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
			inf.DaemonSets.Replace([]*appsv1.DaemonSet{ds})
			inf.ControllerRevisions.Replace([]*appsv1.ControllerRevision{rev})
			inf.Nodes.Replace(tc.nodes)
			inf.Pods.Replace(tc.pods)
			sink := synctest.Refusing(func(a Action) bool { return a.Type == tc.fail })
			dc := New(&client.Client{}, inf, nil, testingclock.NewFakeClock(testutil.T0), slog.New(slog.DiscardHandler))
			dc.sink = func(*appsv1.DaemonSet, string) framework.Sink[Action] { return sink }
			if tc.expecting {
				dc.expect.Expect("default/agent", 1, nil)
			}
			_, err := dc.sync(context.Background(), "default/agent")
			synctest.Check(t, err, tc.wantErr, sink, tc.wantDone)
		})
	}
}
