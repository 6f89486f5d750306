package job

import (
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"minik/controller/internal/testutil"
)

func exitCodes(action batchv1.PodFailurePolicyAction, op batchv1.PodFailurePolicyOnExitCodesOperator, container *string, codes ...int32) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: container, Operator: op, Values: codes}}
}

func onCondition(action batchv1.PodFailurePolicyAction, t corev1.PodConditionType) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: t, Status: corev1.ConditionTrue}}}
}

func policyJob(rules ...batchv1.PodFailurePolicyRule) *batchv1.Job {
	j := makeJob(testutil.Int32(1), testutil.Int32(1), corev1.RestartPolicyNever)
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: rules}
	j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
	return j
}

// exitedPod is a failed pod whose containers exited with codes, named
// c0, c1, ...
func exitedPod(name string, codes ...int32) *corev1.Pod {
	finished := metav1.NewTime(testutil.T0.Add(-time.Hour))
	p := testutil.Pod(name).Exited(corev1.PodFailed, 0, finished.Time).Obj()
	p.Status.ContainerStatuses = nil
	for i, code := range codes {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: "c" + string(rune('0'+i)),
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: finished}}})
	}
	return p
}

func withCondition(p *corev1.Pod, t corev1.PodConditionType, s corev1.ConditionStatus) *corev1.Pod {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: s})
	return p
}

func TestMatchPodFailurePolicy(t *testing.T) {
	in, notIn := batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn
	failJob, ignore, count := batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyActionCount
	cases := []struct {
		name       string
		rules      []batchv1.PodFailurePolicyRule
		pod        *corev1.Pod
		wantAction batchv1.PodFailurePolicyAction
		wantMsg    string
	}{
		{name: "an exit code In the values fails the Job with Kubernetes' message",
			rules: []batchv1.PodFailurePolicyRule{exitCodes(failJob, in, nil, 42)}, pod: exitedPod("p", 42),
			wantAction: failJob, wantMsg: "Container c0 for pod default/p failed with exit code 42 matching FailJob rule at index 0"},
		{name: "an exit code not In the values does not match", rules: []batchv1.PodFailurePolicyRule{exitCodes(failJob, in, nil, 42)}, pod: exitedPod("p", 1)},
		{name: "NotIn matches any other non-zero code",
			rules: []batchv1.PodFailurePolicyRule{exitCodes(count, notIn, nil, 42)}, pod: exitedPod("p", 0, 7), wantAction: count},
		{name: "a container that exited 0 never matches, even NotIn", rules: []batchv1.PodFailurePolicyRule{exitCodes(count, notIn, nil, 42)}, pod: exitedPod("p", 0)},
		{name: "containerName restricts the rule to that container",
			rules: []batchv1.PodFailurePolicyRule{exitCodes(failJob, in, ptr.To("c0"), 3), exitCodes(ignore, in, ptr.To("c1"), 3)}, pod: exitedPod("p", 0, 3),
			wantAction: ignore},
		{name: "a running container has no exit code to match",
			rules: []batchv1.PodFailurePolicyRule{exitCodes(failJob, notIn, nil, 1)},
			pod: func() *corev1.Pod {
				p := exitedPod("p")
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c0", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
				return p
			}()},
		{name: "init containers match too",
			rules: []batchv1.PodFailurePolicyRule{exitCodes(failJob, in, nil, 9)},
			pod: func() *corev1.Pod {
				p := exitedPod("p")
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 9}}}}
				return p
			}(),
			wantAction: failJob, wantMsg: "Container init for pod default/p failed with exit code 9 matching FailJob rule at index 0"},
		{name: "a DisruptionTarget condition matches onPodConditions",
			rules: []batchv1.PodFailurePolicyRule{exitCodes(failJob, in, nil, 42), onCondition(ignore, corev1.DisruptionTarget)},
			pod:   withCondition(exitedPod("p", 137), corev1.DisruptionTarget, corev1.ConditionTrue), wantAction: ignore},
		{name: "a condition with another status does not match",
			rules: []batchv1.PodFailurePolicyRule{onCondition(ignore, corev1.DisruptionTarget)},
			pod:   withCondition(exitedPod("p", 137), corev1.DisruptionTarget, corev1.ConditionFalse)},
		{name: "FailJob on a condition says which condition and rule",
			rules:      []batchv1.PodFailurePolicyRule{exitCodes(count, in, nil, 1), onCondition(failJob, corev1.DisruptionTarget)},
			pod:        withCondition(exitedPod("p", 137), corev1.DisruptionTarget, corev1.ConditionTrue),
			wantAction: failJob, wantMsg: "Pod default/p has condition DisruptionTarget matching FailJob rule at index 1"},
		{name: "the first matching rule wins",
			rules: []batchv1.PodFailurePolicyRule{exitCodes(ignore, in, nil, 5), exitCodes(failJob, in, nil, 5)}, pod: exitedPod("p", 5), wantAction: ignore},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := matchPodFailurePolicy(policyJob(tc.rules...), tc.pod)
			if m.action != tc.wantAction || m.message != tc.wantMsg {
				t.Fatalf("got %q %q, want %q %q", m.action, m.message, tc.wantAction, tc.wantMsg)
			}
		})
	}
}

func TestReconcilePodFailurePolicy(t *testing.T) {
	now := testutil.T0
	in := batchv1.PodFailurePolicyOnExitCodesOpIn
	rules := []batchv1.PodFailurePolicyRule{
		exitCodes(batchv1.PodFailurePolicyActionFailJob, in, nil, 42),
		onCondition(batchv1.PodFailurePolicyActionIgnore, corev1.DisruptionTarget),
		exitCodes(batchv1.PodFailurePolicyActionCount, in, nil, 1),
	}
	job := func(backoffLimit int32, completions int32) *batchv1.Job {
		j := policyJob(rules...)
		j.Spec.BackoffLimit = ptr.To(backoffLimit)
		j.Spec.Completions, j.Spec.Parallelism = ptr.To(completions), ptr.To(completions)
		return j
	}
	running := func(n string) *corev1.Pod { return testutil.Pod(n).Ready(now.Add(-time.Hour)).Obj() }
	cases := []struct {
		name            string
		job             *batchv1.Job
		pods            []*corev1.Pod
		wantCreate      int
		wantDelete      []string
		wantFailed      int32
		wantTerminating int32
		wantTarget      string
		wantMessage     string
		wantFailedCond  bool
	}{
		{name: "FailJob: FailureTarget PodFailurePolicy at once, running pods deleted and counted failed, Failed only once they are gone",
			job: job(6, 2), pods: []*corev1.Pod{exitedPod("bad", 42), running("other")},
			wantDelete: []string{"other"}, wantFailed: 2, wantTerminating: 1,
			wantTarget: batchv1.JobReasonPodFailurePolicy, wantMessage: "Container c0 for pod default/bad failed with exit code 42 matching FailJob rule at index 0"},
		{name: "FailJob with nothing left running: Failed with the same reason and message",
			job: job(6, 1), pods: []*corev1.Pod{exitedPod("bad", 42)}, wantFailed: 1,
			wantTarget: batchv1.JobReasonPodFailurePolicy, wantMessage: "Container c0 for pod default/bad failed with exit code 42 matching FailJob rule at index 0",
			wantFailedCond: true},
		{name: "Ignore: a disrupted pod's failure is not counted, even with backoffLimit 0, and it is replaced",
			job: job(0, 1), pods: []*corev1.Pod{withCondition(exitedPod("evicted", 137), corev1.DisruptionTarget, corev1.ConditionTrue)},
			wantCreate: 1},
		{name: "Count: the failure counts towards backoffLimit",
			job: job(0, 1), pods: []*corev1.Pod{exitedPod("flaky", 1)}, wantFailed: 1, wantTarget: ReasonBackoffLimitExceeded,
			wantMessage: msgBackoff, wantFailedCond: true},
		{name: "a failing Job's pods still terminating keep counting as failed",
			job: func() *batchv1.Job {
				j := job(6, 2)
				j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "PodFailurePolicy", Message: "m"}}
				return j
			}(),
			pods:       []*corev1.Pod{exitedPod("bad", 42), testutil.Pod("going").Ready(now.Add(-time.Hour)).Deleting().Obj()},
			wantFailed: 2, wantTerminating: 1, wantTarget: "PodFailurePolicy", wantMessage: "m"},
		{name: "a pod being deleted is replaced only once it failed (podReplacementPolicy Failed)",
			job: job(6, 1), pods: []*corev1.Pod{testutil.Pod("going").Ready(now.Add(-time.Hour)).Deleting().Obj()}, wantTerminating: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := decided(tc.job, tc.pods, now)
			st := plan.Status
			if len(plan.Create) != tc.wantCreate || !slices.Equal(testutil.Names(plan.Delete), tc.wantDelete) {
				t.Errorf("create %d delete %v, want %d %v", len(plan.Create), testutil.Names(plan.Delete), tc.wantCreate, tc.wantDelete)
			}
			if st.Failed != tc.wantFailed || ptr.Deref(st.Terminating, -1) != tc.wantTerminating {
				t.Errorf("failed %d terminating %v, want %d %d", st.Failed, ptr.Deref(st.Terminating, -1), tc.wantFailed, tc.wantTerminating)
			}
			target := hasCondition(st, batchv1.JobFailureTarget)
			switch {
			case tc.wantTarget == "" && target != nil:
				t.Errorf("unexpected FailureTarget %+v", target)
			case tc.wantTarget != "" && (target == nil || target.Reason != tc.wantTarget || target.Message != tc.wantMessage):
				t.Errorf("FailureTarget %+v, want %s %q", target, tc.wantTarget, tc.wantMessage)
			}
			failed := hasCondition(st, batchv1.JobFailed)
			if (failed != nil) != tc.wantFailedCond || failed != nil && (failed.Reason != tc.wantTarget || failed.Message != tc.wantMessage) {
				t.Errorf("Failed condition %+v, want present=%v", failed, tc.wantFailedCond)
			}
		})
	}
}

func TestReconcileFailIndex(t *testing.T) {
	j := indexedJob(2, 2)
	j.Spec.BackoffLimitPerIndex = ptr.To[int32](3)
	j.Spec.BackoffLimit = ptr.To[int32](1 << 30)
	j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		exitCodes(batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyOnExitCodesOpIn, nil, 3),
		onCondition(batchv1.PodFailurePolicyActionIgnore, corev1.DisruptionTarget),
	}}
	long := testutil.T0.Add(-time.Hour)
	fatal := withIndexFailures(indexPod("fatal", 0).Exited(corev1.PodFailed, 3, long).Obj(), 0)
	evicted := withCondition(withIndexFailures(indexPod("evicted", 1).Exited(corev1.PodFailed, 137, long).Obj(), 0), corev1.DisruptionTarget, corev1.ConditionTrue)
	plan := decided(j, []*corev1.Pod{fatal, evicted}, testutil.T0)
	if got := ptr.Deref(plan.Status.FailedIndexes, ""); got != "0" {
		t.Errorf("failedIndexes %q, want 0 (FailIndex fails it within the limit)", got)
	}
	if want := []PodToCreate{{Index: 1, IndexIgnoredFailures: 1}}; !slices.Equal(plan.Create, want) {
		t.Errorf("create %+v, want %+v: the ignored failure is retried and counted as ignored", plan.Create, want)
	}
	if plan.Status.Failed != 1 {
		t.Errorf("status.failed %d, want 1", plan.Status.Failed)
	}
}
