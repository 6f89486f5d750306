package clusterroleaggregation

import (
	"context"
	"log/slog"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"minik/client"
	"minik/controller/framework"
	"minik/controller/internal/synctest"
)

// TestSyncRunsThePlanThroughTheSink drives the controller's sync over a
// cache filled by hand and a FakeSink: no apiserver.
func TestSyncRunsThePlanThroughTheSink(t *testing.T) {
	view := aggregating("view", "to-view")
	reader := role("pod-reader", map[string]string{"to-view": "true"}, "get", "list")
	cases := []struct {
		name     string
		key      string
		refuse   bool
		wantDone []string
		wantErr  string
	}{
		{name: "an aggregated role gets the rules of the role it selects",
			key: "view", wantDone: []string{"UpdateRules view"}},
		{name: "a selected role itself is not written", key: "pod-reader"},
		{name: "a refused write fails the sync", key: "view", refuse: true, wantErr: "UpdateRules view: refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
			inf.ClusterRoles.Replace([]*rbacv1.ClusterRole{view, reader})
			sink := synctest.Refusing(func(Action) bool { return tc.refuse })
			ctl := &Controller{cache: inf.ClusterRoles, sink: sink}
			_, err := ctl.sync(context.Background(), tc.key)
			synctest.Check(t, err, tc.wantErr, sink, tc.wantDone)
		})
	}
}
