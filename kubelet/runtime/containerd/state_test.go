package containerd_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	containerd "github.com/containerd/containerd"
	"github.com/containerd/errdefs"

	ctdrt "minik/kubelet/runtime/containerd"
	"minik/proto/cri"
)

// runningPod makes a host-network sandbox with a started container in a
// runtime of its own, then closes that runtime, as a kubelet that stops.
func runningPod(ctx context.Context, t *testing.T) (cfg ctdrt.Config, sandbox, container string, startedAt int64) {
	t.Helper()
	rt, cfg := newRuntimeAndConfig(t)
	sandbox = hostSandbox(ctx, t, rt, "p")
	container = sleeper(ctx, t, rt, sandbox, "c")
	// Whatever the runtime under test forgets, the test leaves no
	// container running: its own client deletes it at the end.
	t.Cleanup(func() {
		client, nsCtx := otherClient(context.Background(), t, cfg)
		if c, err := client.LoadContainer(nsCtx, container); err == nil {
			if task, err := c.Task(nsCtx, nil); err == nil {
				_, _ = task.Delete(nsCtx, containerd.WithProcessKill)
			}
			_ = c.Delete(nsCtx, containerd.WithSnapshotCleanup)
		}
	})
	if err := rt.StartContainer(ctx, container); err != nil {
		t.Fatal(err)
	}
	st, err := rt.ContainerStatus(ctx, container)
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	return cfg, sandbox, container, st.StartedAt
}

// restart makes the runtime again from cfg; its pods are removed at the
// end of the test.
func restart(ctx context.Context, t *testing.T, cfg ctdrt.Config) *ctdrt.Runtime {
	t.Helper()
	rt, err := ctdrt.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		removeSandboxes(rt)
		rt.Close()
	})
	return rt
}

// A kubelet upgraded from a version that kept its sandbox records and
// start times on disk, in StateDir, finds its running pods: New moves
// that state into the run directory.
func TestStateOnDiskOfAnEarlierVersionIsMoved(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, sandbox, container, startedAt := runningPod(ctx, t)
	runDir := ctdrt.RunDirFor(cfg.StateDir)
	for _, sub := range []string{"sandboxes", "started"} {
		if err := os.CopyFS(filepath.Join(cfg.StateDir, sub), os.DirFS(filepath.Join(runDir, sub))); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(filepath.Join(runDir, sub)); err != nil {
			t.Fatal(err)
		}
	}

	rt := restart(ctx, t, cfg)
	sbs, err := rt.ListPodSandbox(ctx, "")
	if err != nil || len(sbs) != 1 || sbs[0].Id != sandbox || sbs[0].State != cri.PodSandboxState_SANDBOX_READY {
		t.Fatalf("sandboxes after the upgrade: %v, %v; want %s ready", sbs, err, sandbox)
	}
	st, err := rt.ContainerStatus(ctx, container)
	if err != nil || st.State != cri.ContainerState_CONTAINER_RUNNING || st.StartedAt != startedAt {
		t.Fatalf("the container after the upgrade: %v, %v; want running since %d", st, err, startedAt)
	}
	for _, sub := range []string{"sandboxes", "started"} {
		if _, err := os.Stat(filepath.Join(cfg.StateDir, sub)); !os.IsNotExist(err) {
			t.Errorf("%s is still in the state dir: %v", sub, err)
		}
	}
}

// After a reboot the run directory is empty and the machine ended every
// sandbox: New removes the containers left in containerd, which nothing
// could run or remove otherwise.
func TestContainersOfForgottenSandboxesAreRemoved(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, _, container, _ := runningPod(ctx, t)
	deleteTask(ctx, t, cfg, container)
	if err := os.RemoveAll(filepath.Join(ctdrt.RunDirFor(cfg.StateDir), "sandboxes")); err != nil {
		t.Fatal(err)
	}

	restart(ctx, t, cfg)
	client, nsCtx := otherClient(ctx, t, cfg)
	if _, err := client.LoadContainer(nsCtx, container); !errdefs.IsNotFound(err) {
		t.Fatalf("the container of a forgotten sandbox is still in containerd: %v", err)
	}
}
