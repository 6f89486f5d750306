package integration

import (
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"minik/controller"
)

// TestJobSuccessPolicyOnHollowNode runs an Indexed Job whose success
// policy asks only for index 0 (a leader and its workers) on a real
// kubelet with the fake runtime: once the leader's container exits 0, the
// Job meets its policy, the workers are terminated without counting as
// failures, and `kubectl wait --for=condition=complete` sees it complete.
func TestJobSuccessPolicyOnHollowNode(t *testing.T) {
	c, cs, ctx, nodes := startWithHollowNodes(t, controller.Config{}, "hollow-jobs")
	ns := "default"

	j := makeIndexedJob("leader", 3, 3)
	j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{
		{SucceededIndexes: ptr.To("0"), SucceededCount: ptr.To[int32](1)}}}
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := waitRunningJobPods(t, ctx, cs, ns, "leader", 3)
	var leader corev1.Pod
	for _, p := range pods {
		if p.Annotations[batchv1.JobCompletionIndexAnnotation] == "0" {
			leader = p
		}
	}
	nodes["hollow-jobs"].exitContainer(t, ctx, &leader, "c", 0)

	got := kubectlWaitJob(t, ctx, c, "leader", "complete")
	for _, typ := range []batchv1.JobConditionType{batchv1.JobSuccessCriteriaMet, batchv1.JobComplete} {
		if c := jobCondition(got, typ); c == nil || c.Reason != "SuccessPolicy" || c.Message != "Matched rules at index 0" {
			t.Errorf("condition %s: %+v, want reason SuccessPolicy and \"Matched rules at index 0\"", typ, c)
		}
	}
	s := got.Status
	if s.Succeeded != 1 || s.CompletedIndexes != "0" || s.Failed != 0 || s.Active != 0 || ptr.Deref(s.Terminating, -1) != 0 || s.CompletionTime == nil {
		t.Errorf("status %+v: want index 0 succeeded, no failure, nothing active or terminating, a completionTime", s)
	}
	eventually(t, 20*time.Second, "no worker left running", func() (bool, string) {
		running := runningJobPods(ctx, cs, ns, "leader")
		return len(running) == 0, fmt.Sprintf("%d running", len(running))
	})
}
