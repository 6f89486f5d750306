// Package cronjob starts the Jobs of CronJobs on their schedule. See
// README.md for the flow.
package cronjob

import (
	"fmt"
	"slices"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"minik/controller/framework"
)

// ScheduledTimestampAnnotation records on each Job the schedule time it
// was started for, in the CronJob's time zone.
const ScheduledTimestampAnnotation = batchv1.CronJobScheduledTimestampAnnotation // batch.kubernetes.io/cronjob-scheduled-timestamp

// tooManyMissed is the count of missed start times above which the
// controller warns (it still starts only the latest), as upstream.
const tooManyMissed = 100

// nextSlack is added to the wait for the next schedule time, so the
// requeued sync sees that time as due (upstream adds 100ms too).
const nextSlack = 100 * time.Millisecond

// Event is an event the plan asks for.
type Event struct{ Type, Reason, Message string }

// ActionType says what an Action does.
type ActionType string

const (
	// RecordEvent records Event on the CronJob.
	RecordEvent ActionType = "RecordEvent"
	// DeleteReplacedJob deletes Job, an active one that policy Replace
	// replaces.
	DeleteReplacedJob ActionType = "DeleteReplacedJob"
	// CreateJob creates Job for the schedule time Scheduled.
	CreateJob ActionType = "CreateJob"
	// UpdateStatus writes Status, with the Job CreateJob made (if it did)
	// added to the active list and its time as lastScheduleTime.
	UpdateStatus ActionType = "UpdateStatus"
	// DeleteFinishedJob deletes Job, beyond the history limits.
	DeleteFinishedJob ActionType = "DeleteFinishedJob"
)

// Action is one write of a sync.
type Action struct {
	Type      ActionType
	Event     Event
	Job       *batchv1.Job
	Scheduled time.Time
	Status    batchv1.CronJobStatus
}

// String names the action by its type and target, for errors and tests.
func (a Action) String() string {
	switch a.Type {
	case RecordEvent:
		return fmt.Sprintf("%s %s", a.Type, a.Event.Reason)
	case UpdateStatus:
		return fmt.Sprintf("%s active=%d", a.Type, len(a.Status.Active))
	}
	return fmt.Sprintf("%s %s", a.Type, a.Job.Name)
}

// Output is one sync's writes, in the order the driver performs them:
// events, replaced Jobs deleted, the new Job, the status, finished Jobs
// deleted. RequeueAfter is the wait until the next schedule time (0:
// none, the CronJob is suspended or its schedule is unusable).
type Output = framework.Output[Action]

// decisions is what a sync decides, before Plan orders it as actions.
type decisions struct {
	ReplaceJobs []*batchv1.Job
	Create      *batchv1.Job
	// Scheduled is the schedule time Create is for.
	Scheduled    time.Time
	HistoryJobs  []*batchv1.Job
	Events       []Event
	Status       batchv1.CronJobStatus
	RequeueAfter time.Duration
}

// JobName is NAME-<scheduled time in minutes since the epoch>: one name
// per schedule time, so a second start for the same time is refused.
func JobName(cj *batchv1.CronJob, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, scheduled.Unix()/60)
}

// Schedule parses the CronJob's schedule in its time zone (standard five
// fields or a macro such as @hourly).
func Schedule(cj *batchv1.CronJob) (cron.Schedule, *time.Location, error) {
	loc := time.Local
	if tz := cj.Spec.TimeZone; tz != nil {
		l, err := time.LoadLocation(*tz)
		if err != nil {
			return nil, nil, fmt.Errorf("unknown time zone %s: %w", *tz, err)
		}
		loc = l
	}
	s, err := cron.ParseStandard(cj.Spec.Schedule)
	if err != nil {
		return nil, nil, err
	}
	if sc, ok := s.(*cron.SpecSchedule); ok && cj.Spec.TimeZone != nil {
		sc.Location = loc
	}
	return s, loc, nil
}

// MostRecent returns the latest schedule time at or before now that is
// not yet started (nil if none) and how many were missed, counting from
// the last schedule time (or creation), no earlier than
// startingDeadlineSeconds before now. Beyond a few missed times the count
// is estimated from the interval between two times, as upstream does.
func MostRecent(cj *batchv1.CronJob, sched cron.Schedule, now time.Time) (*time.Time, int64, error) {
	earliest := cj.CreationTimestamp.Time
	if t := cj.Status.LastScheduleTime; t != nil {
		earliest = t.Time
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil {
		if deadline := now.Add(-time.Duration(*d) * time.Second); deadline.After(earliest) {
			earliest = deadline
		}
	}
	t1 := sched.Next(earliest)
	if t1.IsZero() || now.Before(t1) {
		return nil, 0, nil
	}
	t2 := sched.Next(t1)
	if now.Before(t2) {
		return &t1, 1, nil
	}
	interval := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if interval < 1 {
		return nil, 0, fmt.Errorf("time difference between two schedules is less than 1 second")
	}
	missed := int64(now.Sub(t1).Seconds())/interval + 1
	// Jump close to now, then walk the few remaining times exactly
	// (irregular schedules such as "0 9 * * 1-5" drift from the estimate).
	recent := t1
	if missed > 2 {
		recent = t1.Add(time.Duration((missed-2)*interval) * time.Second)
		if !recent.Before(now) {
			recent = t1
		}
		// Snap onto the schedule (back to t1 if the estimate overshot).
		if n := sched.Next(recent.Add(-time.Second)); !n.IsZero() && !n.After(now) {
			recent = n
		} else {
			recent = t1
		}
	}
	for t := sched.Next(recent); !t.IsZero() && !t.After(now); t = sched.Next(t) {
		recent = t
	}
	return &recent, missed, nil
}

func finished(j *batchv1.Job) (batchv1.JobConditionType, bool) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type, true
		}
	}
	return "", false
}

// Plan plans one sync of cj, given the Jobs it controls. The status is
// written if it changes, or a Job is to be created (which adds to it).
func Plan(cj *batchv1.CronJob, jobs []*batchv1.Job, now time.Time) Output {
	d := decide(cj, jobs, now)
	out := Output{RequeueAfter: d.RequeueAfter}
	for _, ev := range d.Events {
		out.Actions = append(out.Actions, Action{Type: RecordEvent, Event: ev})
	}
	for _, j := range d.ReplaceJobs {
		out.Actions = append(out.Actions, Action{Type: DeleteReplacedJob, Job: j})
	}
	if d.Create != nil {
		out.Actions = append(out.Actions, Action{Type: CreateJob, Job: d.Create, Scheduled: d.Scheduled})
	}
	if d.Create != nil || !apiequality.Semantic.DeepEqual(d.Status, cj.Status) {
		out.Actions = append(out.Actions, Action{Type: UpdateStatus, Status: d.Status})
	}
	for _, j := range d.HistoryJobs {
		out.Actions = append(out.Actions, Action{Type: DeleteFinishedJob, Job: j})
	}
	return out
}

func decide(cj *batchv1.CronJob, jobs []*batchv1.Job, now time.Time) decisions {
	var plan decisions
	st := cj.Status.DeepCopy()
	byName := map[string]*batchv1.Job{}
	for _, j := range jobs {
		byName[j.Name] = j
	}
	// Active list: drop Jobs that are gone or finished, add running ones
	// it lacks; note the newest success.
	var active []corev1.ObjectReference
	for _, ref := range st.Active {
		j, ok := byName[ref.Name]
		if !ok || j.UID != ref.UID && ref.UID != "" {
			continue
		}
		if cond, done := finished(j); done {
			plan.Events = append(plan.Events, Event{corev1.EventTypeNormal, "SawCompletedJob",
				fmt.Sprintf("Saw completed job: %s, condition: %v", j.Name, cond)})
			continue
		}
		active = append(active, ref)
	}
	for _, j := range jobs {
		_, done := finished(j)
		if !done && j.DeletionTimestamp == nil && !slices.ContainsFunc(active, func(r corev1.ObjectReference) bool { return r.Name == j.Name }) {
			active = append(active, jobRef(j))
		}
		if cond, _ := finished(j); cond == batchv1.JobComplete && j.Status.CompletionTime != nil &&
			(st.LastSuccessfulTime == nil || j.Status.CompletionTime.After(st.LastSuccessfulTime.Time)) {
			st.LastSuccessfulTime = j.Status.CompletionTime.DeepCopy()
		}
	}
	st.Active = active
	plan.Status = *st
	plan.HistoryJobs = history(cj, jobs)

	if cj.DeletionTimestamp != nil {
		return plan
	}
	sched, loc, err := Schedule(cj)
	if err != nil {
		reason := "UnparseableSchedule"
		msg := fmt.Sprintf("unparseable schedule: %q : %s", cj.Spec.Schedule, err)
		if cj.Spec.TimeZone != nil {
			if _, tzErr := time.LoadLocation(*cj.Spec.TimeZone); tzErr != nil {
				reason, msg = "UnknownTimeZone", fmt.Sprintf("invalid timeZone: %q: %s", *cj.Spec.TimeZone, tzErr)
			}
		}
		plan.Events = append(plan.Events, Event{corev1.EventTypeWarning, reason, msg})
		return plan
	}
	if ptr.Deref(cj.Spec.Suspend, false) {
		return plan
	}
	if next := sched.Next(now); !next.IsZero() {
		plan.RequeueAfter = next.Sub(now) + nextSlack
	}
	scheduled, missed, err := MostRecent(cj, sched, now)
	if err != nil {
		plan.Events = append(plan.Events, Event{corev1.EventTypeWarning, "InvalidSchedule", fmt.Sprintf("invalid schedule: %s : %s", cj.Spec.Schedule, err)})
		return plan
	}
	if scheduled == nil {
		return plan
	}
	if missed > tooManyMissed {
		plan.Events = append(plan.Events, Event{corev1.EventTypeWarning, "TooManyMissedTimes",
			fmt.Sprintf("too many missed start times: %d. Set or decrease .spec.startingDeadlineSeconds or check clock skew", missed)})
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && scheduled.Add(time.Duration(*d)*time.Second).Before(now) {
		plan.Events = append(plan.Events, Event{corev1.EventTypeWarning, "MissSchedule",
			fmt.Sprintf("Missed scheduled time to start a job: %s", scheduled.UTC().Format(time.RFC1123Z))})
		return plan
	}
	name := JobName(cj, *scheduled)
	if slices.ContainsFunc(st.Active, func(r corev1.ObjectReference) bool { return r.Name == name }) ||
		st.LastScheduleTime != nil && st.LastScheduleTime.Time.Equal(*scheduled) {
		return plan
	}
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.ForbidConcurrent:
		if len(st.Active) > 0 {
			plan.Events = append(plan.Events, Event{corev1.EventTypeNormal, "JobAlreadyActive",
				"Not starting job because prior execution is running and concurrency policy is Forbid"})
			return plan
		}
	case batchv1.ReplaceConcurrent:
		for _, ref := range st.Active {
			if j, ok := byName[ref.Name]; ok {
				plan.ReplaceJobs = append(plan.ReplaceJobs, j)
			}
		}
		plan.Status.Active = nil
	}
	plan.Create = NewJob(cj, *scheduled, loc)
	plan.Scheduled = *scheduled
	return plan
}

// NewJob returns the Job of cj for the schedule time scheduled.
func NewJob(cj *batchv1.CronJob, scheduled time.Time, loc *time.Location) *batchv1.Job {
	t := cj.Spec.JobTemplate.DeepCopy()
	annotations := map[string]string{}
	for k, v := range t.Annotations {
		annotations[k] = v
	}
	annotations[ScheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: JobName(cj, scheduled), Namespace: cj.Namespace, Labels: t.Labels,
			Annotations: annotations, CreationTimestamp: metav1.Time{Time: scheduled},
			OwnerReferences: []metav1.OwnerReference{framework.ControllerRef(cj, "batch/v1", "CronJob")}},
		Spec: t.Spec,
	}
}

func jobRef(j *batchv1.Job) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: j.Namespace, Name: j.Name,
		UID: j.UID, ResourceVersion: j.ResourceVersion}
}

// history returns the finished Jobs beyond the success and failure
// history limits, oldest first.
func history(cj *batchv1.CronJob, jobs []*batchv1.Job) []*batchv1.Job {
	var ok, failed []*batchv1.Job
	for _, j := range jobs {
		if j.DeletionTimestamp != nil {
			continue
		}
		switch cond, _ := finished(j); cond {
		case batchv1.JobComplete:
			ok = append(ok, j)
		case batchv1.JobFailed:
			failed = append(failed, j)
		}
	}
	var out []*batchv1.Job
	for _, g := range []struct {
		jobs  []*batchv1.Job
		limit *int32
	}{{ok, cj.Spec.SuccessfulJobsHistoryLimit}, {failed, cj.Spec.FailedJobsHistoryLimit}} {
		if g.limit == nil || len(g.jobs) <= int(*g.limit) {
			continue
		}
		slices.SortFunc(g.jobs, func(a, b *batchv1.Job) int {
			return startTime(a).Compare(startTime(b))
		})
		out = append(out, g.jobs[:len(g.jobs)-int(*g.limit)]...)
	}
	return out
}

func startTime(j *batchv1.Job) time.Time {
	if j.Status.StartTime != nil {
		return j.Status.StartTime.Time
	}
	return j.CreationTimestamp.Time
}
