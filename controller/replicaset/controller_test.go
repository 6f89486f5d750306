package replicaset

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"minik/client"
	"minik/controller/framework"
	"minik/controller/internal/synctest"
	"minik/controller/internal/testutil"
	"minik/internal/metrics"
	"minik/internal/metrics/metricstest"
)

// TestSyncRunsThePlanThroughTheSink drives the controller's sync over
// caches filled by hand and a FakeSink: no apiserver.
func TestSyncRunsThePlanThroughTheSink(t *testing.T) {
	web := func(replicas int32) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "rs-uid"},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}}}
	}
	cases := []struct {
		name      string
		rs        []*appsv1.ReplicaSet
		pods      []*corev1.Pod
		expecting bool       // an earlier sync's creates are not all seen yet
		fail      ActionType // the sink refuses this action
		wantDone  []string   // the actions performed
		wantErr   string
	}{
		{name: "a new ReplicaSet creates its pods, then writes its status",
			rs: []*appsv1.ReplicaSet{web(3)}, wantDone: []string{"CreatePods 3", "UpdateStatus replicas=0 ready=0"}},
		{name: "an orphan is adopted before the extra pod goes",
			rs:       []*appsv1.ReplicaSet{web(1)},
			pods:     []*corev1.Pod{pod("a").Obj(), testutil.Pod("orphan").Label("app", "web").Created(testutil.T0.Add(time.Minute)).Obj()},
			wantDone: []string{"AdoptPod orphan", "DeletePods orphan", "UpdateStatus replicas=2 ready=0"}},
		{name: "with creates not yet seen it only writes the status",
			rs: []*appsv1.ReplicaSet{web(3)}, expecting: true, wantDone: []string{"UpdateStatus replicas=0 ready=0"}},
		{name: "a refused create fails the sync with its error, and the status is still written",
			rs: []*appsv1.ReplicaSet{web(3)}, fail: CreatePods,
			wantDone: []string{"UpdateStatus replicas=0 ready=0"}, wantErr: "CreatePods 3: refused"},
		{name: "a refused adoption does not hold back the rest",
			rs: []*appsv1.ReplicaSet{web(2)}, pods: []*corev1.Pod{testutil.Pod("orphan").Label("app", "web").Obj()}, fail: AdoptPod,
			wantDone: []string{"CreatePods 1", "UpdateStatus replicas=1 ready=0"}, wantErr: "AdoptPod orphan: refused"},
		{name: "a ReplicaSet no longer in the cache is nothing to do"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
			inf.ReplicaSets.Replace(tc.rs)
			inf.Pods.Replace(tc.pods)
			sink := synctest.Refusing(func(a Action) bool { return a.Type == tc.fail })
			rc := NewReplicaSets(&client.Client{}, inf, nil, testingclock.NewFakeClock(testutil.T0), slog.New(slog.DiscardHandler))
			rc.sink = func(*appsv1.ReplicaSet, time.Time) framework.Sink[Action] { return sink }
			if tc.expecting {
				rc.expect.Expect("default/web", 1, nil)
			}
			_, err := rc.sync(context.Background(), "default/web")
			synctest.Check(t, err, tc.wantErr, sink, tc.wantDone)
		})
	}
}

// TestEachKindsQueueHasItsControllersName: the ReplicationController
// controller is this one with another Kind, and its queue's workqueue_*
// metrics carry its own name, not the ReplicaSet controller's.
func TestEachKindsQueueHasItsControllersName(t *testing.T) {
	srv := httptest.NewServer(metrics.Handler(metrics.NewRegistry(framework.Collectors()...)))
	defer srv.Close()
	inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
	clk := testingclock.NewFakeClock(testutil.T0)
	rs := NewReplicaSets(&client.Client{}, inf, nil, clk, slog.New(slog.DiscardHandler))
	rc := NewController(Kind[corev1.ReplicationController]{Name: "replicationcontroller", APIVersion: "v1", Kind: "ReplicationController",
		Informer: inf.ReplicationControllers}, &client.Client{}, inf, nil, clk, slog.New(slog.DiscardHandler))
	adds := func() (rsAdds, rcAdds float64) {
		_, m := metricstest.Scrape(t, http.DefaultClient, srv.URL)
		return m.Value("workqueue_adds_total", map[string]string{"name": Name}),
			m.Value("workqueue_adds_total", map[string]string{"name": "replicationcontroller"})
	}
	rsBefore, rcBefore := adds()
	rs.queue.Add("default/web")
	rc.queue.Add("default/web")
	rc.queue.Add("default/api")
	rsAfter, rcAfter := adds()
	if rsAfter-rsBefore != 1 || rcAfter-rcBefore != 2 {
		t.Errorf("adds: replicaset +%v, replicationcontroller +%v; want +1 and +2", rsAfter-rsBefore, rcAfter-rcBefore)
	}
}
