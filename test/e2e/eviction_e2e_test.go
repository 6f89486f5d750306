package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/deploy/images"
	"minik/internal/testcluster"
	ctdrt "minik/kubelet/runtime/containerd"
)

// TestEviction runs one `minik kubelet` whose root dir, and so its
// nodefs, is a 100Mi tmpfs, with --eviction-hard nodefs.available<50%
// (containerd keeps its images and snapshots there too). A pod writing
// 60Mi into an emptyDir puts the node under DiskPressure; the kubelet
// evicts it, not the pod next to it, removes its volume, and the
// condition clears after the transition period.
func TestEviction(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: needs root and containerd; skipped under -short")
	}
	if os.Geteuid() != 0 {
		t.Fatal("the end-to-end tests run containers and must run as root")
	}
	c := testcluster.Start(t)
	e := &env{c: c, cs: c.Clientset(), dataDir: c.DataDir}
	node := fmt.Sprintf("evict-%x", os.Getpid()&0xffff)
	cidr := fmt.Sprintf("10.%d.0.0/24", 150+os.Getpid()%50)
	root := filepath.Join(c.DataDir, "kubelet", node)
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", root, "tmpfs", 0, "size=100m"); err != nil {
		t.Fatalf("mounting a tmpfs as the node's disk: %v", err)
	}
	archive := filepath.Join(c.DataDir, "busybox.tar")
	if err := images.BuildBusybox(archive, images.DefaultBusyboxPath); err != nil {
		t.Fatal(err)
	}
	kubelet := startProc(t, "kubelet "+node, filepath.Join(c.DataDir, "kubelet.log"), "kubelet",
		"--node-name", node, "--kubeconfig", c.Kubeconfig, "--root-dir", root, "--node-ip", "127.0.0.1",
		"--pod-cidr", cidr, "--preload-images", archive,
		"--eviction-hard", "nodefs.available<50%", "--eviction-pressure-transition-period", "5s")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- last lines of the kubelet's log:\n%s", kubelet.tail(40))
		}
		ctx := context.Background()
		podCIDR := cidr
		if n, err := e.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); err == nil && n.Spec.PodCIDR != "" {
			podCIDR = n.Spec.PodCIDR
		}
		zero := int64(0)
		_ = e.cs.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		ns := ctdrt.NamespaceFor(node)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) && len(shimsOf(ns)) > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		kubelet.stop(syscall.SIGTERM) // stops the containerd it started, too
		c.Stop()
		for _, pid := range shimsOf(ns) {
			for _, child := range children(pid) {
				_ = syscall.Kill(child, syscall.SIGKILL)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		unmountRuntime(c.DataDir, node) // the pods' mounts, then the tmpfs
		ctdrt.RemoveNodeNetwork(ns, podCIDR)
		if podCIDR != cidr {
			ctdrt.RemoveNodeNetwork(ns, cidr)
		}
	})
	e.waitNodeReady(t, node)
	diskPressure := func(status corev1.ConditionStatus, reason string) {
		t.Helper()
		waitFor(t, 40*time.Second, "DiskPressure "+string(status), func() (bool, string) {
			n, err := e.cs.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeDiskPressure {
					return c.Status == status && c.Reason == reason, fmt.Sprintf("%s %s", c.Status, c.Reason)
				}
			}
			return false, "no DiskPressure condition"
		})
	}
	diskPressure(corev1.ConditionFalse, "KubeletHasNoDiskPressure")

	e.create(t, makePod("bystander", node).Obj())
	e.waitPod(t, "bystander", 60*time.Second, "Running", running)
	e.create(t, makePod("filler", node).Sh("dd if=/dev/zero of=/data/fill bs=1048576 count=60; sleep 3600").With(func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	}).Obj())

	diskPressure(corev1.ConditionTrue, "KubeletHasDiskPressure")
	p := e.waitPod(t, "filler", 30*time.Second, "evicted", phaseIs(corev1.PodFailed))
	if p.Status.Reason != "Evicted" || !strings.HasPrefix(p.Status.Message, "The node was low on resource: ephemeral-storage. Threshold quantity: 50Mi, available: ") {
		t.Errorf("filler: reason %q message %q, want Evicted, low on ephemeral-storage below 50%% of 100Mi", p.Status.Reason, p.Status.Message)
	}
	e.waitEvents(t, "filler", "Evicted")
	// The evicted pod's emptyDir is removed, which relieves the pressure.
	diskPressure(corev1.ConditionFalse, "KubeletHasNoDiskPressure")
	if b := e.get(t, "bystander"); !running(b) {
		t.Errorf("bystander is %s: only the pod filling the disk should have been evicted", b.Status.Phase)
	}
}
