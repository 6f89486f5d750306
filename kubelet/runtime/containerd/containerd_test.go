package containerd_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"minik/deploy/images"
	"minik/kubelet/runtime"
	"minik/kubelet/runtime/conformance"
	"minik/kubelet/runtime/containerd"
	"minik/proto/cri"
)

var (
	daemonOnce sync.Once
	daemon     *containerd.Daemon
	daemonDir  string
	daemonErr  error
	seq        int
)

// TestMain stops the test's containerd at the end: it is not tied to the
// test process's life.
func TestMain(m *testing.M) {
	code := m.Run()
	if daemon != nil {
		daemon.Stop()
		os.RemoveAll(daemonDir)
		os.RemoveAll(containerd.DaemonStateDir(daemonDir))
	}
	os.Exit(code)
}

// testDaemon starts one containerd of our own for the test binary, under
// a temp dir; it never touches a system or Docker containerd.
func testDaemon(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs containerd and root; skipped under -short")
	}
	daemonOnce.Do(func() {
		daemonDir, daemonErr = os.MkdirTemp("", "minik-ctd-")
		if daemonErr != nil {
			return
		}
		daemon, daemonErr = containerd.StartDaemon(context.Background(), daemonDir)
	})
	if daemonErr != nil {
		t.Fatalf("starting containerd (CI installs containerd and runc): %v", daemonErr)
	}
	return daemon.Address
}

// newRuntime returns a runtime in a fresh namespace with busybox loaded;
// configure, if given, changes its Config.
func newRuntime(t *testing.T, configure ...func(*containerd.Config)) *containerd.Runtime {
	rt, _ := newRuntimeAndConfig(t, configure...)
	return rt
}

// newRuntimeAndConfig is newRuntime, also returning the runtime's Config
// (for a test that starts another runtime on the same node).
func newRuntimeAndConfig(t *testing.T, configure ...func(*containerd.Config)) (*containerd.Runtime, containerd.Config) {
	addr := testDaemon(t)
	seq++
	ns := fmt.Sprintf("minik-test%d-%d", os.Getpid(), seq)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if _, err := containerd.Import(ctx, addr, ns, busyboxArchive(t, "sh")); err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: runc refuses namespace paths with a comma in them,
	// and subtest names have commas.
	stateDir, err := os.MkdirTemp("", "minik-state-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stateDir); os.RemoveAll(containerd.RunDirFor(filepath.Join(stateDir, "state"))) })
	cidr := fmt.Sprintf("10.%d.%d.0/24", 200+seq/250, seq%250)
	cfg := containerd.Config{Address: addr, Namespace: ns, StateDir: filepath.Join(stateDir, "state"), PodCIDR: cidr}
	for _, c := range configure {
		c(&cfg)
	}
	rt, err := containerd.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		removeSandboxes(rt)
		rt.Close()
		containerd.RemoveNodeNetwork(ns, cidr) // the bridge and its iptables rules
	})
	return rt, cfg
}

// removeSandboxes removes every sandbox rt knows, with its containers.
func removeSandboxes(rt *containerd.Runtime) {
	sbs, _ := rt.ListPodSandbox(context.Background(), "")
	for _, sb := range sbs {
		_ = rt.RemovePodSandbox(context.Background(), sb.Id)
	}
}

// busyboxArchive is the busybox image, as an OCI archive, with cmd as its
// default command (another command, another image ID).
func busyboxArchive(t *testing.T, cmd ...string) *bytes.Buffer {
	t.Helper()
	files, err := images.Busybox(images.DefaultBusyboxPath)
	if err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if err := images.WriteOCIArchive(&archive, images.BusyboxName, files, cmd); err != nil {
		t.Fatal(err)
	}
	return &archive
}

// hostSandbox runs a sandbox of the host's network for a pod named name.
func hostSandbox(ctx context.Context, t *testing.T, rt *containerd.Runtime, name string) string {
	t.Helper()
	id, err := rt.RunPodSandbox(ctx, &cri.PodSandboxConfig{
		Metadata: &cri.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name}, HostNetwork: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// sleeper creates (without starting) a busybox container named name in
// sandbox sb that sleeps for an hour.
func sleeper(ctx context.Context, t *testing.T, rt *containerd.Runtime, sb, name string) string {
	t.Helper()
	id, err := rt.CreateContainer(ctx, sb, &cri.ContainerConfig{
		Metadata: &cri.ContainerMetadata{Name: name}, Image: "busybox", Command: []string{"sleep", "3600"},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestConformance(t *testing.T) {
	conformance.Run(t, func(t *testing.T) runtime.Runtime { return newRuntime(t) }, conformance.Options{
		Image: "busybox", MissingImage: "localhost:1/missing:1", RunsProcesses: true,
	})
}

// TestConformanceOverSocket runs the suite through the mini-CRI socket,
// as minik up's kubelet reaches containerd: the gRPC adapters with real
// containers behind them (streams, exit codes, errors).
func TestConformanceOverSocket(t *testing.T) {
	conformance.Run(t, func(t *testing.T) runtime.Runtime {
		rt := newRuntime(t)
		dir, err := os.MkdirTemp("", "minik-cri-") // short: a socket path has a length limit
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		sock := filepath.Join(dir, "cri.sock")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go runtime.Serve(ctx, l, rt)
		r, err := runtime.Dial(sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}, conformance.Options{Image: "busybox", MissingImage: "localhost:1/missing:1", RunsProcesses: true})
}

// The process spec made from an image and a container's user options is
// kept and reused; containers asking for other options get their own.
func TestContainersOfOneImageGetTheUserTheyAskFor(t *testing.T) {
	rt := newRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sb, err := rt.RunPodSandbox(ctx, &cri.PodSandboxConfig{
		Metadata: &cri.PodSandboxMetadata{Name: "users", Namespace: "default", Uid: "uid-users"}, HostNetwork: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		sc   *cri.LinuxContainerSecurityContext
		want string // id -u; id -G
	}{
		{"as the image says", nil, "0\n0\n"},
		{"as user 1000 in groups 5 and 6", &cri.LinuxContainerSecurityContext{HasRunAsUser: true, RunAsUser: 1000, SupplementalGroups: []int64{5, 6}}, "1000\n0 5 6\n"},
		{"as user 1000 and group 2000", &cri.LinuxContainerSecurityContext{HasRunAsUser: true, RunAsUser: 1000, HasRunAsGroup: true, RunAsGroup: 2000}, "1000\n2000\n"},
		{"as the image says again", nil, "0\n0\n"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, err := rt.CreateContainer(ctx, sb, &cri.ContainerConfig{
				Metadata: &cri.ContainerMetadata{Name: fmt.Sprintf("c%d", i)}, Image: "busybox",
				Command: []string{"sleep", "3600"}, SecurityContext: tc.sc,
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := rt.StartContainer(ctx, id); err != nil {
				t.Fatal(err)
			}
			res, err := rt.ExecSync(ctx, id, []string{"sh", "-c", "id -u; id -G"}, 10)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(res.Stdout); got != tc.want {
				t.Fatalf("id printed %q (stderr %q), want %q", got, res.Stderr, tc.want)
			}
		})
	}
}
