// Command footprint measures what a one-node `minik up` costs, with real
// containerd and runc (root). One JSON line per figure:
//
//	startup       from exec of `minik up` to a Ready node with a Running
//	              pod (created as soon as the apiserver answers): cold,
//	              on a new data dir (certificates, etcd, the image
//	              imported), and warm, restarted on that data dir;
//	              with the kubelet's registration retries (the log's
//	              "registering the node; retrying"), which should be 0
//	idle_memory   RSS and PSS of the `minik up` process idle with one node
//	              and 10 running pods (after -settle), and apart from it
//	              containerd's and the shims'
//	binary        the size of the minik binary
//
//	exec ─▶ minik up (etcd, apiserver, scheduler, controller, kubelet ─▶ containerd ─▶ shims)
//	          ▲ /readyz, then a pod, then the node and the pod watched (10ms)
//
// Before it stops, it deletes its pods and waits until the kubelet's
// runtime has no sandbox left, then removes the node's bridge and rules.
// Run it as root with `make bench-footprint`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/deploy/images"
	"minik/internal/freeport"
	ctdrt "minik/kubelet/runtime/containerd"
	"minik/proxy"
	"minik/test/bench/benchkit"
)

const node = "footprint"

func main() {
	bin := flag.String("bin", "", "minik binary (default: bin/minik of this module, built if missing)")
	settle := flag.Duration("settle", 20*time.Second, "idle time before memory is read")
	keep := flag.Bool("keep", false, "keep the data dir (the log is in it)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *bin, *settle, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "bench-footprint:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, bin string, settle time.Duration, keep bool) error {
	bin, err := benchkit.Binary(bin)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "minik-bench-footprint-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintln(os.Stderr, "data dir:", dir)
	}
	archive := filepath.Join(dir, "busybox.tar")
	if err := images.BuildBusybox(archive, images.DefaultBusyboxPath); err != nil {
		return err
	}
	fi, err := os.Stat(bin)
	if err != nil {
		return err
	}
	benchkit.Emit(map[string]any{"bench": "footprint", "figure": "binary", "size_mb": benchkit.Round(float64(fi.Size())/(1<<20), 1)})

	listen, err := freeport.Addr()
	if err != nil {
		return err
	}
	args := []string{"up", "--data-dir", filepath.Join(dir, "data"), "--listen", listen, "--nodes", node, "--preload-images", archive}
	var podCIDR string
	defer func() {
		// What the node leaves on the host once its pods are gone: its
		// bridge and rules, the proxy's table, the run dirs of its
		// runtime and containerd (under ctdrt.RunRoot).
		ctdrt.RemoveNodeNetwork(ctdrt.NamespaceFor(node), podCIDR)
		_ = proxy.DeleteTable(context.WithoutCancel(ctx))
		os.RemoveAll(ctdrt.RunDirFor(filepath.Join(dir, "data", "kubelet", node, "runtime")))
		os.RemoveAll(ctdrt.DaemonStateDir(filepath.Join(dir, "data", "containerd")))
		if !keep {
			os.RemoveAll(dir)
		}
	}()
	for _, phase := range []string{"cold", "warm"} {
		up, err := benchkit.Start("minik-up", bin, filepath.Join(dir, phase+".log"), args...)
		if err != nil {
			return err
		}
		c, took, err := startup(ctx, up, filepath.Join(dir, "data"), listen)
		if err != nil {
			up.Stop()
			return err
		}
		log, _ := os.ReadFile(up.Log)
		benchkit.Emit(map[string]any{"bench": "footprint", "figure": "startup", "phase": phase, "startup_s": benchkit.Round(took.Seconds(), 3),
			"registration_retries": strings.Count(string(log), "registering the node; retrying"), "load1": benchkit.LoadAvg()})
		if n, err := c.Nodes().Get(ctx, "", node, metav1.GetOptions{}); err == nil {
			podCIDR = n.Spec.PodCIDR
		}
		if phase == "warm" {
			err = idleMemory(ctx, c, up, filepath.Join(dir, "data"), settle)
		}
		if cerr := deletePods(ctx, c, filepath.Join(dir, "data", "kubelet", node)); err == nil {
			err = cerr
		}
		up.Stop()
		if err != nil {
			return err
		}
	}
	return nil
}

// startup waits, from exec, for the apiserver, creates a pod, and waits
// until the node is Ready (its Lease renewed since exec) and the pod
// Running.
func startup(ctx context.Context, up *benchkit.Proc, dataDir, listen string) (*client.Client, time.Duration, error) {
	var c *client.Client
	if err := poll(ctx, up, 60*time.Second, func() bool {
		var err error
		if c == nil {
			if c, err = benchkit.ClientOf(filepath.Join(dataDir, "admin.kubeconfig"), "bench"); err != nil {
				c = nil
				return false
			}
		}
		var body []byte
		return c.Do(ctx, "GET", "/readyz", nil, nil, &body) == nil
	}); err != nil {
		return nil, 0, err
	}
	// The first pod may come before its namespace's default service
	// account does (the ServiceAccount admission then refuses it), as a
	// user's first kubectl run may.
	if err := poll(ctx, up, 60*time.Second, func() bool { return createPod(ctx, c, "p0") == nil }); err != nil {
		return nil, 0, err
	}
	err := poll(ctx, up, 60*time.Second, func() bool {
		// On a restart the Node is still Ready from the last run: only
		// a Lease renewed by this run's kubelet counts.
		l, err := c.Leases().Get(ctx, corev1.NamespaceNodeLease, node, metav1.GetOptions{})
		if err != nil || l.Spec.RenewTime == nil || l.Spec.RenewTime.Time.Before(up.Started) {
			return false
		}
		n, err := c.Nodes().Get(ctx, "", node, metav1.GetOptions{})
		if err != nil || !ready(n) {
			return false
		}
		p, err := c.Pods().Get(ctx, "default", "p0", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning
	})
	return c, time.Since(up.Started), err
}

// idleMemory runs 10 pods, waits settle, and reads the memory of minik
// up, its containerd (none when the system's answers) and the shims.
func idleMemory(ctx context.Context, c *client.Client, up *benchkit.Proc, dataDir string, settle time.Duration) error {
	for i := 1; i < 10; i++ {
		if err := createPod(ctx, c, fmt.Sprintf("p%d", i)); err != nil {
			return err
		}
	}
	if err := poll(ctx, up, 60*time.Second, func() bool {
		l, err := c.Pods().List(ctx, "default", metav1.ListOptions{})
		running := 0
		for _, p := range l.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return err == nil && running == 10
	}); err != nil {
		return err
	}
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return ctx.Err()
	}
	line := map[string]any{"bench": "footprint", "figure": "idle_memory", "pods": 10,
		"up_rss_mb": benchkit.Round(up.RSSMB(), 1), "up_pss_mb": benchkit.Round(benchkit.MemMB(up.PID(), "smaps_rollup", "Pss"), 1),
		"load1": benchkit.LoadAvg()}
	for name, pids := range map[string][]int{"containerd": benchkit.FindProcs("containerd", "--config", dataDir),
		"shims": benchkit.FindProcs("containerd-shim", "-namespace "+ctdrt.NamespaceFor(node)+" ")} {
		var rss, pss float64
		for _, pid := range pids {
			rss += benchkit.MemMB(pid, "status", "VmRSS")
			pss += benchkit.MemMB(pid, "smaps_rollup", "Pss")
		}
		line[name+"_rss_mb"], line[name+"_pss_mb"], line[name+"_procs"] = benchkit.Round(rss, 1), benchkit.Round(pss, 1), len(pids)
	}
	benchkit.Emit(line)
	return nil
}

func createPod(ctx context.Context, c *client.Client, name string) error {
	zero := int64(0)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: &zero,
		Containers: []corev1.Container{{Name: "c", Image: images.BusyboxName, ImagePullPolicy: corev1.PullNever,
			Command: []string{"sleep", "3600"}}}}}
	_, err := c.Pods().Create(ctx, p, metav1.CreateOptions{})
	return err
}

// deletePods deletes every pod and waits until the kubelet's runtime
// holds no sandbox (the pods' containers and networks are gone).
func deletePods(ctx context.Context, c *client.Client, kubeletRoot string) error {
	ctx = context.WithoutCancel(ctx)
	l, err := c.Pods().List(ctx, "default", metav1.ListOptions{})
	if err != nil {
		return err
	}
	zero := int64(0)
	for _, p := range l.Items {
		_ = c.Pods().Delete(ctx, "default", p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	}
	for deadline := time.Now().Add(120 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if ctdrt.HoldsNoSandbox(filepath.Join(kubeletRoot, "runtime")) {
			return nil
		}
	}
	return errors.New("the kubelet still holds sandboxes 120s after its pods were deleted")
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// poll checks cond every 10ms until it holds, up exits, or timeout.
func poll(ctx context.Context, up *benchkit.Proc, timeout time.Duration, cond func() bool) error {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); {
		if cond() {
			return nil
		}
		select {
		case <-up.Done():
			return fmt.Errorf("minik up exited; see %s", up.Log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return fmt.Errorf("not done within %v; see %s", timeout, up.Log)
}
