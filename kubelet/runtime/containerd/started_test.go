package containerd_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	ctdrt "minik/kubelet/runtime/containerd"
	"minik/proto/cri"
)

// A container's start time outlives the runtime: a restarted runtime
// reports the same startedAt, and a container whose task was lost while
// the runtime was down is reported as having exited (it had started),
// not as created. Removing the container forgets its start time.
func TestStartTimeOutlivesTheRuntime(t *testing.T) {
	rt, cfg := newRuntimeAndConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb := hostSandbox(ctx, t, rt, "p")
	start := func(name string) (string, int64) {
		id := sleeper(ctx, t, rt, sb, name)
		if err := rt.StartContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
		st, err := rt.ContainerStatus(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if st.State != cri.ContainerState_CONTAINER_RUNNING || st.StartedAt == 0 {
			t.Fatalf("%s after start: state %v, startedAt %d", name, st.State, st.StartedAt)
		}
		return id, st.StartedAt
	}
	kept, keptAt := start("kept")
	lost, lostAt := start("lost")
	rt.Close()

	// While the runtime is down, another client deletes one task.
	deleteTask(ctx, t, cfg, lost)

	restarted, err := ctdrt.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer restarted.Close()
	st, err := restarted.ContainerStatus(ctx, kept)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != cri.ContainerState_CONTAINER_RUNNING || st.StartedAt != keptAt {
		t.Errorf("after a restart: state %v, startedAt %d, want running since %d", st.State, st.StartedAt, keptAt)
	}
	st, err = restarted.ContainerStatus(ctx, lost)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != cri.ContainerState_CONTAINER_EXITED || st.ExitCode != 255 || st.StartedAt != lostAt {
		t.Errorf("a container whose task was lost: state %v, exit code %d, startedAt %d; want exited, 255, started at %d",
			st.State, st.ExitCode, st.StartedAt, lostAt)
	}

	if err := restarted.RemoveContainer(ctx, lost); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ctdrt.RunDirFor(cfg.StateDir), "started", lost)); !os.IsNotExist(err) {
		t.Errorf("the start time of a removed container is kept: %v", err)
	}
	if err := restarted.RemoveContainer(ctx, kept); err != nil {
		t.Fatal(err)
	}
}
