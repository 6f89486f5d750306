package deployment

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"minik/client"
	"minik/controller/framework"
	"minik/controller/internal/testutil"
)

// TestSyncRunsThePlanThroughTheSink drives the controller's sync over
// caches filled by hand and a FakeSink: no apiserver.
func TestSyncRunsThePlanThroughTheSink(t *testing.T) {
	owned := func(d *appsv1.Deployment, rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
		rs.OwnerReferences = []metav1.OwnerReference{framework.ControllerRef(d, "apps/v1", "Deployment")}
		rs.Labels = rs.Spec.Template.Labels
		return rs
	}
	rollout := makeDeploy(3, "v2")
	cases := []struct {
		name        string
		deployments []*appsv1.Deployment
		replicaSets []*appsv1.ReplicaSet
		fail        ActionType // the sink refuses this action
		wantDone    []string   // the actions performed, by type and target
		wantErr     string
	}{
		{name: "a new Deployment gets its first ReplicaSet, its revision, then its status",
			deployments: []*appsv1.Deployment{makeDeploy(3, "v1")},
			wantDone:    []string{"CreateReplicaSet", "UpdateRevision", "UpdateStatus"}},
		{name: "a rollout surges the new ReplicaSet before it scales the old one down",
			deployments: []*appsv1.Deployment{rollout},
			replicaSets: []*appsv1.ReplicaSet{owned(rollout, rsFor(rollout, "v1", 1, 3, 3, time.Hour))},
			wantDone:    []string{"CreateReplicaSet", "UpdateRevision", "UpdateStatus"}},
		{name: "a failed write ends the sync with its error; the later actions are not done",
			deployments: []*appsv1.Deployment{makeDeploy(3, "v1")}, fail: CreateReplicaSet,
			wantDone: nil, wantErr: "refused"},
		{name: "a Deployment no longer in the cache is nothing to do"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
			inf.Deployments.Replace(tc.deployments)
			inf.ReplicaSets.Replace(tc.replicaSets)
			sink := &framework.FakeSink[Action]{Fail: func(a Action) error {
				if a.Type == tc.fail {
					return errors.New("refused")
				}
				return nil
			}}
			dc := &Controller{inf: inf, clock: testingclock.NewFakeClock(testutil.T0),
				sink: func(*appsv1.Deployment) framework.Sink[Action] { return sink }}
			_, err := dc.sync(context.Background(), "default/web")
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("sync error %v, want one containing %q", err, tc.wantErr)
			}
			var done []string
			for _, a := range sink.Done() {
				done = append(done, string(a.Type))
			}
			if !slices.Equal(done, tc.wantDone) {
				t.Errorf("actions done %v, want %v", done, tc.wantDone)
			}
		})
	}
}
