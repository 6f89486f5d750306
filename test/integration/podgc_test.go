package integration

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/controller"
	"minik/controller/podgc"
)

// TestPodGCDeletesThePodsOfADeletedNode binds a running pod to a Node,
// deletes the Node and waits for the pod garbage collector (with a 1s
// pass and a 2s quarantine instead of 20s and 40s) to force-delete it,
// while a pod of a live Node stays.
func TestPodGCDeletesThePodsOfADeletedNode(t *testing.T) {
	_, cs, ctx := startWithController(t, controller.Config{
		Controllers: []string{podgc.Name},
		PodGC:       podgc.Config{CheckPeriod: time.Second, QuarantineTime: 2 * time.Second},
	})
	for _, n := range []string{"doomed", "alive"} {
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"doomed", "alive"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "on-" + n, Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: n, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		p, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.Phase = corev1.PodRunning
		if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A graceful delete leaves the pod Terminating: only a kubelet would
	// confirm it, and there is none.
	if err := cs.CoreV1().Pods("default").Delete(ctx, "on-doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cs.CoreV1().Nodes().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the pod of the deleted node to be gone", func() (bool, string) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "on-doomed", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("pod %v (phase %s, deleting %v)", err, p.Status.Phase, p.DeletionTimestamp != nil)
	})
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("pod deleted after %v, before its node's 2s quarantine ended", took)
	}
	if _, err := cs.CoreV1().Pods("default").Get(ctx, "on-alive", metav1.GetOptions{}); err != nil {
		t.Fatalf("the pod of the live node: %v", err)
	}
}
