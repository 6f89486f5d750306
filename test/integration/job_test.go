package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"minik/controller"
	"minik/internal/testcluster"
)

// exitPod ends p as a kubelet reports a pod whose only container exited
// with code: phase Succeeded (code 0) or Failed, the container terminated
// now, Ready False.
func exitPod(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod, code int32) error {
	now := metav1.Now()
	p.Status.Phase = corev1.PodFailed
	reason := "Error"
	if code == 0 {
		p.Status.Phase, reason = corev1.PodSucceeded, "Completed"
	}
	var statuses []corev1.ContainerStatus
	for _, c := range p.Spec.Containers {
		statuses = append(statuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, FinishedAt: now}}})
	}
	p.Status.ContainerStatuses = statuses
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: now}}
	_, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}

// jobPods returns the pods of job name, oldest first.
func jobPods(ctx context.Context, cs kubernetes.Interface, ns, name string) []corev1.Pod {
	l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + name})
	if err != nil {
		return nil
	}
	return l.Items
}

// runningJobPod waits for the only running pod of job name and returns it.
func runningJobPod(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, name string) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	eventually(t, 20*time.Second, "a running pod of "+name, func() (bool, string) {
		var running []corev1.Pod
		for _, p := range jobPods(ctx, cs, ns, name) {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running = append(running, p)
			}
		}
		if len(running) != 1 {
			return false, fmt.Sprintf("%d running", len(running))
		}
		pod = running[0]
		return true, ""
	})
	return pod
}

func TestJobPodFailureBackoff(t *testing.T) {
	c := testcluster.StartAPIOnly(t)
	startController(t, c, controller.Config{})
	cs := c.Clientset()
	ctx := ctxT(t)
	ns := "default"
	fakeKubelet(t, cs, ns)

	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, makeJob("retry", 1, 1, 3, corev1.RestartPolicyNever), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := runningJobPod(t, ctx, cs, ns, "retry")
	failedAt := time.Now()
	if err := exitPod(ctx, cs, &first, 1); err != nil {
		t.Fatal(err)
	}

	// The replacement waits 10s from the failure (whose time the API keeps
	// to the second, hence the slack).
	var replacedAt time.Time
	eventually(t, 25*time.Second, "a replacement pod", func() (bool, string) {
		pods := jobPods(ctx, cs, ns, "retry")
		if len(pods) == 2 {
			replacedAt = time.Now()
			return true, ""
		}
		return false, fmt.Sprintf("%d pods", len(pods))
	})
	if waited := replacedAt.Sub(failedAt); waited < 8500*time.Millisecond {
		t.Fatalf("the replacement came %v after the failure, want about 10s", waited)
	}
	j, err := cs.BatchV1().Jobs(ns).Get(ctx, "retry", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Status.Failed != 1 {
		t.Fatalf("status.failed %d, want 1", j.Status.Failed)
	}
	second := runningJobPod(t, ctx, cs, ns, "retry")
	if err := exitPod(ctx, cs, &second, 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "Complete", func() (bool, string) {
		j, _ := cs.BatchV1().Jobs(ns).Get(ctx, "retry", metav1.GetOptions{})
		return jobCondition(j, batchv1.JobComplete) != nil && j.Status.Succeeded == 1, fmt.Sprintf("%+v", j.Status)
	})
}
