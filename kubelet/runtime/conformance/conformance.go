// Package conformance is the test suite every Runtime must pass: the fake
// (directly and over the gRPC socket) and containerd.
package conformance

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"minik/kubelet/runtime"
	"minik/proto/cri"
)

// Options describe the runtime under test.
type Options struct {
	// Image is present on the runtime and has /bin/sh (busybox).
	Image string
	// MissingImage is a reference that cannot be pulled.
	MissingImage string
	// RunsProcesses: containers run their command for real, so exit codes,
	// logs and exec can be checked.
	RunsProcesses bool
}

// Run runs the suite. newRuntime returns a fresh runtime for each test.
func Run(t *testing.T, newRuntime func(t *testing.T) runtime.Runtime, o Options) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, rt runtime.Runtime, o Options)
		proc bool
	}{
		{"the version names the runtime", testVersion, false},
		{"a sandbox is listed ready with its metadata, then not ready, then gone", testSandboxLifecycle, false},
		{"a container goes created, running, exited, removed", testContainerLifecycle, false},
		{"a sandbox's container statuses in one call are each container's status", testContainerStatuses, false},
		{"unknown ids are not found", testNotFound, false},
		{"a present image has a status, a missing one has none and cannot be pulled", testImages, false},
		{"an invalid image name is refused", testInvalidImage, false},
		{"removing a sandbox removes its containers", testRemoveSandboxRemovesContainers, false},
		{"sandboxes are listed by pod, or all of them", testListSandboxesByPod, false},
		{"a container's exit code and log are reported", testExitCodeAndLogs, true},
		{"log lines carry the time they were written", testLogTimestamps, true},
		{"exec runs in the container and reports its exit code", testExec, true},
		{"a streamed exec passes input, output, a terminal and the exit code", testExecStreams, true},
		{"a streamed exec in an unknown container is not found", testExecNotFound, false},
		{"attach to an unknown container is not found, to a stopped one fails, and ends when the container exits", testAttachLifecycle, false},
		{"attach passes input to a container with stdin, closed after the first client with stdinOnce", testAttachStdinOnce, true},
		{"attach to a tty container gives a terminal, and its log keeps the output", testAttachTTY, true},
		{"hostPID and hostIPC keep the host's namespaces; a target's PID namespace is shared", testNamespaces, true},
		{"containers of one pod share its network namespace and environment reaches them", testEnvAndNetwork, true},
		{"port-forward reaches a server on the pod's localhost, with a half-close", testPortForward, true},
		{"port-forward to an unknown sandbox is not found", testPortForwardNotFound, false},
		{"stats list every container, with processes only while it runs", testStatsLifecycle, false},
		{"stats report a container's memory, processes and writable layer", testStatsUsage, true},
		{"container events: created, started, stopped, deleted, each naming its pod; the stream ends with its context", testEventsLifecycle, false},
		{"a container whose process exits by itself sends a stopped event", testEventsExit, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.proc && !o.RunsProcesses {
				t.Skip("this runtime runs no processes") // a property of the runtime, never of the machine
			}
			tc.fn(t, newRuntime(t), o)
		})
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func sandboxConfig(t *testing.T, name string) *cri.PodSandboxConfig {
	return &cri.PodSandboxConfig{
		Metadata:     &cri.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name},
		Hostname:     name,
		LogDirectory: t.TempDir(),
		Labels:       map[string]string{runtime.LabelPodName: name, runtime.LabelPodNamespace: "default", runtime.LabelPodUID: "uid-" + name},
	}
}

func containerConfig(o Options, name string, cmd ...string) *cri.ContainerConfig {
	if len(cmd) == 0 {
		cmd = []string{"sleep", "3600"}
	}
	return &cri.ContainerConfig{
		Metadata:    &cri.ContainerMetadata{Name: name},
		Image:       o.Image,
		Command:     cmd,
		Labels:      map[string]string{runtime.LabelContainerName: name},
		Annotations: map[string]string{runtime.AnnotationRestartCount: "0"},
		LogPath:     name + "/0.log",
	}
}

func testVersion(t *testing.T, rt runtime.Runtime, _ Options) {
	v, err := rt.Version(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if v.RuntimeName == "" || v.RuntimeVersion == "" {
		t.Errorf("version %+v names no runtime", v)
	}
}

func testListSandboxesByPod(t *testing.T, rt runtime.Runtime, _ Options) {
	c := ctx(t)
	ids := map[string]string{}
	for _, name := range []string{"by-pod-a", "by-pod-b"} {
		id, err := rt.RunPodSandbox(c, sandboxConfig(t, name))
		if err != nil {
			t.Fatal(err)
		}
		defer rt.RemovePodSandbox(c, id)
		ids[name] = id
	}
	list, err := rt.ListPodSandbox(c, "uid-by-pod-a")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Id != ids["by-pod-a"] {
		t.Errorf("the sandboxes of uid-by-pod-a: %v, want only %s", list, ids["by-pod-a"])
	}
	if list, err = rt.ListPodSandbox(c, "uid-of-no-pod"); err != nil || len(list) != 0 {
		t.Errorf("the sandboxes of a pod with none: %v, %v; want none", list, err)
	}
	all, err := rt.ListPodSandbox(c, "")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, sb := range all {
		if sb.Id == ids["by-pod-a"] || sb.Id == ids["by-pod-b"] {
			found++
		}
	}
	if found != 2 {
		t.Errorf("every sandbox: %d of the two made are listed", found)
	}
}

func findSandbox(t *testing.T, rt runtime.Runtime, id string) *cri.PodSandbox {
	t.Helper()
	list, err := rt.ListPodSandbox(ctx(t), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range list {
		if sb.Id == id {
			return sb
		}
	}
	return nil
}

func testSandboxLifecycle(t *testing.T, rt runtime.Runtime, _ Options) {
	c := ctx(t)
	cfg := sandboxConfig(t, "sb1")
	id, err := rt.RunPodSandbox(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sb := findSandbox(t, rt, id)
	if sb == nil {
		t.Fatalf("sandbox %s not listed", id)
	}
	if sb.State != cri.PodSandboxState_SANDBOX_READY {
		t.Errorf("state %v, want ready", sb.State)
	}
	if sb.Metadata.GetName() != "sb1" || sb.Metadata.GetUid() != "uid-sb1" || sb.Labels[runtime.LabelPodName] != "sb1" {
		t.Errorf("metadata %+v labels %v lost", sb.Metadata, sb.Labels)
	}
	if sb.Ip == "" {
		t.Error("a sandbox on the pod network has no IP")
	}
	if sb.CreatedAt == 0 {
		t.Error("no creation time")
	}
	if err := rt.StopPodSandbox(c, id); err != nil {
		t.Fatal(err)
	}
	if sb := findSandbox(t, rt, id); sb == nil || sb.State != cri.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("after stop: %+v, want not ready", sb)
	}
	if err := rt.RemovePodSandbox(c, id); err != nil {
		t.Fatal(err)
	}
	if sb := findSandbox(t, rt, id); sb != nil {
		t.Errorf("after remove still listed: %+v", sb)
	}
	if err := rt.RemovePodSandbox(c, id); err != nil {
		t.Errorf("removing twice: %v, want no error", err)
	}
}

func testContainerLifecycle(t *testing.T, rt runtime.Runtime, o Options) {
	c := ctx(t)
	sbCfg := sandboxConfig(t, "lc")
	sb, err := rt.RunPodSandbox(c, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.RemovePodSandbox(c, sb)
	id, err := rt.CreateContainer(c, sb, containerConfig(o, "main"), sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := rt.ContainerStatus(c, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != cri.ContainerState_CONTAINER_CREATED || st.Metadata.GetName() != "main" || st.CreatedAt == 0 {
		t.Errorf("after create: %+v", st)
	}
	if st.Annotations[runtime.AnnotationRestartCount] != "0" || st.Labels[runtime.LabelContainerName] != "main" {
		t.Errorf("labels %v annotations %v lost", st.Labels, st.Annotations)
	}
	if err := rt.StartContainer(c, id); err != nil {
		t.Fatal(err)
	}
	st, _ = rt.ContainerStatus(c, id)
	if st.State != cri.ContainerState_CONTAINER_RUNNING || st.StartedAt == 0 {
		t.Errorf("after start: state %v startedAt %d", st.State, st.StartedAt)
	}
	list, err := rt.ListContainers(c, sb)
	if err != nil || len(list) != 1 || list[0].Id != id || list[0].PodSandboxId != sb {
		t.Errorf("ListContainers(%s) = %+v, %v", sb, list, err)
	}
	// The node-wide listing (the kubelet's relist) reports the same state.
	all, err := rt.ListContainers(c, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, ctr := range all {
		if ctr.Id == id && ctr.State != cri.ContainerState_CONTAINER_RUNNING {
			t.Errorf("ListContainers(\"\") has the running container as %v", ctr.State)
		}
	}
	start := time.Now()
	if err := rt.StopContainer(c, id, 2); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stop took %v with a 2s grace period", d)
	}
	st, _ = rt.ContainerStatus(c, id)
	if st.State != cri.ContainerState_CONTAINER_EXITED || st.FinishedAt == 0 || st.ExitCode == 0 {
		t.Errorf("after stop: state %v finishedAt %d exit %d", st.State, st.FinishedAt, st.ExitCode)
	}
	if err := rt.RemoveContainer(c, id); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.ContainerStatus(c, id); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("status after remove: %v, want ErrNotFound", err)
	}
}

func testContainerStatuses(t *testing.T, rt runtime.Runtime, o Options) {
	c := ctx(t)
	sbCfg := sandboxConfig(t, "sts")
	sb, err := rt.RunPodSandbox(c, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.RemovePodSandbox(c, sb)
	other := sandboxConfig(t, "other")
	osb, err := rt.RunPodSandbox(c, other)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.RemovePodSandbox(c, osb)
	if _, err := rt.CreateContainer(c, osb, containerConfig(o, "elsewhere"), other); err != nil {
		t.Fatal(err)
	}
	created, err := rt.CreateContainer(c, sb, containerConfig(o, "created"), sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	running, err := rt.CreateContainer(c, sb, containerConfig(o, "running"), sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(c, running); err != nil {
		t.Fatal(err)
	}
	sts, err := runtime.ContainerStatuses(c, rt, sb)
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 2 || sts[0].Id != created || sts[1].Id != running {
		t.Fatalf("statuses of %v, want of [%s %s], oldest first", sts, created, running)
	}
	for _, got := range sts {
		want, err := rt.ContainerStatus(c, got.Id)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != want.State || got.Metadata.GetName() != want.Metadata.GetName() || got.StartedAt != want.StartedAt ||
			got.CreatedAt != want.CreatedAt || got.Image != want.Image || got.LogPath != want.LogPath ||
			got.Annotations[runtime.AnnotationRestartCount] != want.Annotations[runtime.AnnotationRestartCount] {
			t.Errorf("listed status %+v, ContainerStatus %+v", got, want)
		}
	}
	if sts[0].State != cri.ContainerState_CONTAINER_CREATED || sts[1].State != cri.ContainerState_CONTAINER_RUNNING {
		t.Errorf("states %v and %v, want created and running", sts[0].State, sts[1].State)
	}
}

func testNotFound(t *testing.T, rt runtime.Runtime, _ Options) {
	c := ctx(t)
	if _, err := rt.ContainerStatus(c, "nope"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("ContainerStatus: %v", err)
	}
	if err := rt.StartContainer(c, "nope"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("StartContainer: %v", err)
	}
	if err := rt.StopPodSandbox(c, "nope"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("StopPodSandbox: %v", err)
	}
}

func testImages(t *testing.T, rt runtime.Runtime, o Options) {
	c := ctx(t)
	img, err := rt.ImageStatus(c, o.Image)
	if err != nil || img == nil || img.Id == "" {
		t.Fatalf("ImageStatus(%s) = %+v, %v; want present", o.Image, img, err)
	}
	list, err := rt.ListImages(c)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, i := range list {
		found = found || i.Id == img.Id
	}
	if !found {
		t.Errorf("ListImages lacks %s", img.Id)
	}
	if img, err := rt.ImageStatus(c, o.MissingImage); err != nil || img != nil {
		t.Errorf("ImageStatus(missing) = %+v, %v; want nil, nil", img, err)
	}
	if _, err := rt.PullImage(c, o.MissingImage, true); err == nil {
		t.Error("pulling a missing image succeeded")
	}
}

func testInvalidImage(t *testing.T, rt runtime.Runtime, _ Options) {
	if _, err := rt.PullImage(ctx(t), "Not A Valid/Name", false); !errors.Is(err, runtime.ErrInvalidImageName) {
		t.Errorf("PullImage(invalid) = %v, want ErrInvalidImageName", err)
	}
}

func testRemoveSandboxRemovesContainers(t *testing.T, rt runtime.Runtime, o Options) {
	c := ctx(t)
	sbCfg := sandboxConfig(t, "rm")
	sb, err := rt.RunPodSandbox(c, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	id, err := rt.CreateContainer(c, sb, containerConfig(o, "main"), sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(c, id); err != nil {
		t.Fatal(err)
	}
	if err := rt.StopPodSandbox(c, sb); err != nil {
		t.Fatal(err)
	}
	if err := rt.RemovePodSandbox(c, sb); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.ContainerStatus(c, id); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("container of a removed sandbox: %v, want ErrNotFound", err)
	}
}

// waitExited polls a container until it exits (the runtime has no events).
func waitExited(t *testing.T, rt runtime.Runtime, id string) *cri.ContainerStatus {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		st, err := rt.ContainerStatus(ctx(t), id)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == cri.ContainerState_CONTAINER_EXITED {
			return st
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("container %s did not exit in 30s", id)
	return nil
}

func runToExit(t *testing.T, rt runtime.Runtime, o Options, name string, cfg *cri.ContainerConfig) (*cri.ContainerStatus, string) {
	t.Helper()
	c := ctx(t)
	sbCfg := sandboxConfig(t, name)
	sb, err := rt.RunPodSandbox(c, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.RemovePodSandbox(context.Background(), sb) })
	id, err := rt.CreateContainer(c, sb, cfg, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(c, id); err != nil {
		t.Fatal(err)
	}
	st := waitExited(t, rt, id)
	var buf bytes.Buffer
	if err := rt.ReadLog(c, &cri.ReadLogRequest{ContainerId: id, TailLines: -1}, &buf); err != nil {
		t.Fatal(err)
	}
	return st, buf.String()
}

func testExitCodeAndLogs(t *testing.T, rt runtime.Runtime, o Options) {
	st, logs := runToExit(t, rt, o, "exit", containerConfig(o, "main", "sh", "-c", "echo one; echo two >&2; echo three; exit 3"))
	if st.ExitCode != 3 || st.Reason != "Error" {
		t.Errorf("exit code %d reason %q, want 3 Error", st.ExitCode, st.Reason)
	}
	for _, want := range []string{"one\n", "two\n", "three\n"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log %q lacks %q", logs, want)
		}
	}
	st, _ = runToExit(t, rt, o, "ok", containerConfig(o, "main", "true"))
	if st.ExitCode != 0 || st.Reason != "Completed" {
		t.Errorf("exit code %d reason %q, want 0 Completed", st.ExitCode, st.Reason)
	}
}

func testLogTimestamps(t *testing.T, rt runtime.Runtime, o Options) {
	st, _ := runToExit(t, rt, o, "stamps", containerConfig(o, "main", "sh", "-c", "echo one; sleep 1; echo two >&2"))
	read := func(req *cri.ReadLogRequest) string {
		t.Helper()
		req.ContainerId, req.TailLines = st.Id, -1
		var buf bytes.Buffer
		if err := rt.ReadLog(ctx(t), req, &buf); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	lines := strings.Split(strings.TrimSuffix(read(&cri.ReadLogRequest{Timestamps: true}), "\n"), "\n")
	var times []time.Time
	for i, want := range []string{"one", "two"} {
		if i >= len(lines) {
			t.Fatalf("log with timestamps %q has no line %q", lines, want)
		}
		ts, text, _ := strings.Cut(lines[i], " ")
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil || text != want || len(ts) != len("2006-01-02T15:04:05.000000000Z") {
			t.Fatalf("line %q: want a fixed-width RFC 3339 time and %q (%v)", lines[i], want, err)
		}
		times = append(times, at)
	}
	if d := times[1].Sub(times[0]); d < 900*time.Millisecond || d > 5*time.Second {
		t.Errorf("the lines were stamped %v apart, around the 1s the container slept", d)
	}
	if got := read(&cri.ReadLogRequest{SinceTime: times[1].Add(-100 * time.Millisecond).UnixNano()}); got != "two\n" {
		t.Errorf("since the second line: %q, want only it", got)
	}
}

func testExec(t *testing.T, rt runtime.Runtime, o Options) {
	c := ctx(t)
	sbCfg := sandboxConfig(t, "exec")
	sb, err := rt.RunPodSandbox(c, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.RemovePodSandbox(c, sb)
	id, err := rt.CreateContainer(c, sb, containerConfig(o, "main"), sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(c, id); err != nil {
		t.Fatal(err)
	}
	defer rt.StopContainer(c, id, 0)
	resp, err := rt.ExecSync(c, id, []string{"sh", "-c", "echo out; exit 4"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ExitCode != 4 || string(resp.Stdout) != "out\n" {
		t.Errorf("exec: exit %d stdout %q, want 4 %q", resp.ExitCode, resp.Stdout, "out\n")
	}
}

func testPortForward(t *testing.T, rt runtime.Runtime, o Options) {
	c := ctx(t)
	sbCfg := sandboxConfig(t, "forward")
	sb, err := rt.RunPodSandbox(c, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.RemovePodSandbox(c, sb)
	// httpd on the pod's 127.0.0.1 only: reachable from inside its
	// network namespace, not through the pod IP.
	id, err := rt.CreateContainer(c, sb, containerConfig(o, "main", "sh", "-c",
		"mkdir -p /tmp/www && echo hello from the pod > /tmp/www/index.html && exec httpd -f -p 127.0.0.1:8080 -h /tmp/www"), sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(c, id); err != nil {
		t.Fatal(err)
	}
	defer rt.StopContainer(c, id, 0)
	var out bytes.Buffer
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The request, then end of input: httpd answers a request whose
		// sender half-closed, then closes, which ends PortForward.
		out.Reset()
		in := strings.NewReader("GET / HTTP/1.0\r\n\r\n")
		err = rt.PortForward(c, sb, 8080, struct {
			io.Reader
			io.Writer
		}{in, &out})
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // httpd not listening yet
	}
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "200 OK") || !strings.Contains(out.String(), "hello from the pod") {
		t.Errorf("port-forward answer %q, want httpd's 200 and the page", out.String())
	}
	if err := rt.PortForward(c, sb, 8081, struct {
		io.Reader
		io.Writer
	}{strings.NewReader(""), io.Discard}); err == nil {
		t.Error("port-forward to a port nobody listens on succeeded")
	}
}

func testPortForwardNotFound(t *testing.T, rt runtime.Runtime, _ Options) {
	err := rt.PortForward(ctx(t), "no-such-sandbox", 80, struct {
		io.Reader
		io.Writer
	}{strings.NewReader(""), io.Discard})
	if !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("port-forward to an unknown sandbox: %v, want ErrNotFound", err)
	}
}

func testEnvAndNetwork(t *testing.T, rt runtime.Runtime, o Options) {
	cfg := containerConfig(o, "main", "sh", "-c", "echo $GREETING; cat /proc/net/dev | grep -c eth0")
	cfg.Envs = []*cri.KeyValue{{Key: "GREETING", Value: "hello"}}
	st, logs := runToExit(t, rt, o, "env", cfg)
	if st.ExitCode != 0 {
		t.Errorf("exit %d, log %q", st.ExitCode, logs)
	}
	if logs != "hello\n1\n" {
		t.Errorf("log %q, want the variable and one eth0", logs)
	}
}

func statsOf(t *testing.T, rt runtime.Runtime, id string) *cri.ContainerStats {
	t.Helper()
	list, err := rt.ListContainerStats(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range list {
		if st.ContainerId == id {
			return st
		}
	}
	return nil
}

func testStatsLifecycle(t *testing.T, rt runtime.Runtime, o Options) {
	c := ctx(t)
	sbCfg := sandboxConfig(t, "stats")
	sb, err := rt.RunPodSandbox(c, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.RemovePodSandbox(c, sb)
	id, err := rt.CreateContainer(c, sb, containerConfig(o, "main"), sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(c, id); err != nil {
		t.Fatal(err)
	}
	if st := statsOf(t, rt, id); st == nil || st.ProcessCount == 0 {
		t.Errorf("stats of a running container: %+v, want listed with a process", st)
	} else if st.Timestamp == 0 || st.MemoryUsageBytes == 0 || st.MemoryUsageBytes < st.MemoryWorkingSetBytes {
		t.Errorf("stats of a running container: %+v, want a timestamp and memory usage at least the working set", st)
	}
	if err := rt.StopContainer(c, id, 0); err != nil {
		t.Fatal(err)
	}
	if st := statsOf(t, rt, id); st == nil || st.ProcessCount != 0 || st.MemoryWorkingSetBytes != 0 {
		t.Errorf("stats of an exited container: %+v, want listed with no process and no memory", st)
	}
}

func testStatsUsage(t *testing.T, rt runtime.Runtime, o Options) {
	c := ctx(t)
	sbCfg := sandboxConfig(t, "usage")
	sb, err := rt.RunPodSandbox(c, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.RemovePodSandbox(c, sb)
	// Two processes (sh and sleep) and 4MiB written to the rootfs.
	cfg := containerConfig(o, "main", "sh", "-c", "dd if=/dev/zero of=/fill bs=1048576 count=4 2>/dev/null; sleep 3600 & wait")
	id, err := rt.CreateContainer(c, sb, cfg, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(c, id); err != nil {
		t.Fatal(err)
	}
	defer rt.StopContainer(c, id, 0)
	var st *cri.ContainerStats
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if st = statsOf(t, rt, id); st != nil && st.WritableLayerBytes >= 4<<20 && st.ProcessCount >= 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st == nil || st.WritableLayerBytes < 4<<20 || st.WritableLayerInodes == 0 || st.ProcessCount < 2 || st.MemoryWorkingSetBytes == 0 {
		t.Errorf("stats %+v, want a writable layer of at least 4MiB, 2 processes and some memory", st)
	}
}

func testExecStreams(t *testing.T, rt runtime.Runtime, o Options) {
	c := ctx(t)
	sbCfg := sandboxConfig(t, "streams")
	sb, err := rt.RunPodSandbox(c, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.RemovePodSandbox(c, sb)
	id, err := rt.CreateContainer(c, sb, containerConfig(o, "main"), sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(c, id); err != nil {
		t.Fatal(err)
	}
	defer rt.StopContainer(c, id, 0)
	exec := func(opts runtime.ExecOptions) (int32, string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		opts.Stdout, opts.Stderr = &stdout, &stderr
		ectx, cancel := context.WithTimeout(c, 20*time.Second)
		defer cancel()
		code, err := rt.Exec(ectx, id, opts)
		if err != nil {
			t.Fatalf("exec %v: %v", opts.Cmd, err)
		}
		return code, stdout.String(), stderr.String()
	}
	if code, out, errOut := exec(runtime.ExecOptions{Cmd: []string{"sh", "-c", "echo out; echo err >&2; exit 5"}}); code != 5 || out != "out\n" || errOut != "err\n" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 5, out, err", code, out, errOut)
	}
	// cat ends only when its input does.
	if code, out, _ := exec(runtime.ExecOptions{Cmd: []string{"cat"}, Stdin: strings.NewReader("hello\n")}); code != 0 || out != "hello\n" {
		t.Errorf("cat: exit %d, stdout %q; want 0 and the input", code, out)
	}
	// A command still reading when its exec is cancelled is killed.
	cctx, cancel := context.WithTimeout(c, 500*time.Millisecond)
	defer cancel()
	began := time.Now()
	if _, err := rt.Exec(cctx, id, runtime.ExecOptions{Cmd: []string{"cat"}, Stdin: blockingReader{cctx}}); err == nil {
		t.Error("a cancelled exec reported no error")
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("a cancelled exec took %v to return", d)
	}
	resize := make(chan runtime.TerminalSize, 1)
	resize <- runtime.TerminalSize{Width: 100, Height: 40}
	code, out, _ := exec(runtime.ExecOptions{Cmd: []string{"sh", "-c", "sleep 0.5; tty; stty size"}, TTY: true, Resize: resize})
	if code != 0 || !strings.HasPrefix(out, "/dev/pts/") || !strings.Contains(out, "40 100") {
		t.Errorf("on a terminal: exit %d, output %q; want a /dev/pts terminal of 40 rows and 100 columns", code, out)
	}
}

func testExecNotFound(t *testing.T, rt runtime.Runtime, _ Options) {
	if _, err := rt.Exec(ctx(t), "nope", runtime.ExecOptions{Cmd: []string{"true"}}); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Exec(unknown) = %v, want ErrNotFound", err)
	}
}

// blockingReader has no input until ctx ends: a user who never types.
type blockingReader struct{ ctx context.Context }

func (b blockingReader) Read([]byte) (int, error) {
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}

func testAttachLifecycle(t *testing.T, rt runtime.Runtime, o Options) {
	c := ctx(t)
	if err := rt.Attach(c, "nope", runtime.ExecOptions{Stdout: io.Discard}); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Attach(unknown) = %v, want ErrNotFound", err)
	}
	sbCfg := sandboxConfig(t, "attach")
	sb, err := rt.RunPodSandbox(c, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.RemovePodSandbox(c, sb)
	id, err := rt.CreateContainer(c, sb, containerConfig(o, "main"), sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Attach(c, id, runtime.ExecOptions{Stdout: io.Discard}); err == nil {
		t.Error("attach to a container not yet started succeeded")
	}
	if err := rt.StartContainer(c, id); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rt.Attach(c, id, runtime.ExecOptions{Stdout: io.Discard, Stdin: blockingReader{c}}) }()
	select {
	case err := <-done:
		t.Fatalf("attach to a running container returned at once: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := rt.StopContainer(c, id, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("attach ended with %v when its container exited, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("attach did not end when its container exited")
	}
	// A cancelled attach ends at once.
	id2, err := rt.CreateContainer(c, sb, containerConfig(o, "second"), sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(c, id2); err != nil {
		t.Fatal(err)
	}
	defer rt.StopContainer(c, id2, 0)
	actx, cancel := context.WithTimeout(c, 200*time.Millisecond)
	defer cancel()
	began := time.Now()
	if err := rt.Attach(actx, id2, runtime.ExecOptions{Stdout: io.Discard}); err == nil {
		t.Error("a cancelled attach reported no error")
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("a cancelled attach took %v to return", d)
	}
}

// attachRun starts a container from cfg, attaches with stdin and returns
// what the attach wrote and the container's log once it exited.
func attachRun(t *testing.T, rt runtime.Runtime, name string, cfg *cri.ContainerConfig, stdin io.Reader) (out, log string) {
	t.Helper()
	c := ctx(t)
	sbCfg := sandboxConfig(t, name)
	sb, err := rt.RunPodSandbox(c, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.RemovePodSandbox(c, sb)
	id, err := rt.CreateContainer(c, sb, cfg, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(c, id); err != nil {
		t.Fatal(err)
	}
	defer rt.StopContainer(c, id, 0)
	var stdout bytes.Buffer
	actx, cancel := context.WithTimeout(c, 20*time.Second)
	defer cancel()
	resize := make(chan runtime.TerminalSize, 1)
	resize <- runtime.TerminalSize{Width: 100, Height: 40}
	if err := rt.Attach(actx, id, runtime.ExecOptions{Stdin: stdin, Stdout: &stdout, Stderr: &stdout, Resize: resize}); err != nil {
		t.Fatalf("attach: %v (output %q)", err, stdout.String())
	}
	st := waitExited(t, rt, id)
	var logBuf bytes.Buffer
	if err := rt.ReadLog(c, &cri.ReadLogRequest{ContainerId: id, TailLines: -1}, &logBuf); err != nil {
		t.Fatal(err)
	}
	if st.ExitCode != 0 {
		t.Errorf("exit code %d, want 0 (log %q)", st.ExitCode, logBuf.String())
	}
	return stdout.String(), logBuf.String()
}

func testAttachStdinOnce(t *testing.T, rt runtime.Runtime, o Options) {
	cfg := containerConfig(o, "cat", "cat")
	cfg.Stdin, cfg.StdinOnce = true, true
	// cat exits when its input ends: the first client's input closed it.
	out, log := attachRun(t, rt, "stdin", cfg, strings.NewReader("hello\n"))
	if out != "hello\n" || !strings.Contains(log, "hello") {
		t.Errorf("attach output %q, log %q; want the input echoed in both", out, log)
	}
}

func testAttachTTY(t *testing.T, rt runtime.Runtime, o Options) {
	cfg := containerConfig(o, "sh", "sh")
	cfg.Stdin, cfg.StdinOnce, cfg.Tty = true, true, true
	// A user's input does not end: closing a terminal hangs it up, which
	// may drop what the shell has not read yet.
	out, log := attachRun(t, rt, "tty", cfg, io.MultiReader(strings.NewReader("tty; stty size; exit\n"), blockingReader{ctx(t)}))
	if !strings.Contains(out, "/dev/pts/") || !strings.Contains(out, "40 100") {
		t.Errorf("attach output %q; want a /dev/pts terminal of 40 rows and 100 columns", out)
	}
	if !strings.Contains(log, "/dev/pts/") {
		t.Errorf("log %q; want the terminal's output", log)
	}
}

func testNamespaces(t *testing.T, rt runtime.Runtime, o Options) {
	c := ctx(t)
	hostPID, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	hostIPC, err := os.Readlink("/proc/self/ns/ipc")
	if err != nil {
		t.Fatal(err)
	}
	nsOf := func(sb, name string, sbCfg *cri.PodSandboxConfig, target string) string {
		t.Helper()
		cfg := containerConfig(o, name)
		cfg.TargetContainerId = target
		id, err := rt.CreateContainer(c, sb, cfg, sbCfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.StartContainer(c, id); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rt.StopContainer(context.Background(), id, 0) })
		resp, err := rt.ExecSync(c, id, []string{"sh", "-c", "readlink /proc/self/ns/pid; readlink /proc/self/ns/ipc"}, 10)
		if err != nil || resp.ExitCode != 0 {
			t.Fatalf("readlink in %s: %v %+v", name, err, resp)
		}
		return strings.TrimSpace(string(resp.Stdout))
	}
	hostCfg := sandboxConfig(t, "hostns")
	hostCfg.HostPid, hostCfg.HostIpc = true, true
	hostSB, err := rt.RunPodSandbox(c, hostCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.RemovePodSandbox(c, hostSB)
	if got, want := nsOf(hostSB, "host", hostCfg, ""), hostPID+"\n"+hostIPC; got != want {
		t.Errorf("a hostPID, hostIPC pod's namespaces are %q, want the host's %q", got, want)
	}
	podCfg := sandboxConfig(t, "podns")
	podSB, err := rt.RunPodSandbox(c, podCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.RemovePodSandbox(c, podSB)
	own := nsOf(podSB, "own", podCfg, "")
	if strings.Contains(own, hostPID) || strings.Contains(own, hostIPC) {
		t.Errorf("a pod without hostPID or hostIPC has the host's namespaces: %q", own)
	}
	list, err := rt.ListContainers(c, podSB)
	if err != nil || len(list) != 1 {
		t.Fatalf("containers %v, %v", list, err)
	}
	shared := nsOf(podSB, "debugger", podCfg, list[0].Id)
	if strings.Split(shared, "\n")[0] != strings.Split(own, "\n")[0] {
		t.Errorf("a container targeting another has PID namespace %q, want its target's %q", shared, own)
	}
}

// events receives rt's container events in the background; the channel
// closes when the stream ends.
func events(t *testing.T, c context.Context, rt runtime.Runtime) <-chan *cri.ContainerEventResponse {
	t.Helper()
	stream, err := rt.GetContainerEvents(c)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan *cri.ContainerEventResponse, 100)
	go func() {
		defer close(out)
		for {
			ev, err := stream.Recv()
			if err != nil {
				return
			}
			out <- ev
		}
	}()
	return out
}

// nextEvent returns the next event of container id, skipping others.
func nextEvent(t *testing.T, evs <-chan *cri.ContainerEventResponse, id string) *cri.ContainerEventResponse {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-evs:
			if !ok {
				t.Fatalf("the event stream ended waiting for an event of %s", id)
			}
			if ev.ContainerId == id {
				return ev
			}
		case <-timeout:
			t.Fatalf("no event of %s in 10s", id)
		}
	}
}

func testEventsLifecycle(t *testing.T, rt runtime.Runtime, o Options) {
	c := ctx(t)
	sub, cancel := context.WithCancel(c)
	defer cancel()
	evs := events(t, sub, rt)
	sbCfg := sandboxConfig(t, "ev")
	sb, err := rt.RunPodSandbox(c, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.RemovePodSandbox(c, sb)
	id, err := rt.CreateContainer(c, sb, containerConfig(o, "main"), sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(c, id); err != nil {
		t.Fatal(err)
	}
	if err := rt.StopContainer(c, id, 2); err != nil {
		t.Fatal(err)
	}
	if err := rt.RemoveContainer(c, id); err != nil {
		t.Fatal(err)
	}
	for _, want := range []cri.ContainerEventType{
		cri.ContainerEventType_CONTAINER_CREATED_EVENT, cri.ContainerEventType_CONTAINER_STARTED_EVENT,
		cri.ContainerEventType_CONTAINER_STOPPED_EVENT, cri.ContainerEventType_CONTAINER_DELETED_EVENT,
	} {
		ev := nextEvent(t, evs, id)
		if ev.ContainerEventType != want {
			t.Fatalf("event %v, want %v", ev.ContainerEventType, want)
		}
		if ev.PodSandboxId != sb || ev.PodSandboxMetadata.GetUid() != "uid-ev" || ev.CreatedAt == 0 {
			t.Errorf("%v event names sandbox %q pod %+v at %d, want %s, uid-ev and a time", want, ev.PodSandboxId, ev.PodSandboxMetadata, ev.CreatedAt, sb)
		}
	}
	cancel()
	select {
	case <-evs:
		for range evs {
		}
	case <-time.After(5 * time.Second):
		t.Error("the stream did not end with its context")
	}
}

func testEventsExit(t *testing.T, rt runtime.Runtime, o Options) {
	c := ctx(t)
	evs := events(t, c, rt)
	sbCfg := sandboxConfig(t, "evexit")
	sb, err := rt.RunPodSandbox(c, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.RemovePodSandbox(c, sb)
	id, err := rt.CreateContainer(c, sb, containerConfig(o, "main", "sh", "-c", "sleep 0.2; exit 3"), sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(c, id); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, evs, id) // created
	nextEvent(t, evs, id) // started
	ev := nextEvent(t, evs, id)
	if ev.ContainerEventType != cri.ContainerEventType_CONTAINER_STOPPED_EVENT {
		t.Fatalf("event %v, want stopped", ev.ContainerEventType)
	}
	// The event comes once the exit is visible.
	if st, err := rt.ContainerStatus(c, id); err != nil || st.State != cri.ContainerState_CONTAINER_EXITED || st.ExitCode != 3 {
		t.Errorf("status after the stopped event: %+v, %v; want exited with 3", st, err)
	}
}
