// Package job runs a Job's pods to completion:
//
//	job/pod event ─▶ queue(job) ─▶ Reconcile(job, its pods, now)
//	   finished?                        ─▶ ttlSecondsAfterFinished: delete the Job when it runs out
//	   suspended                        ─▶ delete active pods, condition Suspended (JobSuspended / JobResumed)
//	   failures > backoffLimit          ─▶ FailureTarget, delete active pods ─▶ Failed (BackoffLimitExceeded)
//	   active past activeDeadlineSeconds ─▶ the same with DeadlineExceeded
//	   succeeded ≥ completions          ─▶ SuccessCriteriaMet ─▶ Complete (+ completionTime)
//	   otherwise                        ─▶ active := min(parallelism, completions − succeeded)
//	   new pods after failures          ─▶ wait 10s·2^(failures since the last success − 1), ≤ 6m
//	   ─▶ status: active, ready, succeeded, failed, startTime
//
// Failures count failed pods (restartPolicy Never: a failed pod is
// replaced, and more failures than backoffLimit fail the Job); under
// OnFailure the kubelet restarts containers in place and their restarts
// reaching backoffLimit fail it, as in Kubernetes.
package job

import (
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/controller/framework"
)

// Condition reasons and messages, as in Kubernetes.
const (
	ReasonBackoffLimitExceeded = batchv1.JobReasonBackoffLimitExceeded
	ReasonDeadlineExceeded     = batchv1.JobReasonDeadlineExceeded
	ReasonCompletionsReached   = batchv1.JobReasonCompletionsReached
	msgBackoff                 = "Job has reached the specified backoff limit"
	msgDeadline                = "Job was active longer than specified deadline"
	msgCompletions             = "Reached expected number of succeeded pods"
	defaultBackoffLimit        = 6
)

// Plan is what one sync does.
type Plan struct {
	Create int
	Delete []*corev1.Pod
	// Status is the new status (compare with the old to decide a write).
	Status batchv1.JobStatus
	// DeleteJob says ttlSecondsAfterFinished ran out.
	DeleteJob    bool
	RequeueAfter time.Duration
}

// Finished returns the time the Job finished, if it did.
func Finished(st batchv1.JobStatus) (time.Time, bool) {
	for _, c := range st.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			if c.Type == batchv1.JobComplete && st.CompletionTime != nil {
				return st.CompletionTime.Time, true
			}
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

func hasCondition(st batchv1.JobStatus, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t && st.Conditions[i].Status == corev1.ConditionTrue {
			return &st.Conditions[i]
		}
	}
	return nil
}

// Reconcile plans one sync of job, given its pods.
func Reconcile(job *batchv1.Job, pods []*corev1.Pod, now time.Time) Plan {
	var plan Plan
	st := *job.Status.DeepCopy()
	if at, done := Finished(st); done {
		plan.Status = st
		if ttl := job.Spec.TTLSecondsAfterFinished; ttl != nil {
			expire := at.Add(time.Duration(*ttl) * time.Second)
			if !expire.After(now) {
				plan.DeleteJob = true
			} else {
				plan.RequeueAfter = expire.Sub(now)
			}
		}
		return plan
	}
	nowT := metav1.NewTime(now)
	suspended := job.Spec.Suspend != nil && *job.Spec.Suspend
	if c := conditionOf(st, batchv1.JobSuspended); suspended && (c == nil || c.Status != corev1.ConditionTrue) {
		setSuspended(&st, corev1.ConditionTrue, "JobSuspended", "Job suspended", now)
	} else if !suspended && c != nil && c.Status == corev1.ConditionTrue {
		// Resumed: activeDeadlineSeconds counts from now.
		setSuspended(&st, corev1.ConditionFalse, "JobResumed", "Job resumed", now)
		st.StartTime = nil
	}
	if st.StartTime == nil && !suspended {
		st.StartTime = &nowT
	}
	var active, succeededPods, failedPods []*corev1.Pod
	var restarts, ready int32
	for _, p := range pods {
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			succeededPods = append(succeededPods, p)
		case p.Status.Phase == corev1.PodFailed:
			failedPods = append(failedPods, p)
		case p.DeletionTimestamp != nil:
		default:
			active = append(active, p)
			if framework.IsPodReady(p) {
				ready++
			}
			if job.Spec.Template.Spec.RestartPolicy == corev1.RestartPolicyOnFailure {
				for _, cs := range p.Status.ContainerStatuses {
					restarts += cs.RestartCount
				}
			}
		}
	}
	// Counts never go down, even when finished pods are deleted.
	st.Succeeded = max(st.Succeeded, int32(len(succeededPods)))
	st.Failed = max(st.Failed, int32(len(failedPods)))
	st.Active = int32(len(active))
	st.Ready = &ready

	if suspended {
		// A suspended Job runs nothing; its pods go, its counts stay.
		plan.Delete = active
		plan.Status = st
		return plan
	}

	backoffLimit := int32(defaultBackoffLimit)
	if job.Spec.BackoffLimit != nil {
		backoffLimit = *job.Spec.BackoffLimit
	}
	failReason, failMsg := "", ""
	if c := hasCondition(st, batchv1.JobFailureTarget); c != nil {
		failReason, failMsg = c.Reason, c.Message
	} else if pastBackoffLimit(job, st.Failed, restarts, backoffLimit) {
		failReason, failMsg = ReasonBackoffLimitExceeded, msgBackoff
	} else if d := job.Spec.ActiveDeadlineSeconds; d != nil {
		deadline := st.StartTime.Add(time.Duration(*d) * time.Second)
		if !deadline.After(now) {
			failReason, failMsg = ReasonDeadlineExceeded, msgDeadline
		} else {
			plan.RequeueAfter = deadline.Sub(now)
		}
	}
	if failReason != "" {
		setCondition(&st, batchv1.JobFailureTarget, failReason, failMsg, now)
		plan.Delete = active
		if len(active) == 0 {
			setCondition(&st, batchv1.JobFailed, failReason, failMsg, now)
		}
		plan.Status = st
		return plan
	}

	parallelism := int32(1)
	if job.Spec.Parallelism != nil {
		parallelism = *job.Spec.Parallelism
	}
	var want int32
	complete := false
	if c := job.Spec.Completions; c != nil {
		want = min(parallelism, max(0, *c-st.Succeeded))
		complete = st.Succeeded >= *c
	} else {
		// Without completions the Job is done once any pod succeeded and
		// none is running.
		// the pods still running may finish, but none is added.
		want = parallelism
		if st.Succeeded > 0 {
			want = int32(len(active))
		}
		complete = st.Succeeded > 0 && len(active) == 0
	}
	if hasCondition(st, batchv1.JobSuccessCriteriaMet) != nil || complete {
		setCondition(&st, batchv1.JobSuccessCriteriaMet, ReasonCompletionsReached, msgCompletions, now)
		plan.Delete = active
		if len(active) == 0 {
			setCondition(&st, batchv1.JobComplete, ReasonCompletionsReached, msgCompletions, now)
			st.CompletionTime = &nowT
		}
		plan.Status = st
		return plan
	}
	if n := int32(len(active)); n < want {
		// After failures, new pods wait out the backoff; the Job is
		// synced again when it ends instead of being polled.
		failures, lastFailure := failuresSinceLastSuccess(succeededPods, failedPods)
		if wait := remainingBackoff(failures, lastFailure, now); wait > 0 {
			plan.RequeueAfter = earliest(plan.RequeueAfter, wait)
		} else {
			plan.Create = int(want - n)
		}
	} else if n > want {
		sort.Slice(active, func(i, j int) bool {
			return framework.DeletionLess(active[i], active[j], 0, 0)
		})
		plan.Delete = active[:n-want]
	}
	plan.Status = st
	return plan
}

// earliest returns the shorter of two requeue delays, where 0 means none.
func earliest(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// pastBackoffLimit applies Kubernetes' rule: more failed pods than the
// limit; or, under OnFailure, container restarts reaching it (any restart
// when the limit is 0).
func pastBackoffLimit(job *batchv1.Job, failed, restarts, limit int32) bool {
	if failed > limit {
		return true
	}
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	if limit == 0 {
		return restarts > 0
	}
	return restarts >= limit
}

func conditionOf(st batchv1.JobStatus, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// setSuspended sets the Suspended condition, which, unlike the others,
// goes back and forth.
func setSuspended(st *batchv1.JobStatus, s corev1.ConditionStatus, reason, msg string, now time.Time) {
	ts := metav1.NewTime(now)
	c := batchv1.JobCondition{Type: batchv1.JobSuspended, Status: s, Reason: reason, Message: msg, LastProbeTime: ts, LastTransitionTime: ts}
	if cur := conditionOf(*st, batchv1.JobSuspended); cur != nil {
		*cur = c
		return
	}
	st.Conditions = append(st.Conditions, c)
}

func setCondition(st *batchv1.JobStatus, t batchv1.JobConditionType, reason, msg string, now time.Time) {
	for _, c := range st.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return
		}
	}
	ts := metav1.NewTime(now)
	st.Conditions = append(st.Conditions, batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg,
		LastProbeTime: ts, LastTransitionTime: ts})
}
