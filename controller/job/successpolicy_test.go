package job

import (
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"minik/controller/internal/testutil"
)

// withSuccessPolicy returns an Indexed Job of completions with rules.
func withSuccessPolicy(completions, parallelism int32, rules ...batchv1.SuccessPolicyRule) *batchv1.Job {
	j := indexedJob(completions, parallelism)
	j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: rules}
	return j
}

func indexesRule(indexes string, count *int32) batchv1.SuccessPolicyRule {
	return batchv1.SuccessPolicyRule{SucceededIndexes: &indexes, SucceededCount: count}
}

func countRule(count int32) batchv1.SuccessPolicyRule {
	return batchv1.SuccessPolicyRule{SucceededCount: &count}
}

func TestMatchSuccessPolicy(t *testing.T) {
	cases := []struct {
		name      string
		job       *batchv1.Job
		completed string
		want      string // the message, "" for no match
	}{
		{name: "a Job without a success policy never matches",
			job: indexedJob(5, 5), completed: "0-4"},
		{name: "succeededIndexes is met once every one of them completed",
			job: withSuccessPolicy(5, 5, indexesRule("0,2-3", nil)), completed: "0-3", want: "Matched rules at index 0"},
		{name: "succeededIndexes with one of them missing is not met",
			job: withSuccessPolicy(5, 5, indexesRule("0,2-3", nil)), completed: "0,2,4"},
		{name: "succeededIndexes with succeededCount is met by that many of them",
			job: withSuccessPolicy(5, 5, indexesRule("0,2-4", ptr.To[int32](2))), completed: "0,3", want: "Matched rules at index 0"},
		{name: "indexes outside succeededIndexes do not count towards its succeededCount",
			job: withSuccessPolicy(5, 5, indexesRule("0,2-4", ptr.To[int32](2))), completed: "0,1"},
		{name: "succeededCount alone counts every completed index",
			job: withSuccessPolicy(8, 8, countRule(3)), completed: "1,5,7", want: "Matched rules at index 0"},
		{name: "succeededCount alone not reached",
			job: withSuccessPolicy(8, 8, countRule(3)), completed: "1,5"},
		{name: "the message names the first rule met",
			job: withSuccessPolicy(5, 5, indexesRule("4", nil), countRule(2), countRule(1)), completed: "0,1", want: "Matched rules at index 1"},
		{name: "nothing completed matches nothing, even succeededCount 0",
			job: withSuccessPolicy(5, 5, countRule(0))},
		{name: "a NonIndexed Job ignores a success policy",
			job: func() *batchv1.Job {
				j := withSuccessPolicy(5, 5, countRule(1))
				j.Spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
				return j
			}(),
			completed: "0-4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg, met := matchSuccessPolicy(tc.job, parseIntervals(tc.completed, int(*tc.job.Spec.Completions)))
			if met != (tc.want != "") || msg != tc.want {
				t.Fatalf("got %q, %v; want %q", msg, met, tc.want)
			}
		})
	}
}

func TestReconcileSuccessPolicy(t *testing.T) {
	now := testutil.T0
	long := now.Add(-time.Hour)
	done := func(name string, ix int) *corev1.Pod {
		return indexPod(name, ix).Exited(corev1.PodSucceeded, 0, long).Obj()
	}
	// met is a Job whose rule (index 0) was met in an earlier sync.
	met := func() *batchv1.Job {
		j := withSuccessPolicy(4, 4, indexesRule("0", nil))
		setCondition(&j.Status, batchv1.JobSuccessCriteriaMet, batchv1.JobReasonSuccessPolicy, "Matched rules at index 0", long)
		return j
	}
	cases := []struct {
		name        string
		job         *batchv1.Job
		pods        []*corev1.Pod
		wantCreate  []int
		wantDelete  []string
		wantReason  map[batchv1.JobConditionType]string
		wantFailed  int32
		wantActive  int32
		wantMessage string
	}{
		{name: "a rule met: SuccessCriteriaMet, the pods still running are deleted, nothing is created",
			job:        withSuccessPolicy(4, 4, indexesRule("0", nil)),
			pods:       []*corev1.Pod{done("a", 0), indexPod("b", 1).Ready(long).Obj(), indexPod("c", 2).Obj()},
			wantDelete: []string{"b", "c"},
			wantReason: map[batchv1.JobConditionType]string{batchv1.JobSuccessCriteriaMet: "SuccessPolicy"}, wantMessage: "Matched rules at index 0"},
		{name: "no rule met: the Job runs on",
			job:        withSuccessPolicy(4, 2, indexesRule("0,1", nil)),
			pods:       []*corev1.Pod{done("a", 0), indexPod("b", 2).Ready(long).Obj()},
			wantCreate: []int{1}, wantActive: 2},
		{name: "once met, pods that end while being deleted neither fail the Job nor complete it early",
			job:        met(),
			pods:       []*corev1.Pod{done("a", 0), indexPod("b", 1).Exited(corev1.PodFailed, 137, now).Obj(), indexPod("c", 2).Deleting().Obj()},
			wantReason: map[batchv1.JobConditionType]string{batchv1.JobSuccessCriteriaMet: "SuccessPolicy"}},
		{name: "once no pod is left running or terminating, Complete with the success policy's reason and message",
			job:         met(),
			pods:        []*corev1.Pod{done("a", 0), indexPod("b", 1).Exited(corev1.PodFailed, 137, now).Obj()},
			wantReason:  map[batchv1.JobConditionType]string{batchv1.JobSuccessCriteriaMet: "SuccessPolicy", batchv1.JobComplete: "SuccessPolicy"},
			wantMessage: "Matched rules at index 0"},
		{name: "every index completed: the reason is still SuccessPolicy",
			job:        withSuccessPolicy(2, 2, countRule(2)),
			pods:       []*corev1.Pod{done("a", 0), done("b", 1)},
			wantReason: map[batchv1.JobConditionType]string{batchv1.JobSuccessCriteriaMet: "SuccessPolicy", batchv1.JobComplete: "SuccessPolicy"}},
		{name: "a failure past backoffLimit wins over a rule met in the same sync",
			job: func() *batchv1.Job {
				j := withSuccessPolicy(4, 4, indexesRule("0", nil))
				j.Spec.BackoffLimit = ptr.To[int32](0)
				return j
			}(),
			pods:       []*corev1.Pod{done("a", 0), indexPod("b", 1).Exited(corev1.PodFailed, 1, long).Obj(), indexPod("c", 2).Ready(long).Obj()},
			wantDelete: []string{"c"},
			wantReason: map[batchv1.JobConditionType]string{batchv1.JobFailureTarget: ReasonBackoffLimitExceeded},
			wantFailed: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := decided(tc.job, tc.pods, now)
			if got := createdIndexes(plan); !slices.Equal(got, tc.wantCreate) {
				t.Errorf("created indexes %v, want %v", got, tc.wantCreate)
			}
			if got := testutil.Names(plan.Delete); !slices.Equal(got, tc.wantDelete) {
				t.Errorf("deleted %v, want %v", got, tc.wantDelete)
			}
			for _, typ := range []batchv1.JobConditionType{batchv1.JobSuccessCriteriaMet, batchv1.JobComplete, batchv1.JobFailureTarget, batchv1.JobFailed} {
				if got := cond(plan.Status, typ); got != tc.wantReason[typ] {
					t.Errorf("condition %s reason %q, want %q", typ, got, tc.wantReason[typ])
				}
			}
			if plan.Status.Failed != tc.wantFailed || plan.Status.Active != tc.wantActive {
				t.Errorf("failed %d active %d, want %d %d", plan.Status.Failed, plan.Status.Active, tc.wantFailed, tc.wantActive)
			}
			if tc.wantMessage != "" {
				for _, typ := range []batchv1.JobConditionType{batchv1.JobSuccessCriteriaMet, batchv1.JobComplete} {
					if c := hasCondition(plan.Status, typ); c != nil && c.Message != tc.wantMessage {
						t.Errorf("%s message %q, want %q", typ, c.Message, tc.wantMessage)
					}
				}
			}
			complete := hasCondition(plan.Status, batchv1.JobComplete) != nil
			if complete != (plan.Status.CompletionTime != nil) {
				t.Errorf("Complete %v but completionTime %v", complete, plan.Status.CompletionTime)
			}
		})
	}
}
