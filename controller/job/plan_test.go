package job

import (
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/controller/framework"
	"minik/controller/internal/testutil"
)

// jobLabel is the label the apiserver gives a Job's selector and template.
const jobLabel = batchv1.ControllerUidLabel

func makeJob(completions, parallelism *int32, restart corev1.RestartPolicy) *batchv1.Job {
	labels := map[string]string{jobLabel: "job-uid"}
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default", UID: "job-uid"},
		Spec: batchv1.JobSpec{Completions: completions, Parallelism: parallelism, BackoffLimit: testutil.Int32(2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{RestartPolicy: restart}}}}
}

// ownedBy returns copies of pods as job made them: controlled by it and
// labelled for its selector.
func ownedBy(job *batchv1.Job, pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		p = p.DeepCopy()
		p.OwnerReferences = []metav1.OwnerReference{framework.ControllerRef(job, "batch/v1", "Job")}
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[jobLabel] = string(job.UID)
		out[i] = p
	}
	return out
}

func running(n string) *corev1.Pod { return testutil.Pod(n).Phase(corev1.PodRunning).Obj() }
func phase(n string, ph corev1.PodPhase) *corev1.Pod {
	return testutil.Pod(n).Phase(ph).Obj()
}

func failedAt(n string, at time.Time) *corev1.Pod {
	return testutil.Pod(n).Exited(corev1.PodFailed, 1, at).Obj()
}

func succeededAt(n string, at time.Time) *corev1.Pod {
	return testutil.Pod(n).Exited(corev1.PodSucceeded, 0, at).Obj()
}

// decided runs Plan and reads its actions back into a decision, for the
// tables: the status is the one written, else the Job's own. pods are
// the Job's own.
func decided(job *batchv1.Job, pods []*corev1.Pod, now time.Time) decision {
	out := Plan(job, ownedBy(job, pods), now)
	d := decision{Status: job.Status, RequeueAfter: out.RequeueAfter}
	for _, a := range out.Actions {
		switch a.Type {
		case CreatePods:
			d.Create = a.Create
		case DeletePods:
			d.Delete = a.Delete
		case UpdateStatus:
			d.Status = *a.Status
		case DeleteJob:
			d.DeleteJob = true
		}
	}
	return d
}

func cond(st batchv1.JobStatus, t batchv1.JobConditionType) string {
	if c := hasCondition(st, t); c != nil {
		return c.Reason
	}
	return ""
}

func TestPlan(t *testing.T) {
	now := testutil.T0
	i32 := testutil.Int32
	cases := []struct {
		name        string
		job         *batchv1.Job
		pods        []*corev1.Pod
		now         time.Time
		wantCreate  int
		wantDelete  int
		wantReasons map[batchv1.JobConditionType]string
		wantDeleted bool
	}{
		{name: "a new job starts parallelism pods", job: makeJob(i32(5), i32(2), corev1.RestartPolicyNever), wantCreate: 2},
		{name: "parallelism never exceeds the completions left", job: makeJob(i32(3), i32(2), corev1.RestartPolicyNever),
			pods: []*corev1.Pod{phase("a", corev1.PodSucceeded), phase("b", corev1.PodSucceeded), running("c")}},
		{name: "enough successes complete the job", job: makeJob(i32(2), i32(2), corev1.RestartPolicyNever),
			pods:        []*corev1.Pod{phase("a", corev1.PodSucceeded), phase("b", corev1.PodSucceeded)},
			wantReasons: map[batchv1.JobConditionType]string{batchv1.JobComplete: ReasonCompletionsReached, batchv1.JobSuccessCriteriaMet: ReasonCompletionsReached}},
		{name: "without completions, one success and no active pod completes it", job: makeJob(nil, i32(2), corev1.RestartPolicyNever),
			pods:        []*corev1.Pod{phase("a", corev1.PodSucceeded)},
			wantReasons: map[batchv1.JobConditionType]string{batchv1.JobComplete: ReasonCompletionsReached}},
		{name: "without completions, after a success no new pod starts", job: makeJob(nil, i32(2), corev1.RestartPolicyNever),
			pods: []*corev1.Pod{phase("a", corev1.PodSucceeded), running("b")}},
		{name: "a failed pod under Never is replaced while within backoffLimit, once its backoff passed", job: makeJob(i32(1), i32(1), corev1.RestartPolicyNever),
			pods: []*corev1.Pod{failedAt("a", now.Add(-time.Hour)), failedAt("b", now.Add(-time.Hour))}, wantCreate: 1},
		{name: "more failures than backoffLimit fail the job", job: makeJob(i32(1), i32(1), corev1.RestartPolicyNever),
			pods:        []*corev1.Pod{phase("a", corev1.PodFailed), phase("b", corev1.PodFailed), phase("c", corev1.PodFailed)},
			wantReasons: map[batchv1.JobConditionType]string{batchv1.JobFailed: ReasonBackoffLimitExceeded, batchv1.JobFailureTarget: ReasonBackoffLimitExceeded}},
		{name: "under OnFailure, restarts reaching backoffLimit fail the job and its pods are deleted first", job: makeJob(i32(1), i32(1), corev1.RestartPolicyOnFailure),
			pods:        []*corev1.Pod{testutil.Pod("a").Phase(corev1.PodRunning).Restarts(2).Obj()},
			wantDelete:  1,
			wantReasons: map[batchv1.JobConditionType]string{batchv1.JobFailureTarget: ReasonBackoffLimitExceeded}},
		{name: "running past activeDeadlineSeconds fails the job", job: func() *batchv1.Job {
			j := makeJob(i32(1), i32(1), corev1.RestartPolicyNever)
			j.Spec.ActiveDeadlineSeconds = testutil.Int64(30)
			st := metav1.NewTime(now.Add(-31 * time.Second))
			j.Status.StartTime = &st
			return j
		}(), wantReasons: map[batchv1.JobConditionType]string{batchv1.JobFailed: ReasonDeadlineExceeded, batchv1.JobFailureTarget: ReasonDeadlineExceeded}},
		{name: "a suspended job deletes its active pods and says JobSuspended", job: func() *batchv1.Job {
			j := makeJob(i32(3), i32(2), corev1.RestartPolicyNever)
			j.Spec.Suspend = func() *bool { b := true; return &b }()
			return j
		}(), pods: []*corev1.Pod{running("a"), phase("b", corev1.PodSucceeded)}, wantDelete: 1,
			wantReasons: map[batchv1.JobConditionType]string{batchv1.JobSuspended: "JobSuspended"}},
		{name: "a finished job past ttlSecondsAfterFinished is deleted", job: func() *batchv1.Job {
			j := makeJob(i32(1), i32(1), corev1.RestartPolicyNever)
			j.Spec.TTLSecondsAfterFinished = testutil.Int32(10)
			done := metav1.NewTime(now.Add(-11 * time.Second))
			j.Status.CompletionTime = &done
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: ReasonCompletionsReached}}
			return j
		}(), wantReasons: map[batchv1.JobConditionType]string{batchv1.JobComplete: ReasonCompletionsReached}, wantDeleted: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := decided(tc.job, tc.pods, now)
			if len(plan.Create) != tc.wantCreate || len(plan.Delete) != tc.wantDelete || plan.DeleteJob != tc.wantDeleted {
				t.Errorf("create %d delete %d deleteJob %v, want %d %d %v", len(plan.Create), len(plan.Delete), plan.DeleteJob, tc.wantCreate, tc.wantDelete, tc.wantDeleted)
			}
			for _, typ := range []batchv1.JobConditionType{batchv1.JobComplete, batchv1.JobFailed, batchv1.JobFailureTarget, batchv1.JobSuccessCriteriaMet, batchv1.JobSuspended} {
				if got := cond(plan.Status, typ); got != tc.wantReasons[typ] && !(typ == batchv1.JobSuccessCriteriaMet && tc.wantReasons[typ] == "") {
					t.Errorf("condition %s reason %q, want %q", typ, got, tc.wantReasons[typ])
				}
			}
			if plan.Status.StartTime == nil && !tc.wantDeleted && tc.wantReasons[batchv1.JobSuspended] == "" {
				t.Error("startTime not set")
			}
		})
	}
}

func TestReconcilePodFailureBackoff(t *testing.T) {
	now := testutil.T0
	i32 := testutil.Int32
	job := func() *batchv1.Job {
		j := makeJob(i32(3), i32(1), corev1.RestartPolicyNever)
		j.Spec.BackoffLimit = i32(20)
		return j
	}
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	cases := []struct {
		name        string
		pods        []*corev1.Pod
		wantCreate  int
		wantRequeue time.Duration
	}{
		{name: "no failure: no wait", wantCreate: 1},
		{name: "one failure 3s ago: the replacement waits the remaining 7s of 10s",
			pods: []*corev1.Pod{failedAt("a", ago(3*time.Second))}, wantRequeue: 7 * time.Second},
		{name: "one failure 10s ago: the replacement is created",
			pods: []*corev1.Pod{failedAt("a", ago(10*time.Second))}, wantCreate: 1},
		{name: "three failures: 40s from the last one",
			pods:        []*corev1.Pod{failedAt("a", ago(time.Hour)), failedAt("b", ago(time.Minute)), failedAt("c", ago(5*time.Second))},
			wantRequeue: 35 * time.Second},
		{name: "ten failures: capped at six minutes",
			pods: func() []*corev1.Pod {
				var ps []*corev1.Pod
				for i := range 10 {
					ps = append(ps, failedAt(string(rune('a'+i)), ago(time.Duration(10-i)*time.Second)))
				}
				return ps
			}(),
			wantRequeue: 6*time.Minute - time.Second},
		{name: "a success resets the count: only the failure after it counts",
			pods: []*corev1.Pod{failedAt("a", ago(2*time.Minute)), failedAt("b", ago(90*time.Second)), succeededAt("c", ago(time.Minute)),
				failedAt("d", ago(4*time.Second))},
			wantRequeue: 6 * time.Second},
		{name: "a failure known only by its Ready=False transition counts from that time",
			pods: []*corev1.Pod{func() *corev1.Pod {
				p := testutil.Pod("a").Phase(corev1.PodFailed).Obj()
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(ago(4 * time.Second))}}
				return p
			}()},
			wantRequeue: 6 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := decided(job(), tc.pods, now)
			if len(plan.Create) != tc.wantCreate || plan.RequeueAfter != tc.wantRequeue {
				t.Fatalf("create %d requeue %v, want %d %v", len(plan.Create), plan.RequeueAfter, tc.wantCreate, tc.wantRequeue)
			}
		})
	}
}

func TestFailureBackoffDoublesUpToSixMinutes(t *testing.T) {
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 320 * time.Second, 6 * time.Minute, 6 * time.Minute}
	for failures, w := range want {
		if got := failureBackoff(failures); got != w {
			t.Errorf("%d failures: %v, want %v", failures, got, w)
		}
	}
}

// TestPlanActions: the pods go first, then the status; the status goes
// with every create, even when it is the Job's already, since creates
// that fail lower it again.
func TestPlanActions(t *testing.T) {
	now := testutil.T0
	start := metav1.NewTime(now.Add(-time.Minute))
	zero := int32(0)
	// job runs 2 of its 3 completions at once and says so in its status.
	job := makeJob(testutil.Int32(3), testutil.Int32(2), corev1.RestartPolicyNever)
	job.Status = batchv1.JobStatus{Active: 2, StartTime: &start, Ready: &zero, Terminating: &zero}
	cases := []struct {
		name string
		pods []*corev1.Pod
		want []string
	}{
		{"a Job running what it should writes nothing", []*corev1.Pod{running("a"), running("b")}, nil},
		{"a lost pod is replaced, and the unchanged status goes with the create", []*corev1.Pod{running("a")},
			[]string{"CreatePods 1", "UpdateStatus active=2 succeeded=0 failed=0"}},
		{"a pod too many (the pending one) is deleted, then the status says so",
			[]*corev1.Pod{running("a"), running("b"), phase("c", corev1.PodPending)},
			[]string{"DeletePods c", "UpdateStatus active=2 succeeded=0 failed=0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, a := range Plan(job, ownedBy(job, tc.pods), now).Actions {
				got = append(got, a.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("actions %v, want %v", got, tc.want)
			}
		})
	}
}
