package integration

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/client/kubeconfig"
	"minik/controller"
	"minik/internal/testcluster"
	"minik/kubelet"
	"minik/kubelet/runtime/fake"
)

// runHollowKubelet runs a real kubelet with the fake runtime for node in
// this process; stop ends it as if the machine died (no goodbye).
func runHollowKubelet(t *testing.T, c *testcluster.Cluster, node string) (stop func()) {
	t.Helper()
	kc, err := kubeconfig.Load(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.NewFromKubeconfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	cfg := kubelet.Config{NodeName: node, Client: cl, Runtime: fake.New(fake.Config{}), RootDir: filepath.Join(t.TempDir(), node),
		NodeIP: "127.0.0.1", LeaseRenewInterval: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))}
	go func() {
		defer close(done)
		_ = kubelet.Run(ctx, cfg)
	}()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestControllerHollowNodeLost runs the controller with minik's scheduler
// and two hollow kubelets (real kubelets, fake runtime): when one kubelet
// stops, its node goes Unknown, its pods are evicted after their
// (shortened) toleration and the replicas run again on the other node.
func TestControllerHollowNodeLost(t *testing.T) {
	c := testcluster.StartAPIOnly(t)
	startController(t, c, controller.Config{NodeMonitorGracePeriod: 3 * time.Second, NodeMonitorPeriod: 200 * time.Millisecond})
	runSchedulerInProcess(t, c)
	cs := c.Clientset()
	ctx := ctxT(t)
	ns := "default"
	runHollowKubelet(t, c, "hollow-a")
	stopB := runHollowKubelet(t, c, "hollow-b")

	d := makeDeployment("web", 6, "busybox")
	d.Spec.Template.Spec.Tolerations = []corev1.Toleration{tolerate(corev1.TaintNodeUnreachable, 2), tolerate(corev1.TaintNodeNotReady, 2)}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := func() map[string]int {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		m := map[string]int{}
		if err != nil {
			return m
		}
		for _, p := range l.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(&p) {
				m[p.Spec.NodeName]++
			}
		}
		return m
	}
	t.Run("6 replicas run on the two hollow nodes, each node with a podCIDR", func(t *testing.T) {
		eventually(t, 60*time.Second, "6 running pods on both nodes", func() (bool, string) {
			m := running()
			return m["hollow-a"]+m["hollow-b"] == 6 && m["hollow-b"] > 0, fmt.Sprint(m)
		})
		for _, n := range []string{"hollow-a", "hollow-b"} {
			node, err := cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil || node.Spec.PodCIDR == "" {
				t.Errorf("node %s has no podCIDR (%v)", n, err)
			}
		}
	})
	t.Run("stopping hollow-b's kubelet makes it Unknown and moves its replicas to hollow-a", func(t *testing.T) {
		stopB()
		eventually(t, 30*time.Second, "hollow-b Unknown with the unreachable taint", func() (bool, string) {
			n, err := cs.CoreV1().Nodes().Get(ctx, "hollow-b", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			r := nodeCondition(n, corev1.NodeReady)
			return r != nil && r.Status == corev1.ConditionUnknown && hasTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute), fmt.Sprint(n.Spec.Taints)
		})
		eventually(t, 60*time.Second, "6 running pods on hollow-a", func() (bool, string) {
			m := running()
			return m["hollow-a"] == 6, fmt.Sprint(m)
		})
	})
}
