package cronjob

import (
	"slices"
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"minik/controller/internal/synctest"
)

// t0 is 12:00:30 UTC; the CronJobs of the tests were made an hour before.
var t0 = time.Date(2026, 3, 2, 12, 0, 30, 0, time.UTC)

func makeCJ(schedule string, edits ...func(*batchv1.CronJob)) *batchv1.CronJob {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "backup", Namespace: "default", UID: "cj-uid", CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
		Spec: batchv1.CronJobSpec{Schedule: schedule, TimeZone: ptr.To("UTC"), ConcurrencyPolicy: batchv1.AllowConcurrent, Suspend: ptr.To(false),
			SuccessfulJobsHistoryLimit: ptr.To[int32](3), FailedJobsHistoryLimit: ptr.To[int32](1),
			JobTemplate: batchv1.JobTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "backup"}},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure,
					Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}},
	}
	for _, e := range edits {
		e(cj)
	}
	return cj
}

func lastScheduled(t time.Time) func(*batchv1.CronJob) {
	return func(cj *batchv1.CronJob) { cj.Status.LastScheduleTime = &metav1.Time{Time: t} }
}

func active(names ...string) func(*batchv1.CronJob) {
	return func(cj *batchv1.CronJob) {
		for _, n := range names {
			cj.Status.Active = append(cj.Status.Active, corev1.ObjectReference{Kind: "Job", Name: n, Namespace: "default", UID: types.UID("uid-" + n)})
		}
	}
}

type jobState int

const (
	running jobState = iota
	complete
	failed
)

func job(name string, state jobState, started time.Time) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(started)},
		Status: batchv1.JobStatus{StartTime: &metav1.Time{Time: started}}}
	switch state {
	case complete:
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
		j.Status.CompletionTime = &metav1.Time{Time: started.Add(10 * time.Second)}
	case failed:
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}
	}
	return j
}

func jobNames(js []*batchv1.Job) []string {
	out := []string{}
	for _, j := range js {
		out = append(out, j.Name)
	}
	return out
}

func reasons(evs []Event) []string {
	out := []string{}
	for _, e := range evs {
		out = append(out, e.Reason)
	}
	return out
}

func TestPlan(t *testing.T) {
	noon := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	minute := func(t time.Time) string { return "backup-" + itoa(t.Unix()/60) }
	cases := []struct {
		name        string
		cj          *batchv1.CronJob
		jobs        []*batchv1.Job
		now         time.Time
		wantCreate  string
		wantReplace []string
		wantHistory []string
		wantEvents  []string
		wantRequeue time.Duration
		check       func(t *testing.T, p decisions)
	}{
		{
			name: "a due schedule time starts a Job named after its minute, and requeues for the next time",
			cj:   makeCJ("*/5 * * * *", lastScheduled(noon.Add(-5*time.Minute))), now: t0,
			wantCreate: minute(noon), wantRequeue: 4*time.Minute + 30*time.Second + nextSlack,
			check: func(t *testing.T, p decisions) {
				if got := p.Create.Annotations[ScheduledTimestampAnnotation]; got != "2026-03-02T12:00:00Z" {
					t.Errorf("scheduled-timestamp %q", got)
				}
				if ref := p.Create.OwnerReferences[0]; ref.Kind != "CronJob" || !*ref.Controller || p.Create.Labels["app"] != "backup" {
					t.Errorf("owner %+v labels %v", ref, p.Create.Labels)
				}
				if !p.Scheduled.Equal(noon) {
					t.Errorf("scheduled %v", p.Scheduled)
				}
			},
		},
		{
			name: "nothing is due before the next time",
			cj:   makeCJ("*/5 * * * *", lastScheduled(noon)), now: t0,
			wantRequeue: 4*time.Minute + 30*time.Second + nextSlack,
		},
		{
			name: "the time zone decides when a daily schedule fires",
			cj: makeCJ("0 13 * * *", lastScheduled(noon.Add(-24*time.Hour)), func(cj *batchv1.CronJob) {
				cj.Spec.TimeZone = ptr.To("Europe/Berlin") // 13:00 in Berlin is 12:00 UTC in March
			}), now: t0,
			wantCreate: minute(noon), wantRequeue: 24*time.Hour - 30*time.Second + nextSlack,
			check: func(t *testing.T, p decisions) {
				if got := p.Create.Annotations[ScheduledTimestampAnnotation]; got != "2026-03-02T13:00:00+01:00" {
					t.Errorf("scheduled-timestamp %q, want it in the CronJob's zone", got)
				}
			},
		},
		{
			name: "@hourly is a macro for minute 0",
			cj:   makeCJ("@hourly"), now: t0,
			wantCreate: minute(noon), wantRequeue: time.Hour - 30*time.Second + nextSlack,
		},
		{
			name: "a suspended CronJob starts nothing and is not requeued",
			cj:   makeCJ("*/5 * * * *", func(cj *batchv1.CronJob) { cj.Spec.Suspend = ptr.To(true) }), now: t0,
		},
		{
			name: "more than 100 missed times warn, and only the latest is started",
			cj:   makeCJ("* * * * *", lastScheduled(noon.Add(-3*24*time.Hour))), now: t0,
			wantCreate: minute(noon), wantEvents: []string{"TooManyMissedTimes"}, wantRequeue: 30*time.Second + nextSlack,
		},
		{
			name: "the latest missed time of an irregular schedule is found exactly",
			cj:   makeCJ("0 9 * * 1-5", lastScheduled(noon.Add(-30*24*time.Hour))), now: t0, // t0 is a Monday
			wantCreate: minute(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)), wantRequeue: 24*time.Hour - 3*time.Hour - 30*time.Second + nextSlack,
		},
		{
			name: "startingDeadlineSeconds bounds how far back missed times count",
			cj: makeCJ("* * * * *", lastScheduled(noon.Add(-3*24*time.Hour)), func(cj *batchv1.CronJob) {
				cj.Spec.StartingDeadlineSeconds = ptr.To[int64](200)
			}), now: t0,
			wantCreate: minute(noon), wantRequeue: 30*time.Second + nextSlack,
		},
		{
			name: "a time older than startingDeadlineSeconds is not started: the next one is awaited",
			cj: makeCJ("0 * * * *", lastScheduled(noon.Add(-time.Hour)), func(cj *batchv1.CronJob) {
				cj.Spec.StartingDeadlineSeconds = ptr.To[int64](10)
			}), now: t0,
			wantRequeue: time.Hour - 30*time.Second + nextSlack,
		},
		{
			name: "Forbid skips a run while one is active",
			cj: makeCJ("*/5 * * * *", lastScheduled(noon.Add(-5*time.Minute)), active("backup-old"), func(cj *batchv1.CronJob) {
				cj.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent
			}),
			jobs: []*batchv1.Job{job("backup-old", running, noon.Add(-5*time.Minute))}, now: t0,
			wantEvents: []string{"JobAlreadyActive"}, wantRequeue: 4*time.Minute + 30*time.Second + nextSlack,
		},
		{
			name: "Replace deletes the active Job and starts the new one",
			cj: makeCJ("*/5 * * * *", lastScheduled(noon.Add(-5*time.Minute)), active("backup-old"), func(cj *batchv1.CronJob) {
				cj.Spec.ConcurrencyPolicy = batchv1.ReplaceConcurrent
			}),
			jobs: []*batchv1.Job{job("backup-old", running, noon.Add(-5*time.Minute))}, now: t0,
			wantCreate: minute(noon), wantReplace: []string{"backup-old"}, wantRequeue: 4*time.Minute + 30*time.Second + nextSlack,
			check: func(t *testing.T, p decisions) {
				if len(p.Status.Active) != 0 {
					t.Errorf("active %v", p.Status.Active)
				}
			},
		},
		{
			name: "Allow starts the new Job beside the active one",
			cj:   makeCJ("*/5 * * * *", lastScheduled(noon.Add(-5*time.Minute)), active("backup-old")),
			jobs: []*batchv1.Job{job("backup-old", running, noon.Add(-5*time.Minute))}, now: t0,
			wantCreate: minute(noon), wantRequeue: 4*time.Minute + 30*time.Second + nextSlack,
		},
		{
			name: "a finished active Job leaves the active list with SawCompletedJob and sets lastSuccessfulTime",
			cj:   makeCJ("*/5 * * * *", lastScheduled(noon), active("backup-1")),
			jobs: []*batchv1.Job{job("backup-1", complete, noon)}, now: t0,
			wantEvents: []string{"SawCompletedJob"}, wantRequeue: 4*time.Minute + 30*time.Second + nextSlack,
			check: func(t *testing.T, p decisions) {
				if len(p.Status.Active) != 0 || p.Status.LastSuccessfulTime == nil || !p.Status.LastSuccessfulTime.Time.Equal(noon.Add(10*time.Second)) {
					t.Errorf("status %+v", p.Status)
				}
			},
		},
		{
			name: "a running Job missing from the active list is added, a deleted one dropped",
			cj:   makeCJ("*/5 * * * *", lastScheduled(noon), active("gone")),
			jobs: []*batchv1.Job{job("backup-2", running, noon)}, now: t0,
			wantRequeue: 4*time.Minute + 30*time.Second + nextSlack,
			check: func(t *testing.T, p decisions) {
				if len(p.Status.Active) != 1 || p.Status.Active[0].Name != "backup-2" {
					t.Errorf("active %v", p.Status.Active)
				}
			},
		},
		{
			name: "the oldest finished Jobs beyond the history limits are deleted",
			cj:   makeCJ("*/5 * * * *", lastScheduled(noon)),
			jobs: []*batchv1.Job{
				job("ok-1", complete, noon.Add(-40*time.Minute)), job("ok-2", complete, noon.Add(-30*time.Minute)),
				job("ok-3", complete, noon.Add(-20*time.Minute)), job("ok-4", complete, noon.Add(-10*time.Minute)),
				job("bad-1", failed, noon.Add(-25*time.Minute)), job("bad-2", failed, noon.Add(-15*time.Minute)),
			}, now: t0,
			wantHistory: []string{"ok-1", "bad-1"}, wantRequeue: 4*time.Minute + 30*time.Second + nextSlack,
		},
		{
			name: "an unparseable schedule is reported and not requeued",
			cj:   makeCJ("every five minutes"), now: t0,
			wantEvents: []string{"UnparseableSchedule"},
		},
		{
			name: "a Job already started for this time is not started again",
			cj:   makeCJ("*/5 * * * *", lastScheduled(noon.Add(-5*time.Minute)), active("backup-"+itoa(noon.Unix()/60))),
			jobs: []*batchv1.Job{job("backup-"+itoa(noon.Unix()/60), running, noon)}, now: t0,
			wantRequeue: 4*time.Minute + 30*time.Second + nextSlack,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := split(t, tc.cj, Plan(tc.cj, tc.jobs, tc.now))
			got := ""
			if p.Create != nil {
				got = p.Create.Name
			}
			if got != tc.wantCreate {
				t.Errorf("created %q, want %q", got, tc.wantCreate)
			}
			if g := jobNames(p.ReplaceJobs); !slices.Equal(g, nonNil(tc.wantReplace)) {
				t.Errorf("replaced %v, want %v", g, tc.wantReplace)
			}
			if g := jobNames(p.HistoryJobs); !slices.Equal(g, nonNil(tc.wantHistory)) {
				t.Errorf("history deletes %v, want %v", g, tc.wantHistory)
			}
			if g := reasons(p.Events); !slices.Equal(g, nonNil(tc.wantEvents)) {
				t.Errorf("events %v, want %v", g, tc.wantEvents)
			}
			if p.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeue after %v, want %v", p.RequeueAfter, tc.wantRequeue)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

// split sorts out's actions back into decisions, checking their order:
// events, replaced Jobs, the create, the status (written when it changes
// or a Job is created), finished Jobs.
func split(t *testing.T, cj *batchv1.CronJob, out Output) decisions {
	t.Helper()
	d := decisions{Status: cj.Status, RequeueAfter: out.RequeueAfter}
	synctest.CheckOrder(t, out.Actions, actionType, []ActionType{RecordEvent, DeleteReplacedJob, CreateJob, UpdateStatus, DeleteFinishedJob})
	wroteStatus := false
	for _, a := range out.Actions {
		switch a.Type {
		case RecordEvent:
			d.Events = append(d.Events, a.Event)
		case DeleteReplacedJob:
			d.ReplaceJobs = append(d.ReplaceJobs, a.Job)
		case CreateJob:
			d.Create, d.Scheduled = a.Job, a.Scheduled
		case UpdateStatus:
			d.Status, wroteStatus = a.Status, true
		case DeleteFinishedJob:
			d.HistoryJobs = append(d.HistoryJobs, a.Job)
		}
	}
	if d.Create != nil && !wroteStatus {
		t.Errorf("actions %v: a create must be followed by the status", out.Actions)
	}
	return d
}

func actionType(a Action) ActionType { return a.Type }

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
