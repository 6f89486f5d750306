package disruption

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// TestExpectedPodsFromTheControllersScale checks where a budget that
// needs a scale (maxUnavailable here) finds it, as upstream's finders:
// the caches for ReplicationControllers, ReplicaSets, Deployments and
// StatefulSets, and any other kind through its scale subresource.
func TestExpectedPodsFromTheControllersScale(t *testing.T) {
	now := testutil.T0
	four := int32(4)
	ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", UID: "uid-db"},
		Spec: appsv1.StatefulSetSpec{Replicas: &four}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", UID: "uid-rs"},
		Spec: appsv1.ReplicaSetSpec{Replicas: &four}}
	crontab := &metav1.ObjectMeta{Name: "db", Namespace: "default", UID: "uid-ct"}
	podsOf := func(owner metav1.Object, apiVersion, kind string) []*corev1.Pod {
		var pods []*corev1.Pod
		for _, n := range []string{"db-0", "db-1", "db-2"} {
			pods = append(pods, testutil.Pod(n).Label("app", "db").Ready(now).Owner(owner, apiVersion, kind).Obj())
		}
		return pods
	}
	resources := &metav1.APIResourceList{GroupVersion: "stable.example.com/v1", APIResources: []metav1.APIResource{
		{Name: "crontabs", Namespaced: true, Kind: "CronTab", Verbs: []string{"get", "list"}},
		{Name: "crontabs/scale", Namespaced: true, Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: []string{"get", "update"}},
		{Name: "cronjobs", Namespaced: true, Kind: "CronJob", Verbs: []string{"get", "list"}},
	}}
	scale := func(uid types.UID, n int32) *autoscalingv1.Scale {
		return &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", UID: uid},
			Spec: autoscalingv1.ScaleSpec{Replicas: n}}
	}
	const scalePath = "/apis/stable.example.com/v1/namespaces/default/crontabs/db/scale"
	budget := pdb(nil, ip(intstr.FromInt32(1)))
	budget.Namespace, budget.Spec.Selector = "default", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	cases := []struct {
		name         string
		pods         []*corev1.Pod
		reads        synctest.Reads
		wantExpected int32
		wantAllowed  int32
		wantFailed   string // the SyncFailed condition's message
		wantEvent    bool   // NoControllers recorded
		wantErr      bool   // the sync fails, to be retried
	}{
		{name: "a StatefulSet's spec.replicas", pods: podsOf(ss, "apps/v1", "StatefulSet"), wantExpected: 4},
		{name: "a custom resource's scale subresource", pods: podsOf(crontab, "stable.example.com/v1", "CronTab"),
			reads: synctest.Reads{"/apis/stable.example.com/v1": resources, scalePath: scale("uid-ct", 3)}, wantExpected: 3, wantAllowed: 1},
		{name: "a scale of another object of the same name is no controller", pods: podsOf(crontab, "stable.example.com/v1", "CronTab"),
			reads:      synctest.Reads{"/apis/stable.example.com/v1": resources, scalePath: scale("uid-other", 3)},
			wantFailed: `found no controllers for pod "db-`, wantEvent: true},
		{name: "a gone custom object is no controller", pods: podsOf(crontab, "stable.example.com/v1", "CronTab"),
			reads:      synctest.Reads{"/apis/stable.example.com/v1": resources},
			wantFailed: `found no controllers for pod "db-`, wantEvent: true},
		{name: "a kind without a scale subresource fails the sync", pods: podsOf(crontab, "stable.example.com/v1", "CronJob"),
			reads:      synctest.Reads{"/apis/stable.example.com/v1": resources},
			wantFailed: "cronjobs.stable.example.com does not implement the scale subresource"},
		{name: "a kind the group does not serve fails the sync", pods: podsOf(crontab, "stable.example.com/v1", "AtJob"),
			reads:      synctest.Reads{"/apis/stable.example.com/v1": resources},
			wantFailed: `no matches for kind "AtJob" in version "stable.example.com/v1"`},
		{name: "a failed read fails safe, and the sync is retried", pods: podsOf(crontab, "stable.example.com/v1", "CronTab"),
			reads:      synctest.Reads{"/apis/stable.example.com/v1": resources, scalePath: "not a Scale"},
			wantFailed: "get crontabs.stable.example.com default/db scale", wantErr: true},
		{name: "a ReplicaSet of another group is not looked for in the ReplicaSet cache", pods: podsOf(rs, "example.com/v1", "ReplicaSet"),
			reads:      synctest.Reads{},
			wantFailed: `no matches for kind "ReplicaSet" in version "example.com/v1"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.reads.Client()
			inf := framework.NewInformers(c, slog.New(slog.DiscardHandler))
			inf.PodDisruptionBudgets.Replace([]*policyv1.PodDisruptionBudget{budget})
			inf.StatefulSets.Replace([]*appsv1.StatefulSet{ss})
			inf.ReplicaSets.Replace([]*appsv1.ReplicaSet{rs})
			inf.Pods.Replace(tc.pods)
			sink := &framework.FakeSink[Action]{}
			dc := New(c, inf, nil, testingclock.NewFakeClock(now), slog.New(slog.DiscardHandler))
			dc.sink = sink
			if _, err := dc.sync(context.Background(), "default/b"); (err != nil) != tc.wantErr {
				t.Errorf("sync error %v, want one: %v", err, tc.wantErr)
			}
			done := sink.Done()
			if len(done) == 0 || done[len(done)-1].Type != UpdateStatus {
				t.Fatalf("actions %v, want the status written last", done)
			}
			if event := done[0].Type == RecordNoControllers; event != tc.wantEvent {
				t.Errorf("NoControllers recorded: %v, want %v", event, tc.wantEvent)
			}
			st := done[len(done)-1].PDB.Status
			if tc.wantFailed != "" {
				if c := st.Conditions[0]; c.Reason != ReasonSyncFailed || !strings.Contains(c.Message, tc.wantFailed) || st.DisruptionsAllowed != 0 {
					t.Errorf("status %+v, want SyncFailed with %q and no disruption allowed", st, tc.wantFailed)
				}
				return
			}
			if st.ExpectedPods != tc.wantExpected || st.DisruptionsAllowed != tc.wantAllowed || st.Conditions[0].Reason == ReasonSyncFailed {
				t.Errorf("status %+v, want %d expected pods and %d disruptions allowed", st, tc.wantExpected, tc.wantAllowed)
			}
		})
	}
}
