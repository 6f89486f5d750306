package disruption

import (
	"context"
	"log/slog"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
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
	three := int32(3)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: appsv1.ReplicaSetSpec{Replicas: &three}}
	var pods, orphans []*corev1.Pod
	for _, n := range []string{"a", "b", "c"} {
		pods = append(pods, testutil.Pod(n).Label("app", "web").Ready(now).Owner(rs, "apps/v1", "ReplicaSet").Obj())
		orphans = append(orphans, testutil.Pod(n).Label("app", "web").Ready(now).Obj())
	}
	budget := pdb(nil, ip(intstr.FromInt32(1)))
	budget.Namespace, budget.Spec.Selector = "default", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	cases := []struct {
		name     string
		pods     []*corev1.Pod
		fail     ActionType // the sink refuses this action
		wantDone []string
		wantErr  string
	}{
		{name: "a budget over a ReplicaSet's pods gets its status", pods: pods, wantDone: []string{"UpdateStatus default/b"}},
		{name: "pods without a controller: NoControllers, then the failed status", pods: orphans,
			wantDone: []string{"RecordNoControllers default/b", "UpdateStatus default/b"}},
		{name: "a refused status write fails the sync", pods: pods, fail: UpdateStatus, wantErr: "UpdateStatus default/b: refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
			inf.PodDisruptionBudgets.Replace([]*policyv1.PodDisruptionBudget{budget})
			inf.ReplicaSets.Replace([]*appsv1.ReplicaSet{rs})
			inf.Pods.Replace(tc.pods)
			sink := synctest.Refusing(func(a Action) bool { return a.Type == tc.fail })
			dc := New(&client.Client{}, inf, nil, testingclock.NewFakeClock(now), slog.New(slog.DiscardHandler))
			dc.sink = sink
			_, err := dc.sync(context.Background(), "default/b")
			synctest.Check(t, err, tc.wantErr, sink, tc.wantDone)
			if done := sink.Done(); len(done) > 0 && tc.pods[0].OwnerReferences != nil {
				if st := done[len(done)-1].PDB.Status; st.ExpectedPods != 3 || st.DisruptionsAllowed != 1 {
					t.Errorf("status %+v, want 3 expected pods and 1 disruption allowed", st)
				}
			}
		})
	}
}
