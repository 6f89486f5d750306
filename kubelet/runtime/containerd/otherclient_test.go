package containerd_test

import (
	"context"
	"testing"

	containerd "github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"

	ctdrt "minik/kubelet/runtime/containerd"
)

// otherClient connects to the runtime's containerd as another client
// would (a user's ctr, another kubelet), and returns a context in the
// runtime's namespace. The client closes when the test ends.
func otherClient(ctx context.Context, t *testing.T, cfg ctdrt.Config) (*containerd.Client, context.Context) {
	t.Helper()
	client, err := containerd.New(cfg.Address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client, namespaces.WithNamespace(ctx, cfg.Namespace)
}

// deleteTask deletes container id's task (killing it) as another client
// would, behind the runtime's back.
func deleteTask(ctx context.Context, t *testing.T, cfg ctdrt.Config, id string) {
	t.Helper()
	client, nsCtx := otherClient(ctx, t, cfg)
	c, err := client.LoadContainer(nsCtx, id)
	if err != nil {
		t.Fatal(err)
	}
	task, err := c.Task(nsCtx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := task.Delete(nsCtx, containerd.WithProcessKill); err != nil {
		t.Fatal(err)
	}
}
