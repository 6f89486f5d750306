package e2e

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctdrt "minik/kubelet/runtime/containerd"
	"minik/proxy"
)

// cleanup runs before the cluster stops: it deletes every pod, so that the
// kubelets stop their containers, then stops the cluster and removes what
// a failed test may have left: shims of the test's containerd namespaces
// and mounts under the data dir. A kubelet leaves containers running when
// it stops (they are adopted on restart), so without this a test run would
// leak them.
func (e *env) cleanup(t *testing.T) {
	ctx := context.Background()
	e.podCIDRs = map[string]string{}
	for _, n := range e.nodes {
		if node, err := e.cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{}); err == nil {
			e.podCIDRs[n] = node.Spec.PodCIDR
		}
	}
	zero := int64(0)
	_ = e.cs.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	for _, n := range e.nodes {
		os.RemoveAll(filepath.Join(e.dataDir, "kubelet", n, "manifests"))
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && len(e.shims()) > 0 {
		time.Sleep(200 * time.Millisecond)
	}
	e.c.Stop()
	for _, pid := range e.shims() {
		for _, child := range children(pid) {
			_ = syscall.Kill(child, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	unmountRuntime(e.dataDir, e.nodes[:]...)
	for _, n := range e.nodes {
		ctdrt.RemoveNodeNetwork(ctdrt.NamespaceFor(n), e.podCIDRs[n])
	}
	// The node proxy leaves its table when it stops (traffic keeps
	// flowing); a test removes it.
	if err := proxy.DeleteTable(ctx); err != nil {
		t.Errorf("deleting the proxy's nftables table: %v", err)
	}
}

// unmountRuntime detaches what a cluster on dataDir may have left mounted
// (netns handles, overlay rootfs, a node's tmpfs disk), under dataDir and
// under the run dirs (ctdrt.RunRoot) of its containerds and of the given
// nodes' runtimes, and removes those run dirs.
func unmountRuntime(dataDir string, nodes ...string) {
	runDirs := []string{ctdrt.DaemonStateDir(filepath.Join(dataDir, "containerd"))}
	for _, n := range nodes {
		root := filepath.Join(dataDir, "kubelet", n)
		runDirs = append(runDirs, ctdrt.DaemonStateDir(filepath.Join(root, "containerd")), ctdrt.RunDirFor(filepath.Join(root, "runtime")))
	}
	for _, d := range runDirs {
		unmountUnder(d)
		os.RemoveAll(d)
	}
	unmountUnder(dataDir)
}

// shims are the containerd shims of this test's nodes.
func (e *env) shims() []int {
	return shimsOf(ctdrt.NamespaceFor(e.nodes[0]), ctdrt.NamespaceFor(e.nodes[1]))
}

// shimsOf are the containerd shims serving the given namespaces.
func shimsOf(namespaces ...string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) < 3 || !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") {
			continue
		}
		for i, a := range args {
			if a == "-namespace" && i+1 < len(args) && slices.Contains(namespaces, args[i+1]) {
				out = append(out, pid)
			}
		}
	}
	return out
}

func children(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			if c, err := strconv.Atoi(ent.Name()); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// unmountUnder detaches every mount below dir (overlay rootfs, netns).
func unmountUnder(dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			mounts = append(mounts, fields[4])
		}
	}
	for i := len(mounts) - 1; i >= 0; i-- {
		_ = syscall.Unmount(mounts[i], syscall.MNT_DETACH)
	}
}
