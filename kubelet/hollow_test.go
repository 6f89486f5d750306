package kubelet_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/internal/pki"
	"minik/internal/testcluster"
	"minik/kubelet"
	"minik/kubelet/runtime/fake"
)

// TestHollowNode runs a kubelet with the fake runtime against a real
// apiserver: registration, Lease, pod lifecycle and deletion, without
// containerd (the hollow nodes of scale tests).
func TestHollowNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts minik up; skipped with -short")
	}
	c := testcluster.Start(t)
	const node = "hollow-1"
	rt := fake.New(fake.Config{Images: []string{"busybox"}, MissingImages: []string{"example.invalid/missing:1"}})
	startHollowKubelet(t, c, kubelet.Config{NodeName: node, Runtime: rt, NodeLabels: map[string]string{"hollow": "true"}})
	cs := c.Clientset()
	bg := context.Background()
	var err error

	t.Run("the node registers with its labels, capacity and Ready condition", func(t *testing.T) {
		n, err := cs.CoreV1().Nodes().Get(bg, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n.Labels["hollow"] != "true" || n.Labels[corev1.LabelHostname] != node || n.Labels[corev1.LabelOSStable] != "linux" {
			t.Errorf("labels %v", n.Labels)
		}
		if n.Status.Capacity.Pods().Value() != 110 || n.Status.Capacity.Cpu().IsZero() || n.Status.Capacity.Memory().IsZero() {
			t.Errorf("capacity %v", n.Status.Capacity)
		}
		ready := false
		for _, cond := range n.Status.Conditions {
			ready = ready || cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue
		}
		if !ready || n.Status.NodeInfo.ContainerRuntimeVersion != "fake://0.1.0" || len(n.Status.Images) == 0 {
			t.Errorf("status %+v", n.Status)
		}
	})

	t.Run("the node lease is held and renewed", func(t *testing.T) {
		var lease *coordinationv1.Lease
		waitUntil(t, 10*time.Second, func() bool {
			lease, err = cs.CoordinationV1().Leases("kube-node-lease").Get(bg, node, metav1.GetOptions{})
			return err == nil
		})
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != node || lease.Spec.RenewTime == nil {
			t.Errorf("lease spec %+v", lease.Spec)
		}
	})

	t.Run("a pod reaches Running and Ready, and a delete removes it", func(t *testing.T) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "h1", Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent}}}}
		if _, err := cs.CoreV1().Pods("default").Create(bg, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var p *corev1.Pod
		waitUntil(t, 20*time.Second, func() bool {
			p, err = cs.CoreV1().Pods("default").Get(bg, "h1", metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready
		})
		if p.Status.PodIP == "" || p.Status.HostIP != "127.0.0.1" {
			t.Errorf("podIP %q hostIP %q", p.Status.PodIP, p.Status.HostIP)
		}
		if err := cs.CoreV1().Pods("default").Delete(bg, "h1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 20*time.Second, func() bool {
			_, err := cs.CoreV1().Pods("default").Get(bg, "h1", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
	})

	t.Run("a pod that does not fit is rejected with OutOfcpu", func(t *testing.T) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "huge", Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "busybox",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: *resourceQty("1000")}}}}}}
		if _, err := cs.CoreV1().Pods("default").Create(bg, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 20*time.Second, func() bool {
			p, err := cs.CoreV1().Pods("default").Get(bg, "huge", metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodFailed && p.Status.Reason == "OutOfcpu"
		})
	})

	t.Run("a missing image ends in ImagePullBackOff", func(t *testing.T) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nopull", Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "example.invalid/missing:1"}}}}
		if _, err := cs.CoreV1().Pods("default").Create(bg, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 20*time.Second, func() bool {
			p, err := cs.CoreV1().Pods("default").Get(bg, "nopull", metav1.GetOptions{})
			return err == nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
				p.Status.ContainerStatuses[0].State.Waiting.Reason == "ImagePullBackOff"
		})
	})
}

// startHollowKubelet runs a kubelet for cfg.NodeName with its Runtime
// against the cluster, as user system:node:NAME, until the test ends.
func startHollowKubelet(t *testing.T, c *testcluster.Cluster, cfg kubelet.Config) {
	t.Helper()
	ca, err := pki.LoadCA(filepath.Join(c.DataDir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueClient(pki.NodeUser(cfg.NodeName), []string{pki.NodesGroup})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM())
	cfg.Client, err = client.New(client.Config{Host: "https://" + c.Listen, TLS: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RootDir == "" {
		cfg.RootDir = t.TempDir()
	}
	cfg.NodeIP, cfg.PodCIDR = "127.0.0.1", "10.99.0.0/24"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan struct{})
	cfg.Ready = ready
	go func() { done <- kubelet.Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("kubelet.Run: %v", err)
		}
		// Pods outlive their kubelet: what is still mounted for them
		// (tmpfs volumes: secrets, projected service-account tokens)
		// goes here, before the temp dir is removed.
		vols, _ := filepath.Glob(filepath.Join(cfg.RootDir, "pods", "*", "volumes", "*"))
		for _, v := range vols {
			_ = syscall.Unmount(v, syscall.MNT_DETACH)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("kubelet.Run ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("kubelet not ready after 30s")
	}
}

func waitUntil(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("condition not met within %v", d)
}

func resourceQty(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}
