package job

import (
	"context"
	"log/slog"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"minik/client"
	"minik/controller/framework"
	"minik/controller/internal/synctest"
	"minik/controller/internal/testutil"
)

// TestSyncRunsThePlanThroughTheSink drives the controller's sync over
// caches filled by hand and a FakeSink: no apiserver.
func TestSyncRunsThePlanThroughTheSink(t *testing.T) {
	now := testutil.T0
	i32 := testutil.Int32
	job := makeJob(i32(3), i32(2), corev1.RestartPolicyNever)
	own := func(p *corev1.Pod) *corev1.Pod { return ownedBy(job, []*corev1.Pod{p})[0] }
	orphan := func(p *corev1.Pod) *corev1.Pod {
		p = own(p)
		p.OwnerReferences = nil
		return p
	}
	unlabelled := func(p *corev1.Pod) *corev1.Pod {
		p = own(p)
		p.Labels = nil
		return p
	}
	elsewhere := orphan(running("x"))
	elsewhere.Namespace = "other"
	finished := job.DeepCopy()
	finished.Spec.TTLSecondsAfterFinished = i32(10)
	finished.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}}
	finishedNoTTL := func(j *batchv1.Job) *batchv1.Job {
		j = j.DeepCopy()
		j.Status.Conditions = finished.Status.Conditions
		return j
	}
	cases := []struct {
		name     string
		jobs     []*batchv1.Job
		pods     []*corev1.Pod
		pending  bool       // creations of an earlier sync not seen yet
		fail     ActionType // the sink refuses this action
		wantDone []string
		wantErr  string
		// wantExpecting: the sync left creations or deletions expected.
		wantExpecting bool
	}{
		{name: "a new Job creates parallelism pods, then writes its status",
			jobs:     []*batchv1.Job{job},
			wantDone: []string{"CreatePods 2", "UpdateStatus active=2 succeeded=0 failed=0"}, wantExpecting: true},
		{name: "a Job past its backoff limit deletes its running pods and becomes FailureTarget",
			jobs: []*batchv1.Job{job},
			pods: []*corev1.Pod{own(failedAt("a", now.Add(-3*time.Hour))), own(failedAt("b", now.Add(-2*time.Hour))),
				own(failedAt("c", now.Add(-time.Hour))), own(running("d"))},
			wantDone:      []string{"UpdateStatus active=0 succeeded=0 failed=4 FailureTarget", "DeletePods d (after the status)"},
			wantExpecting: true},
		{name: "a Job that starts failing keeps its pods while its status write fails: they are what it counts as failed",
			jobs: []*batchv1.Job{job}, fail: UpdateStatus,
			pods: []*corev1.Pod{own(failedAt("a", now.Add(-3*time.Hour))), own(failedAt("b", now.Add(-2*time.Hour))),
				own(failedAt("c", now.Add(-time.Hour))), own(running("d"))},
			wantErr: "refused"},
		{name: "an orphan the Job's selector matches is adopted and counts; one of another namespace does not",
			jobs: []*batchv1.Job{job}, pods: []*corev1.Pod{orphan(running("a")), own(running("b")), elsewhere},
			wantDone: []string{"AdoptPod a", "UpdateStatus active=2 succeeded=0 failed=0"}},
		{name: "a pod whose labels stopped matching is released and replaced",
			jobs: []*batchv1.Job{job}, pods: []*corev1.Pod{unlabelled(running("a")), own(running("b"))},
			wantDone: []string{"ReleasePod a", "CreatePods 1", "UpdateStatus active=2 succeeded=0 failed=0"}, wantExpecting: true},
		{name: "a finished Job adopts no orphan",
			jobs: []*batchv1.Job{finishedNoTTL(job)}, pods: []*corev1.Pod{orphan(running("a"))}},
		{name: "a finished Job past its ttlSecondsAfterFinished is deleted",
			jobs: []*batchv1.Job{finished}, wantDone: []string{"DeleteJob"}},
		{name: "a Job waits until the informer saw the pods it created",
			jobs: []*batchv1.Job{job}, pending: true, wantExpecting: true},
		{name: "a refused create does not stop the status write, and the sync returns its error",
			jobs: []*batchv1.Job{job}, fail: CreatePods,
			wantDone: []string{"UpdateStatus active=2 succeeded=0 failed=0"}, wantErr: "refused", wantExpecting: true},
		{name: "a Job gone from the cache is nothing to do, and its expectations go", pending: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
			inf.Jobs.Replace(tc.jobs)
			inf.Pods.Replace(tc.pods)
			sink := synctest.Refusing(func(a Action) bool { return a.Type == tc.fail })
			clk := testingclock.NewFakeClock(now)
			jc := &Controller{inf: inf, clock: clk, expect: framework.NewExpectations(clk),
				sink: func(string, *batchv1.Job) framework.Sink[Action] { return sink }}
			if tc.pending {
				jc.expect.Expect("default/j", 1, nil)
			}
			_, err := jc.sync(context.Background(), "default/j")
			synctest.Check(t, err, tc.wantErr, sink, tc.wantDone)
			if expecting := !jc.expect.Satisfied("default/j"); expecting != tc.wantExpecting {
				t.Errorf("expecting pod changes: %v, want %v", expecting, tc.wantExpecting)
			}
		})
	}
}
