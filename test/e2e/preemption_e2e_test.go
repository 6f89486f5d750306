package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testPreemption runs the seeds' PriorityClass example on node: a
// low-priority pod takes all of its CPU, a high-priority one that asks
// the same preempts it, and once the victim's containers are stopped and
// it has left the API, the kubelet admits and runs the preemptor (it used
// to reject it with OutOfcpu while it still removed the victim's sandbox).
func (e *env) testPreemption(node string) func(t *testing.T) {
	return func(t *testing.T) {
		ctx := context.Background()
		for name, value := range map[string]int32{"e2e-low": 1000, "e2e-high": 1000000} {
			pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
			if _, err := e.cs.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.cs.SchedulingV1().PriorityClasses().Delete(ctx, name, metav1.DeleteOptions{}) })
		}
		n, err := e.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		allCPU := n.Status.Allocatable.Cpu().DeepCopy()
		pod := func(name, class string) *corev1.Pod {
			grace := int64(5) // sleep as PID 1 ignores SIGTERM: the victim takes its whole grace period
			return makePod(name, "").With(func(p *corev1.Pod) {
				p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
				p.Spec.PriorityClassName = class
				p.Spec.TerminationGracePeriodSeconds = &grace
				p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: allCPU}
			}).Obj()
		}
		e.create(t, pod("low", "e2e-low"))
		e.waitPod(t, "low", 60*time.Second, "Running", running)
		e.create(t, pod("high", "e2e-high"))
		p := e.waitPod(t, "high", 90*time.Second, "Running or Failed", func(p *corev1.Pod) bool {
			return running(p) || p.Status.Phase == corev1.PodFailed
		})
		if p.Status.Phase == corev1.PodFailed {
			t.Fatalf("the preemptor failed: %s: %s", p.Status.Reason, p.Status.Message)
		}
		if p.Spec.NodeName != node {
			t.Errorf("the preemptor runs on %q, want %q", p.Spec.NodeName, node)
		}
		if _, err := e.cs.CoreV1().Pods("default").Get(ctx, "low", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the victim is still in the API (err %v)", err)
		}
	}
}
