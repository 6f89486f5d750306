package containerd_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik/kubelet/runtime"
	"minik/kubelet/runtime/containerd"
	"minik/proto/cri"
)

// A container that prints 5 bursts of ~6KB, a second apart, with a 4KiB
// max size and 3 files: its log rotates as the kubelet's does (at most
// once a second), and kubectl logs reads the current file.
func TestContainerLogRotation(t *testing.T) {
	rt := newRuntime(t, func(c *containerd.Config) { c.ContainerLogMaxSize, c.ContainerLogMaxFiles = 4096, 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, sbCfg, logDir := podWithLogs(t, ctx, rt, "chatty")
	const lines, burst = 300, 60
	id := runToExit(t, ctx, rt, sb, sbCfg, 0, "sh", "-c", fmt.Sprintf(`i=0; while [ $i -lt %d ]; do echo "line $i ................................................"; i=$((i+1)); [ $((i %% %d)) = 0 ] && sleep 1.1; done`, lines, burst))
	current := filepath.Join(logDir, "main", "0.log")
	var rotated []string
	deadline := time.Now().Add(10 * time.Second)
	for { // the last clean-up may still run when the container has exited
		rotated = runtime.RotatedLogs(current)
		if len(rotated) == 2 && strings.HasSuffix(rotated[0], ".gz") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(rotated) != 2 || !strings.HasSuffix(rotated[0], ".gz") || strings.HasSuffix(rotated[1], ".gz") {
		t.Fatalf("rotated logs %v: want 2 (3 files with the current), the older gzipped", rotated)
	}

	// kubectl logs: the current file, whose last line is the last printed.
	var out bytes.Buffer
	if err := rt.ReadLog(ctx, &cri.ReadLogRequest{ContainerId: id, TailLines: -1}, &out); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if last := got[len(got)-1]; !strings.HasPrefix(last, fmt.Sprintf("line %d ", lines-1)) {
		t.Errorf("last line read %q, want line %d", last, lines-1)
	}
	if strings.Contains(out.String(), "line 0 ") {
		t.Error("kubectl logs read the first line: the log was not rotated")
	}
	// The kept files hold an unbroken run of lines up to the last.
	var all strings.Builder
	for _, f := range rotated {
		all.WriteString(readMaybeGzip(t, f))
	}
	all.WriteString(readMaybeGzip(t, current))
	entries := strings.Split(strings.TrimSuffix(all.String(), "\n"), "\n")
	first := -1
	for i, e := range entries {
		var n int
		if _, err := fmt.Sscanf(e[strings.Index(e, "line "):], "line %d", &n); err != nil {
			t.Fatalf("entry %q: %v", e, err)
		}
		if i == 0 {
			first = n
		} else if n != first+i {
			t.Fatalf("entry %d is line %d, want %d: lines lost across a rotation", i, n, first+i)
		}
	}
	if first+len(entries) != lines {
		t.Errorf("kept lines %d..%d, want up to %d", first, first+len(entries)-1, lines-1)
	}
}

func readMaybeGzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		if r, err = gzip.NewReader(f); err != nil {
			t.Fatal(err)
		}
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A container that prints much and exits at once: when its status first
// says exited, its log already ends with its last line (the shim closes
// the output after the exit, and the copy into the log may lag it).
func TestExitedContainerHasItsWholeLog(t *testing.T) {
	rt := newRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, sbCfg, _ := podWithLogs(t, ctx, rt, "burst")
	for attempt := range 3 {
		id := runToExit(t, ctx, rt, sb, sbCfg, attempt, "seq", "1", "100000")
		var out bytes.Buffer
		if err := rt.ReadLog(ctx, &cri.ReadLogRequest{ContainerId: id, TailLines: 1}, &out); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != "100000\n" {
			t.Fatalf("attempt %d: the log's last line when the container is seen exited is %q, want \"100000\\n\"", attempt, got)
		}
	}
}

// podWithLogs runs a sandbox named name whose containers log under a
// temporary directory, removed at the end of the test.
func podWithLogs(t *testing.T, ctx context.Context, rt *containerd.Runtime, name string) (sb string, sbCfg *cri.PodSandboxConfig, logDir string) {
	t.Helper()
	logDir = t.TempDir()
	sbCfg = &cri.PodSandboxConfig{
		Metadata:     &cri.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name},
		LogDirectory: logDir,
		Labels:       map[string]string{runtime.LabelPodName: name, runtime.LabelPodNamespace: "default", runtime.LabelPodUID: "uid-" + name},
	}
	sb, err := rt.RunPodSandbox(ctx, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.RemovePodSandbox(context.Background(), sb) })
	return sb, sbCfg, logDir
}

// runToExit creates and starts a container "main" (attempt n) running
// command, and returns its ID once its status says exited.
func runToExit(t *testing.T, ctx context.Context, rt *containerd.Runtime, sb string, sbCfg *cri.PodSandboxConfig, attempt int, command ...string) string {
	t.Helper()
	id, err := rt.CreateContainer(ctx, sb, &cri.ContainerConfig{
		Metadata: &cri.ContainerMetadata{Name: "main", Attempt: uint32(attempt)}, Image: "busybox", LogPath: fmt.Sprintf("main/%d.log", attempt),
		Command:     command,
		Labels:      map[string]string{runtime.LabelContainerName: "main"},
		Annotations: map[string]string{runtime.AnnotationRestartCount: fmt.Sprint(attempt)},
	}, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	for {
		st, err := rt.ContainerStatus(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == cri.ContainerState_CONTAINER_EXITED {
			return id
		}
		time.Sleep(5 * time.Millisecond)
	}
}
