package integration

import (
	"context"
	"fmt"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"minik/controller"
)

func policyRule(action batchv1.PodFailurePolicyAction, codes ...int32) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
		Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: codes}}
}

var ignoreDisruptions = batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore,
	OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}}

// TestJobPodFailurePolicyOnHollowNode runs Jobs on a real kubelet with the
// fake runtime: a container exiting with a code a FailJob rule lists fails
// the Job at once, with the reason and message Kubernetes gives.
func TestJobPodFailurePolicyOnHollowNode(t *testing.T) {
	c, cs, ctx, nodes := startWithHollowNodes(t, controller.Config{}, "hollow-jobs")
	ns := "default"

	j := makeJob("fail-fast", 2, 2, 6, corev1.RestartPolicyNever)
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		policyRule(batchv1.PodFailurePolicyActionFailJob, 42), ignoreDisruptions}}
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := waitRunningJobPods(t, ctx, cs, ns, "fail-fast", 2)
	nodes["hollow-jobs"].exitContainer(t, ctx, &pods[0], "c", 42)

	got := kubectlWaitJob(t, ctx, c, "fail-fast", "failed")
	want := fmt.Sprintf("Container c for pod %s/%s failed with exit code 42 matching FailJob rule at index 0", ns, pods[0].Name)
	for _, typ := range []batchv1.JobConditionType{batchv1.JobFailureTarget, batchv1.JobFailed} {
		if c := jobCondition(got, typ); c == nil || c.Reason != "PodFailurePolicy" || c.Message != want {
			t.Errorf("condition %s: %+v, want reason PodFailurePolicy and %q", typ, c, want)
		}
	}
	if got.Status.Failed != 2 || got.Status.Active != 0 {
		t.Errorf("status %+v: want both pods failed (the other one terminated by the Job) and none active", got.Status)
	}
}

// TestJobPodFailurePolicyIgnoresDisruptions stands in for the kubelet: a
// pod that failed with the DisruptionTarget condition is not counted and
// is replaced, even with backoffLimit 0; a failure no rule matches counts.
func TestJobPodFailurePolicyIgnoresDisruptions(t *testing.T) {
	_, cs, ctx := startWithController(t, controller.Config{})
	ns := "default"
	fakeKubelet(t, cs, ns)

	j := makeJob("tolerant", 1, 1, 0, corev1.RestartPolicyNever)
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		policyRule(batchv1.PodFailurePolicyActionFailJob, 42), ignoreDisruptions}}
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	evicted := waitRunningJobPods(t, ctx, cs, ns, "tolerant", 1)[0]
	if err := disruptPod(ctx, cs, &evicted); err != nil {
		t.Fatal(err)
	}
	// The evicted pod is Failed, so the one running pod is its replacement,
	// made after the backoff.
	replacement := waitRunningJobPods(t, ctx, cs, ns, "tolerant", 1)[0]
	got, err := cs.BatchV1().Jobs(ns).Get(ctx, "tolerant", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Failed != 0 || jobCondition(got, batchv1.JobFailureTarget) != nil {
		t.Fatalf("the ignored failure counted: %+v", got.Status)
	}
	if err := exitPod(ctx, cs, &replacement, 1); err != nil {
		t.Fatal(err)
	}
	waitJob(t, ctx, cs, ns, "tolerant", "Failed BackoffLimitExceeded", func(j *batchv1.Job) bool {
		c := jobCondition(j, batchv1.JobFailed)
		return c != nil && c.Reason == "BackoffLimitExceeded" && j.Status.Failed == 1
	})
}

// disruptPod reports p as a kubelet does a pod it killed for a disruption
// (an eviction): Failed, exit code 137, condition DisruptionTarget.
func disruptPod(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod) error {
	now := metav1.Now()
	p.Status.Phase = corev1.PodFailed
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Image: "busybox",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", FinishedAt: now}}}}
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: now},
		{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI", LastTransitionTime: now},
	}
	_, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}
