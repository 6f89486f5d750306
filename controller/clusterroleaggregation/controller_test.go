package clusterroleaggregation

import (
	"context"
	"log/slog"
	"testing"
	"time"

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

// gateSink holds every write until released, telling which have started.
type gateSink struct {
	started chan string
	release chan struct{}
}

func (s gateSink) Do(ctx context.Context, a Action) error {
	s.started <- a.Role.Name
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	return nil
}

// TestRunHonoursWorkers: aggregated roles are synced by as many workers
// as Run is given (the queue never hands one role to two of them), as
// upstream runs several.
func TestRunHonoursWorkers(t *testing.T) {
	inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
	inf.ClusterRoles.Replace([]*rbacv1.ClusterRole{aggregating("view", "to-view"), aggregating("edit", "to-edit"),
		role("pod-reader", map[string]string{"to-view": "true", "to-edit": "true"}, "get")})
	sink := gateSink{started: make(chan string, 2), release: make(chan struct{})}
	ctl := &Controller{cache: inf.ClusterRoles, sink: sink, queue: framework.NewQueue(framework.QueueConfig{}),
		log: slog.New(slog.DiscardHandler)}
	ctl.queue.Add("view")
	ctl.queue.Add("edit")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ctl.Run(ctx, 2); close(done) }()
	defer func() { close(sink.release); cancel(); <-done }()
	timeout := time.After(5 * time.Second)
	for range 2 {
		select {
		case <-sink.started:
		case <-timeout:
			t.Fatal("the second role's write did not start while the first was in flight: one worker")
		}
	}
}
