package integration

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/controller"
)

// TestControllerHollowNodeLost runs the controller with minik's scheduler
// and two hollow kubelets (real kubelets, fake runtime): when one kubelet
// stops, its node goes Unknown, its pods are evicted after their
// (shortened) toleration and the replicas run again on the other node.
func TestControllerHollowNodeLost(t *testing.T) {
	_, cs, ctx, nodes := startWithHollowNodes(t, controller.Config{NodeMonitorGracePeriod: 3 * time.Second, NodeMonitorPeriod: 200 * time.Millisecond},
		"hollow-a", "hollow-b")
	ns := "default"

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
		nodes["hollow-b"].stop()
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
