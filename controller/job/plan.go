// Package job runs a Job's pods to completion:
//
//	job/pod event ─▶ queue(job) ─▶ Plan(job, its pods and the namespace's orphans, now)
//	   claim (unless finished)          ─▶ AdoptPod: orphans the selector matches; ReleasePod: own pods that stopped matching
//	   finished?                        ─▶ ttlSecondsAfterFinished: delete the Job when it runs out
//	   suspended                        ─▶ delete active pods, condition Suspended (JobSuspended / JobResumed)
//	   a FailJob rule of podFailurePolicy matches a failed pod ─▶ FailureTarget, delete active pods ─▶ Failed (PodFailurePolicy)
//	   failures > backoffLimit          ─▶ the same with BackoffLimitExceeded
//	   active past activeDeadlineSeconds ─▶ the same with DeadlineExceeded
//	   failed indexes (backoffLimitPerIndex) ─▶ the same with MaxFailedIndexesExceeded / FailedIndexes
//	   a successPolicy rule met (Indexed) ─▶ SuccessCriteriaMet (SuccessPolicy), delete active pods ─▶ Complete
//	   otherwise                        ─▶ active := min(parallelism, completions − succeeded)
//	                                       (Indexed: the lowest pending indexes, one pod each)
//	   new pods after failures          ─▶ wait 10s·2^(failures since the last success − 1), ≤ 6m
//	                                       (backoffLimitPerIndex: the failures of that index)
//	   succeeded ≥ completions          ─▶ SuccessCriteriaMet ─▶ Complete (+ completionTime)
//	   ─▶ status: active, ready, terminating, succeeded, failed, startTime,
//	      completedIndexes ("1,3-5"), failedIndexes
//	─▶ Output{Actions}: adoptions and releases, CreatePods or DeletePods (one batch, sent at once), then UpdateStatus; or DeleteJob
//	   (a Job that starts failing writes its status first and deletes its pods only once it is written)
//	─▶ driver: expectations raised, then every action through the sink (apiSink; a FakeSink in
//	   tests), a failure not ending the others: the status written lacks the pods not created
//
// Failures count failed pods (restartPolicy Never: a failed pod is
// replaced, and more failures than backoffLimit fail the Job); under
// OnFailure the kubelet restarts containers in place and their restarts
// reaching backoffLimit fail it, as in Kubernetes. A pod failure policy
// (restartPolicy Never only) sorts failures by exit codes or pod
// conditions: FailJob fails the Job at once, Ignore does not count the
// failure, Count counts it, FailIndex fails the pod's index. Failed and
// Complete wait until no pod of the Job is left running or terminating.
//
// An Indexed Job's pod carries its index (annotation and label
// batch.kubernetes.io/job-completion-index, env JOB_COMPLETION_INDEX,
// hostname <job>-<index>); an index is complete once one of its pods
// succeeded. With backoffLimitPerIndex each pod also carries the failures
// of its index so far (batch.kubernetes.io/job-index-failure-count), and
// an index that fails more often than the limit is failed for good. A
// successPolicy ends an Indexed Job early, as succeeded, once the indexes
// of one of its rules completed (all of succeededIndexes, or
// succeededCount of them, or of any).
package job

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

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
	msgMaxFailedIndexes        = "Job has exceeded the specified maximal number of failed indexes"
	msgFailedIndexes           = "Job has failed indexes"
	defaultBackoffLimit        = 6
)

// ActionType says what an Action does.
type ActionType string

const (
	// CreatePods creates the pods of Create, all at once.
	CreatePods ActionType = "CreatePods"
	// DeletePods deletes the pods of Delete, all at once.
	DeletePods ActionType = "DeletePods"
	// UpdateStatus writes Status, less the pods whose creation failed.
	UpdateStatus ActionType = "UpdateStatus"
	// DeleteJob deletes the Job (foreground): its
	// ttlSecondsAfterFinished ran out.
	DeleteJob ActionType = "DeleteJob"
	// AdoptPod makes the Job the controller of Pod, an orphan its
	// selector matches.
	AdoptPod ActionType = "AdoptPod"
	// ReleasePod removes the Job from the owners of Pod, whose labels no
	// longer match its selector.
	ReleasePod ActionType = "ReleasePod"
)

// Action is one write of a sync of a Job. The pods of a sync are
// created (or deleted) as one batch, as in Kubernetes.
type Action struct {
	Type   ActionType
	Create []PodToCreate
	Delete []*corev1.Pod
	Status *batchv1.JobStatus
	// Pod is the pod AdoptPod or ReleasePod changes.
	Pod *corev1.Pod
	// AfterStatus makes DeletePods wait for the UpdateStatus before it:
	// the pods a failing Job terminates count as failed, and once they
	// are gone only the status written first remembers them (upstream
	// keeps them with its tracking finalizer until it is written).
	AfterStatus bool
}

func (a Action) String() string {
	var b strings.Builder
	b.WriteString(string(a.Type))
	switch a.Type {
	case AdoptPod, ReleasePod:
		b.WriteString(" " + a.Pod.Name)
	case CreatePods:
		fmt.Fprintf(&b, " %d", len(a.Create))
		if ixs := indexesToCreate(a.Create); len(ixs) > 0 {
			fmt.Fprintf(&b, " indexes %v", ixs)
		}
	case DeletePods:
		for _, p := range a.Delete {
			b.WriteString(" " + p.Name)
		}
		if a.AfterStatus {
			b.WriteString(" (after the status)")
		}
	case UpdateStatus:
		st := a.Status
		fmt.Fprintf(&b, " active=%d succeeded=%d failed=%d", st.Active, st.Succeeded, st.Failed)
		for _, c := range st.Conditions {
			if c.Status == corev1.ConditionTrue {
				b.WriteString(" " + string(c.Type))
			}
		}
	}
	return b.String()
}

func indexesToCreate(specs []PodToCreate) []int {
	var out []int
	for _, spec := range specs {
		if spec.Index != NoIndex {
			out = append(out, spec.Index)
		}
	}
	return out
}

// Output is what one sync does: the pods to create or delete, then the
// status; or the Job's deletion.
type Output = framework.Output[Action]

// decision is a sync's outcome before it becomes actions.
type decision struct {
	Create []PodToCreate
	Delete []*corev1.Pod
	// Status is the new status.
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

// maxPodChangesPerSync caps the pods one sync creates or deletes, as in
// Kubernetes.
const maxPodChangesPerSync = 500

// observed is what a Job's pods say, sorted by what they mean for it.
type observed struct {
	// active pods run or wait to; terminating ones are being deleted.
	active      []*corev1.Pod
	terminating []*corev1.Pod
	// succeeded and failed are the finished pods (of an Indexed Job, only
	// those with a valid index).
	succeeded, failed []*corev1.Pod
	// countedFailures is the failures that count towards backoffLimit.
	countedFailures int32
	// restarts adds up the container restarts of unfinished pods.
	restarts int32
	// completed is an Indexed Job's completed indexes.
	completed intervals
	// failedIndexes is, with backoffLimitPerIndex, the indexes out of
	// retries; nil otherwise.
	failedIndexes *intervals
}

// observe sorts pods and derives the counts of job from them and from its
// status, which keeps counts of pods that are gone.
func observe(job *batchv1.Job, pods []*corev1.Pod) observed {
	var o observed
	indexed := isIndexed(job)
	completions := int(ptr.Deref(job.Spec.Completions, 0))
	validIndex := func(p *corev1.Pod) bool {
		ix := CompletionIndex(p)
		return ix != NoIndex && ix < completions
	}
	var succeededIndexes, failedIndexes []int
	for _, p := range pods {
		switch {
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
			if indexed && !validIndex(p) {
				continue
			}
			if p.Status.Phase == corev1.PodSucceeded {
				o.succeeded = append(o.succeeded, p)
				succeededIndexes = append(succeededIndexes, CompletionIndex(p))
				continue
			}
			o.failed = append(o.failed, p)
			match := matchPodFailurePolicy(job, p)
			if match.countsAsFailure() {
				o.countedFailures++
			}
			if hasBackoffLimitPerIndex(job) && indexOutOfRetries(job, p, match) {
				failedIndexes = append(failedIndexes, CompletionIndex(p))
			}
		case p.DeletionTimestamp != nil:
			o.terminating = append(o.terminating, p)
		default:
			o.active = append(o.active, p)
		}
		if p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodPending {
			for _, statuses := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
				for _, cs := range statuses {
					o.restarts += cs.RestartCount
				}
			}
		}
	}
	if indexed {
		o.completed = parseIntervals(job.Status.CompletedIndexes, completions).withIndexes(succeededIndexes)
	}
	if hasBackoffLimitPerIndex(job) {
		failed := parseIntervals(ptr.Deref(job.Status.FailedIndexes, ""), completions).withIndexes(failedIndexes)
		o.failedIndexes = &failed
	}
	return o
}

// indexOutOfRetries reports whether failed pod p fails its index for
// good: a FailIndex rule matched it, or its counted failure was one more
// than backoffLimitPerIndex allows.
func indexOutOfRetries(job *batchv1.Job, p *corev1.Pod, match policyMatch) bool {
	if match.action == batchv1.PodFailurePolicyActionFailIndex {
		return true
	}
	counted, _ := indexFailures(p)
	return match.countsAsFailure() && counted >= *job.Spec.BackoffLimitPerIndex
}

// onlyReplaceFailedPods says whether a pod being deleted is replaced only
// once it has failed (podReplacementPolicy Failed, implied by a pod
// failure policy) rather than as soon as it terminates.
func onlyReplaceFailedPods(job *batchv1.Job) bool {
	return ptr.Deref(job.Spec.PodReplacementPolicy, "") == batchv1.Failed || job.Spec.PodFailurePolicy != nil
}

// Plan plans one sync of job, given its pods and its namespace's orphans:
// adoptions and releases first, then the pods to create or delete and the
// status; or the Job's deletion.
func Plan(job *batchv1.Job, pods []*corev1.Pod, now time.Time) Output {
	owned, claims := claim(job, pods)
	d := decide(job, owned, now)
	out := Output{RequeueAfter: d.RequeueAfter, Actions: claims}
	if d.DeleteJob {
		out.Actions = append(out.Actions, Action{Type: DeleteJob})
		return out
	}
	if len(d.Create) > 0 {
		out.Actions = append(out.Actions, Action{Type: CreatePods, Create: d.Create})
	}
	// A Job that starts failing now records it, with the pods it is about
	// to terminate counted as failed, before it terminates them.
	failingNow := hasCondition(job.Status, batchv1.JobFailureTarget) == nil && hasCondition(d.Status, batchv1.JobFailureTarget) != nil
	if len(d.Delete) > 0 && !failingNow {
		out.Actions = append(out.Actions, Action{Type: DeletePods, Delete: d.Delete})
	}
	// Creates that fail lower status.active again, perhaps to the status
	// the Job has: the status goes with every create, and the driver
	// writes it only if it still differs.
	if len(d.Create) > 0 || !apiequality.Semantic.DeepEqual(job.Status, d.Status) {
		out.Actions = append(out.Actions, Action{Type: UpdateStatus, Status: &d.Status})
	}
	if len(d.Delete) > 0 && failingNow {
		out.Actions = append(out.Actions, Action{Type: DeletePods, Delete: d.Delete, AfterStatus: true})
	}
	return out
}

// claim sorts pods (the Job's own and its namespace's orphans) as
// framework.ClaimPods does: the pods the Job controls, with the orphans
// its selector matches adopted and its own that stopped matching
// released. A finished Job adopts and releases nothing, as in Kubernetes,
// and keeps the pods it controls.
func claim(job *batchv1.Job, pods []*corev1.Pod) ([]*corev1.Pod, []Action) {
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if _, finished := Finished(job.Status); finished || err != nil {
		var owned []*corev1.Pod
		for _, p := range pods {
			if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.UID == job.UID {
				owned = append(owned, p)
			}
		}
		return owned, nil
	}
	c := framework.ClaimPods(job, sel, pods)
	var actions []Action
	for _, p := range c.Adopt {
		actions = append(actions, Action{Type: AdoptPod, Pod: p})
	}
	for _, p := range c.Release {
		actions = append(actions, Action{Type: ReleasePod, Pod: p})
	}
	return c.Owned, actions
}

// decide works out one sync of job, given its pods.
func decide(job *batchv1.Job, pods []*corev1.Pod, now time.Time) decision {
	var plan decision
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

	o := observe(job, pods)
	// Counts never go down, even when finished pods are deleted.
	if isIndexed(job) {
		st.Succeeded = int32(o.completed.total())
		st.CompletedIndexes = o.completed.String()
	} else {
		st.Succeeded = max(st.Succeeded, int32(len(o.succeeded)))
	}
	// Once the Job succeeded, the pods it terminates do not fail it or
	// its indexes, as in Kubernetes.
	if hasCondition(job.Status, batchv1.JobSuccessCriteriaMet) == nil {
		st.Failed = max(st.Failed, o.countedFailures)
		if o.failedIndexes != nil {
			st.FailedIndexes = ptr.To(o.failedIndexes.String())
		}
	}

	active := o.active
	switch {
	case hasCondition(st, batchv1.JobSuccessCriteriaMet) != nil:
		// Succeeded already: only the pods still running stand between
		// the Job and Complete.
		plan.Delete = active
		active = nil
	case suspended:
		// A suspended Job runs nothing; its pods go, its counts stay.
		plan.Delete = active
		active = nil
	default:
		if reason, msg, requeue := failure(job, st, o, now); reason != "" {
			setCondition(&st, batchv1.JobFailureTarget, reason, msg, now)
			plan.Delete = active
			// As in Kubernetes, the pods a failing Job terminates count
			// as failed, from now on.
			st.Failed = max(st.Failed, o.countedFailures+int32(len(o.terminating)+len(active)))
			active = nil
		} else if msg, met := matchSuccessPolicy(job, o.completed); met {
			// The success policy is met: the pods still running are not
			// needed any more.
			setCondition(&st, batchv1.JobSuccessCriteriaMet, batchv1.JobReasonSuccessPolicy, msg, now)
			plan.Delete = active
			active = nil
		} else {
			plan.RequeueAfter = requeue
			manage(job, o, st.Succeeded, now, &plan)
			active = without(active, plan.Delete)
		}
	}

	terminating := int32(len(o.terminating) + len(plan.Delete))
	running := len(active) + len(plan.Create)
	if !suspended && hasCondition(st, batchv1.JobFailureTarget) == nil && succeeded(job, st, running) {
		setCondition(&st, batchv1.JobSuccessCriteriaMet, ReasonCompletionsReached, msgCompletions, now)
	}
	// The terminal condition waits until no pod of the Job is left
	// running or terminating, as in Kubernetes since 1.31.
	if terminating == 0 && running == 0 {
		if c := hasCondition(st, batchv1.JobFailureTarget); c != nil {
			setCondition(&st, batchv1.JobFailed, c.Reason, c.Message, now)
		} else if c := hasCondition(st, batchv1.JobSuccessCriteriaMet); c != nil {
			setCondition(&st, batchv1.JobComplete, c.Reason, c.Message, now)
			st.CompletionTime = &nowT
		}
	}
	var ready int32
	for _, p := range active {
		if framework.IsPodReady(p) {
			ready++
		}
	}
	st.Active = int32(running)
	st.Ready = &ready
	st.Terminating = &terminating
	plan.Status = st
	return plan
}

// failure returns why job fails now (a Condition reason and message), or
// when to look again for the active deadline.
func failure(job *batchv1.Job, st batchv1.JobStatus, o observed, now time.Time) (reason, msg string, requeue time.Duration) {
	if c := hasCondition(st, batchv1.JobFailureTarget); c != nil {
		return c.Reason, c.Message, 0
	}
	if msg := failJobMessage(job, o.failed); msg != "" {
		return batchv1.JobReasonPodFailurePolicy, msg, 0
	}
	backoffLimit := ptr.Deref(job.Spec.BackoffLimit, defaultBackoffLimit)
	if pastBackoffLimit(job, st.Failed, o.restarts, backoffLimit) {
		return ReasonBackoffLimitExceeded, msgBackoff, 0
	}
	if d := job.Spec.ActiveDeadlineSeconds; d != nil {
		deadline := st.StartTime.Add(time.Duration(*d) * time.Second)
		if !deadline.After(now) {
			return ReasonDeadlineExceeded, msgDeadline, 0
		}
		requeue = deadline.Sub(now)
	}
	if o.failedIndexes != nil {
		failed := o.failedIndexes.total()
		if m := job.Spec.MaxFailedIndexes; m != nil && failed > int(*m) {
			return batchv1.JobReasonMaxFailedIndexesExceeded, msgMaxFailedIndexes, 0
		}
		if failed > 0 && failed+o.completed.total() >= int(ptr.Deref(job.Spec.Completions, 0)) {
			return batchv1.JobReasonFailedIndexes, msgFailedIndexes, 0
		}
	}
	return "", "", requeue
}

// failJobMessage returns the message of the first failed pod (by finish
// time) that a FailJob rule of job's pod failure policy matches, or "".
func failJobMessage(job *batchv1.Job, failed []*corev1.Pod) string {
	if job.Spec.PodFailurePolicy == nil {
		return ""
	}
	byFinish := slices.Clone(failed)
	sort.SliceStable(byFinish, func(i, j int) bool {
		ti, tj := FinishedAt(byFinish[i]), FinishedAt(byFinish[j])
		return ti.Before(tj) || ti.Equal(tj) && byFinish[i].Name < byFinish[j].Name
	})
	for _, p := range byFinish {
		if m := matchPodFailurePolicy(job, p); m.action == batchv1.PodFailurePolicyActionFailJob {
			return m.message
		}
	}
	return ""
}

// succeeded reports whether job reached its completions with no pod left
// running (active counts the pods about to be created).
func succeeded(job *batchv1.Job, st batchv1.JobStatus, active int) bool {
	if active > 0 {
		return false
	}
	if c := job.Spec.Completions; c != nil {
		return st.Succeeded >= *c
	}
	// Without completions the Job is done once any pod succeeded and none
	// is running.
	return st.Succeeded > 0
}

// manage plans the pods of a running Job: first the deletion of pods it
// has too many of; only when there are none, the creation of those it
// lacks, once the failure backoff allows.
func manage(job *batchv1.Job, o observed, succeeded int32, now time.Time, plan *decision) {
	parallelism := ptr.Deref(job.Spec.Parallelism, 1)
	var want int32
	switch c := job.Spec.Completions; {
	case c != nil:
		want = min(parallelism, max(0, *c-succeeded))
	case succeeded > 0:
		// Without completions, once a pod succeeded the pods still
		// running may finish, but none is added.
		want = int32(len(o.active))
	default:
		want = parallelism
	}

	remove, keep := indexedRemovals(job, o.active)
	if extra := len(o.active) - int(want) - len(remove); extra > 0 {
		sort.Slice(keep, func(i, j int) bool { return framework.DeletionLess(keep[i], keep[j], 0, 0) })
		remove = append(remove, keep[:extra]...)
	}
	if len(remove) > 0 {
		plan.Delete = remove[:min(len(remove), maxPodChangesPerSync)]
		return
	}

	missing := int(want) - len(o.active)
	if onlyReplaceFailedPods(job) {
		// Pods being deleted are replaced only once they failed.
		missing -= len(o.terminating)
	}
	missing = min(missing, maxPodChangesPerSync)
	if missing <= 0 {
		return
	}
	var indexes []int
	if isIndexed(job) {
		taken := o.completed.withIndexes(indexesOf(o.active))
		if onlyReplaceFailedPods(job) {
			taken = taken.withIndexes(indexesOf(o.terminating))
		}
		if o.failedIndexes != nil {
			taken = taken.merge(*o.failedIndexes)
		}
		indexes = firstPendingIndexes(missing, int(*job.Spec.Completions), taken)
	} else {
		for range missing {
			indexes = append(indexes, NoIndex)
		}
	}
	if hasBackoffLimitPerIndex(job) {
		// Each index backs off on its own failures.
		var wait time.Duration
		plan.Create, wait = perIndexCreates(job, o.failed, indexes, now)
		plan.RequeueAfter = earliest(plan.RequeueAfter, wait)
		return
	}
	// New pods wait out the backoff of the failures since the last
	// success; the Job is synced again when it ends instead of polled.
	failures, lastFailure := failuresSinceLastSuccess(o.succeeded, o.failed)
	if wait := remainingBackoff(failures, lastFailure, now); wait > 0 {
		plan.RequeueAfter = earliest(plan.RequeueAfter, wait)
		return
	}
	for _, ix := range indexes {
		plan.Create = append(plan.Create, PodToCreate{Index: ix})
	}
}

// indexedRemovals splits an Indexed Job's active pods into those to delete
// (without a valid index, or extra pods of an index, the best one kept)
// and those to keep. Other Jobs keep all.
func indexedRemovals(job *batchv1.Job, active []*corev1.Pod) (remove, keep []*corev1.Pod) {
	if !isIndexed(job) {
		return nil, append([]*corev1.Pod(nil), active...)
	}
	completions := int(*job.Spec.Completions)
	byIndex := map[int][]*corev1.Pod{}
	for _, p := range active {
		ix := CompletionIndex(p)
		if ix == NoIndex || ix >= completions {
			remove = append(remove, p)
			continue
		}
		byIndex[ix] = append(byIndex[ix], p)
	}
	for _, ix := range slices.Sorted(maps.Keys(byIndex)) {
		ps := byIndex[ix]
		sort.Slice(ps, func(i, j int) bool { return framework.DeletionLess(ps[i], ps[j], 0, 0) })
		remove = append(remove, ps[:len(ps)-1]...)
		keep = append(keep, ps[len(ps)-1])
	}
	return remove, keep
}

// without returns pods less those in gone.
func without(pods, gone []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if !slices.Contains(gone, p) {
			out = append(out, p)
		}
	}
	return out
}

// indexesOf returns the completion indexes of pods that have one.
func indexesOf(pods []*corev1.Pod) []int {
	var out []int
	for _, p := range pods {
		if ix := CompletionIndex(p); ix != NoIndex {
			out = append(out, ix)
		}
	}
	return out
}

// perIndexCreates returns the pods to create for indexes, each seeded with
// its index's failure counts, leaving out the indexes still backing off
// from their last failure; and when the first of those may start.
func perIndexCreates(job *batchv1.Job, failed []*corev1.Pod, indexes []int, now time.Time) ([]PodToCreate, time.Duration) {
	replaced := lastFailedPerIndex(failed)
	var out []PodToCreate
	var wait time.Duration
	for _, ix := range indexes {
		spec := PodToCreate{Index: ix}
		if p := replaced[ix]; p != nil {
			spec.IndexFailures, spec.IndexIgnoredFailures = indexFailures(p)
			if matchPodFailurePolicy(job, p).countsAsFailure() {
				spec.IndexFailures++
			} else {
				spec.IndexIgnoredFailures++
			}
			if w := remainingBackoff(int(spec.IndexFailures+spec.IndexIgnoredFailures), FinishedAt(p), now); w > 0 {
				wait = earliest(wait, w)
				continue
			}
		}
		out = append(out, spec)
	}
	return out, wait
}

// lastFailedPerIndex returns, per index, the failed pod a new one
// replaces: the one with the most failures of its index before it, and
// of those the last to finish.
func lastFailedPerIndex(failed []*corev1.Pod) map[int]*corev1.Pod {
	out := map[int]*corev1.Pod{}
	for _, p := range failed {
		ix := CompletionIndex(p)
		cur, ok := out[ix]
		if !ok {
			out[ix] = p
			continue
		}
		pc, pi := indexFailures(p)
		cc, ci := indexFailures(cur)
		if pc+pi > cc+ci || pc+pi == cc+ci && !FinishedAt(p).Before(FinishedAt(cur)) {
			out[ix] = p
		}
	}
	return out
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
