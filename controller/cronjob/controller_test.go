package cronjob

import (
	"context"
	"log/slog"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	testingclock "k8s.io/utils/clock/testing"

	"minik/client"
	"minik/controller/framework"
	"minik/controller/internal/synctest"
)

// TestSyncRunsThePlanThroughTheSink drives the controller's sync over
// caches filled by hand and a FakeSink: no apiserver.
func TestSyncRunsThePlanThroughTheSink(t *testing.T) {
	noon := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	due := "backup-" + itoa(noon.Unix()/60)
	owned := func(j *batchv1.Job, cj *batchv1.CronJob) *batchv1.Job {
		j.OwnerReferences = NewJob(cj, noon, time.UTC).OwnerReferences
		return j
	}
	replace := makeCJ("*/5 * * * *", lastScheduled(noon.Add(-5*time.Minute)), active("backup-1"), func(cj *batchv1.CronJob) {
		cj.Spec.ConcurrencyPolicy = batchv1.ReplaceConcurrent
	})
	forbid := makeCJ("*/5 * * * *", lastScheduled(noon.Add(-5*time.Minute)), active("backup-1"), func(cj *batchv1.CronJob) {
		cj.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent
	})
	plain := makeCJ("*/5 * * * *", lastScheduled(noon.Add(-5*time.Minute)))
	cases := []struct {
		name     string
		cj       *batchv1.CronJob
		jobs     []*batchv1.Job
		fail     ActionType // the sink refuses this action
		wantDone []string   // the actions performed
		wantErr  string
	}{
		{name: "a due time creates its Job, then writes the status",
			cj: plain, wantDone: []string{"CreateJob " + due, "UpdateStatus active=0"}},
		{name: "Replace deletes the active Job before it creates the next",
			cj: replace, jobs: []*batchv1.Job{owned(job("backup-1", running, noon.Add(-5*time.Minute)), replace)},
			wantDone: []string{"DeleteReplacedJob backup-1", "CreateJob " + due, "UpdateStatus active=0"}},
		{name: "Forbid with a Job running only reports it",
			cj: forbid, jobs: []*batchv1.Job{owned(job("backup-1", running, noon.Add(-5*time.Minute)), forbid)},
			wantDone: []string{"RecordEvent JobAlreadyActive"}},
		{name: "a refused create fails the sync with its error; the status and history are still written",
			cj: plain, jobs: []*batchv1.Job{
				owned(job("old-1", failed, noon.Add(-20*time.Minute)), plain), owned(job("old-2", failed, noon.Add(-10*time.Minute)), plain)},
			fail:     CreateJob,
			wantDone: []string{"UpdateStatus active=0", "DeleteFinishedJob old-1"}, wantErr: "CreateJob " + due + ": refused"},
		{name: "a CronJob no longer in the cache is nothing to do"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
			if tc.cj != nil {
				inf.CronJobs.Replace([]*batchv1.CronJob{tc.cj})
			}
			inf.Jobs.Replace(tc.jobs)
			sink := synctest.Refusing(func(a Action) bool { return a.Type == tc.fail })
			cc := New(&client.Client{}, inf, nil, testingclock.NewFakeClock(t0), slog.New(slog.DiscardHandler))
			cc.sink = func(*batchv1.CronJob) framework.Sink[Action] { return sink }
			_, err := cc.sync(context.Background(), "default/backup")
			synctest.Check(t, err, tc.wantErr, sink, tc.wantDone)
		})
	}
}
