package reset

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"minik/deploy/images"
	"minik/hostgw"
	ctdrt "minik/kubelet/runtime/containerd"
	"minik/proto/cri"
)

const childEnv = "MINIK_RESET_TEST_CHILD"

// TestResetLeavesNothing runs a pod on a real containerd, with the node
// proxy's nftables table and a host-gw route beside it, then resets and
// checks that nothing is left: containers, network namespaces, veths,
// the bridge, iptables rules, the nftables table, the route, mounts under
// the run root, the data dir. A reset removes every minik thing on its
// host, so the test runs in network and mount namespaces of its own (the
// test binary again, under unshare, with a tmpfs of its own on /run and a
// kubelet root of its own): other clusters on this machine are left alone.
func TestResetLeavesNothing(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		resetChild(t)
		return
	}
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("needs root, containerd and the CNI plugins; skipped under -short")
	}
	cmd := exec.Command("unshare", "--net", "--mount", "--propagation", "private",
		os.Args[0], "-test.run", "^TestResetLeavesNothing$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("child (%v):\n%s", time.Since(start).Round(time.Millisecond), out.String())
	if err != nil || !strings.Contains(out.String(), "--- PASS: TestResetLeavesNothing") {
		t.Fatalf("the reset test in its own namespaces failed: %v", err)
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func resetChild(t *testing.T) {
	// A /run of this mount namespace's own: the host's /run/minik (other
	// clusters' state, and the mounts of it this namespace began with) is
	// out of reach, also once the reset unmounts what is under the run
	// root. (A tmpfs on /run/minik alone would not do: unmounting it shows
	// the host's directory again.)
	if err := unix.Mount("tmpfs", "/run", "tmpfs", 0, "mode=0755"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(ctdrt.RunRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(ctdrt.RunRoot); err != nil || len(ents) != 0 {
		t.Fatalf("the run root is not this test's own: %v (%v)", ents, err)
	}
	kubeletRoot, err := os.MkdirTemp("", "minik-reset-kubelet-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(kubeletRoot)
	run(t, "ip", "link", "set", "lo", "up")
	dataDir, err := os.MkdirTemp("", "minik-reset-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dataDir)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The containerd stands for the host's: outside the data dir.
	daemonDir, err := os.MkdirTemp("", "minik-reset-ctd-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(daemonDir)
	daemon, err := ctdrt.StartDaemon(ctx, daemonDir)
	if err != nil {
		t.Fatalf("containerd (CI installs it): %v", err)
	}
	defer daemon.Stop()
	const node = "resetnode"
	ns := ctdrt.NamespaceFor(node)
	files, err := images.Busybox(images.DefaultBusyboxPath)
	if err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if err := images.WriteOCIArchive(&archive, images.BusyboxName, files, []string{"sh"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ctdrt.Import(ctx, daemon.Address, ns, &archive); err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(dataDir, "kubelet", node, "runtime")
	rt, err := ctdrt.New(ctx, ctdrt.Config{Address: daemon.Address, Namespace: ns, StateDir: stateDir, PodCIDR: "10.244.77.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	sbCfg := &cri.PodSandboxConfig{Metadata: &cri.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: "uid-p"},
		Hostname: "p", LogDirectory: filepath.Join(dataDir, "logs"),
		PortMappings: []*cri.PortMapping{{Protocol: "TCP", ContainerPort: 8080, HostPort: 38080}}}
	sb, err := rt.RunPodSandbox(ctx, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	id, err := rt.CreateContainer(ctx, sb, &cri.ContainerConfig{Metadata: &cri.ContainerMetadata{Name: "c"}, Image: "busybox",
		Command: []string{"sleep", "3600"}, LogPath: "c/0.log"}, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	rt.Close() // as a stopped kubelet: the pod runs on
	run(t, "nft", "add", "table", "ip", ProxyTable)
	run(t, "ip", "route", "add", "10.244.78.0/24", "dev", "lo", "proto", fmt.Sprint(hostgw.Protocol))

	// What the pod left, before the reset.
	before := observe(t, ctx, daemon.Address, ns, dataDir, ctdrt.RunDirFor(stateDir))
	for _, what := range []string{"containers: 1", "netns mounts: 1", "bridges: 1", "veths: 1", "iptables: 3", "host-port chains: 1", "nft: 1", "routes: 1", "data dir: 1", "cgroups: 1"} {
		if !strings.Contains(before, what) {
			t.Fatalf("before the reset, want %q in:\n%s", what, before)
		}
	}
	t.Logf("before the reset:\n%s", before)

	opts := Options{ContainerdAddresses: []string{daemon.Address}, OnlyTheseContainerds: true, DataDir: dataDir, KubeletRoot: kubeletRoot,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	if err := Run(ctx, opts); err != nil {
		t.Fatalf("reset: %v", err)
	}
	after := observe(t, ctx, daemon.Address, ns, dataDir, ctdrt.RunDirFor(stateDir))
	want := "containers: 0\nnetns mounts: 0\nbridges: 0\nveths: 0\niptables: 0\nhost-port chains: 0\nnft: 0\nroutes: 0\ndata dir: 0\ncgroups: 0\n"
	if after != want {
		t.Fatalf("after the reset:\n%swant\n%s", after, want)
	}
	if err := Run(ctx, opts); err != nil {
		t.Fatalf("a second reset (nothing left to do): %v", err)
	}
}

// observe counts what a node leaves on this host, one line per kind.
// Network namespace handles are counted under runDir, the node's: the
// mount namespace began as a copy of the host's, with its handles.
func observe(t *testing.T, ctx context.Context, addr, ns, dataDir, runDir string) string {
	t.Helper()
	var b strings.Builder
	out := run(t, "ctr", "--address", addr, "-n", ns, "containers", "list", "-q")
	fmt.Fprintf(&b, "containers: %d\n", len(strings.Fields(out)))
	info, _ := os.ReadFile("/proc/self/mountinfo")
	fmt.Fprintf(&b, "netns mounts: %d\n", len(MountsUnder(string(info), []string{runDir})))
	links := run(t, "ip", "-o", "link", "show")
	bridges, veths := 0, 0
	for _, l := range strings.Split(links, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		name := strings.SplitN(strings.TrimSuffix(f[1], ":"), "@", 2)[0]
		if BridgeName.MatchString(name) {
			bridges++
		}
		if strings.HasPrefix(name, "veth") {
			veths++
		}
	}
	fmt.Fprintf(&b, "bridges: %d\nveths: %d\n", bridges, veths)
	rules := run(t, "iptables", "-w", "-S") + run(t, "iptables", "-w", "-t", "nat", "-S")
	fmt.Fprintf(&b, "iptables: %d\n", strings.Count(rules, IPTablesComment))
	fmt.Fprintf(&b, "host-port chains: %d\n", strings.Count(rules, "-N CNI-DN-"))
	fmt.Fprintf(&b, "nft: %d\n", strings.Count(run(t, "nft", "list", "tables"), ProxyTable))
	fmt.Fprintf(&b, "routes: %d\n", len(strings.Fields(run(t, "ip", "route", "show", "proto", fmt.Sprint(hostgw.Protocol))))/3)
	n := 0
	if _, err := os.Stat(dataDir); err == nil {
		n = 1
	}
	fmt.Fprintf(&b, "data dir: %d\n", n)
	cgroups, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", ctdrt.CgroupParent, ns))
	v1, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", ctdrt.CgroupParent, ns))
	fmt.Fprintf(&b, "cgroups: %d\n", min(len(cgroups)+len(v1), 1))
	return b.String()
}

// A shim left without its container (its containerd's state was removed)
// is killed; one still running a container, and any shim of a namespace
// not asked for, stays. The "shims" are a shell under the shim's name.
func TestKillOrphanShims(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(sh)
	if err != nil {
		t.Fatal(err)
	}
	shim := filepath.Join(t.TempDir(), "containerd-shim-runc-v2")
	if err := os.WriteFile(shim, data, 0o755); err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("minik-resettest%d", os.Getpid())
	live := filepath.Join(t.TempDir(), "containerd.sock") // its directory exists
	start := func(script, ns string, address ...string) *exec.Cmd {
		if len(address) == 0 {
			address = []string{live}
		}
		// sh -c SCRIPT $0 $1...: the shim's flags are only its arguments.
		cmd := exec.Command(shim, "-c", script, "shim", "-namespace", ns, "-id", "x", "-address", address[0])
		stdin, err := cmd.StdinPipe() // `read` waits on it: no child
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	orphan := start("read x", ns)
	busy := start("sleep 300; true", ns)          // its child stands for the container
	other := start("read x", ns+"-not-asked-for") // another namespace
	// A data dir removed while its container ran: no containerd can reach
	// it. Its shim waits on when its container ends, as a shim does.
	unreachable := start("sleep 300; read x", ns, filepath.Join(t.TempDir(), "removed", "containerd.sock"))
	// Until sh has forked its sleep, a busy one has no child yet.
	var container int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		procs, err := readProcs()
		if err != nil {
			t.Fatal(err)
		}
		if hasChild(procs, busy.Process.Pid) && hasChild(procs, unreachable.Process.Pid) {
			for pid, p := range procs {
				if p.PPID == unreachable.Process.Pid {
					container = pid
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the busy shim never forked its child")
		}
	}
	if errs := killOrphanShims(slog.New(slog.NewTextHandler(io.Discard, nil)), func(n string) bool { return n == ns }); len(errs) > 0 {
		t.Fatal(errs)
	}
	for name, cmd := range map[string]*exec.Cmd{"the orphan shim": orphan, "the unreachable shim": unreachable} {
		ended := make(chan error, 1)
		go func() { ended <- cmd.Wait() }()
		select {
		case err := <-ended:
			if err == nil || !strings.Contains(err.Error(), "killed") {
				t.Fatalf("%s ended with %v, want killed", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s still runs", name)
		}
	}
	// The unreachable shim's container was killed too (it is the shim's
	// child, reaped by the shim's parent's init once orphaned: wait until
	// it is gone or a zombie).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", container))
		if err != nil || strings.Contains(string(stat[strings.LastIndexByte(string(stat), ')')+1:]), " Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unreachable shim's container (pid %d) still runs", container)
		}
	}
	for name, cmd := range map[string]*exec.Cmd{"the busy shim": busy, "the other namespace's shim": other} {
		if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
			t.Errorf("%s was stopped: %v", name, err)
		}
	}
}

func hasChild(procs map[int]Proc, pid int) bool {
	for _, p := range procs {
		if p.PPID == pid {
			return true
		}
	}
	return false
}
