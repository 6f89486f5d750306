package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/internal/testcluster"
)

// TestControllerCommandLeadsAndReconciles runs `minik controller
// --leader-elect` (the cobra command, in this process) against a real
// apiserver: it must take the Lease and keep a ReplicaSet's replicas.
func TestControllerCommandLeadsAndReconciles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster; skipped with -short")
	}
	c := testcluster.StartAPIOnly(t)
	cs := c.Clientset()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cmd := controllerCommand()
	cmd.SetArgs([]string{"--kubeconfig", c.Kubeconfig, "--leader-elect", "--identity", "test-1", "--node-monitor-grace-period", "20s"})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("controller command: %v", err)
		}
	}()

	labels := map[string]string{"app": "cmd"}
	replicas := int32(2)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "cmd"}, Spec: appsv1.ReplicaSetSpec{
		Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if _, err := cs.AppsV1().ReplicaSets("default").Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cond func() (bool, string)
	}{
		{"the Lease kube-system/kube-controller-manager names this instance", func() (bool, string) {
			l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "test-1", fmt.Sprint(l.Spec.HolderIdentity)
		}},
		{"the leader's ReplicaSet controller creates the pods", func() (bool, string) {
			l, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=cmd"})
			if err != nil {
				return false, err.Error()
			}
			return len(l.Items) == 2, fmt.Sprintf("%d pods", len(l.Items))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var msg string
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				var ok bool
				if ok, msg = tc.cond(); ok {
					return
				}
			}
			t.Fatalf("timed out: %s", msg)
		})
	}
}
