package printers

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Integer cells are int64, as upstream's, so JSON clients see numbers.

// replicas reads an optional replica count; unset prints as 0, as in
// upstream, where the v1 nil converts to an internal 0.
func replicas(n *int32) int64 {
	if n == nil {
		return 0
	}
	return int64(*n)
}

// replicationControllerRow prints NAME DESIRED CURRENT READY AGE CONTAINERS IMAGES SELECTOR.
func replicationControllerRow(rc *corev1.ReplicationController, now time.Time) metav1.TableRow {
	var containers []corev1.Container
	if rc.Spec.Template != nil {
		containers = rc.Spec.Template.Spec.Containers
	}
	names, images := containerCells(containers)
	return row(
		rc.Name,
		replicas(rc.Spec.Replicas),
		int64(rc.Status.Replicas),
		int64(rc.Status.ReadyReplicas),
		since(rc.CreationTimestamp.Time, now),
		names, images, labels.FormatLabels(rc.Spec.Selector),
	)
}

// replicaSetRow prints NAME DESIRED CURRENT READY AGE CONTAINERS IMAGES SELECTOR.
func replicaSetRow(rs *appsv1.ReplicaSet, now time.Time) metav1.TableRow {
	names, images := containerCells(rs.Spec.Template.Spec.Containers)
	return row(
		rs.Name,
		replicas(rs.Spec.Replicas),
		int64(rs.Status.Replicas),
		int64(rs.Status.ReadyReplicas),
		since(rs.CreationTimestamp.Time, now),
		names, images, metav1.FormatLabelSelector(rs.Spec.Selector),
	)
}

// deploymentRow prints NAME READY UP-TO-DATE AVAILABLE AGE CONTAINERS IMAGES SELECTOR.
func deploymentRow(d *appsv1.Deployment, now time.Time) metav1.TableRow {
	// Upstream prints the selector differently here than for ReplicaSets:
	// an empty selector is "", not "<none>".
	selector := "<invalid>"
	if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
		selector = s.String()
	}
	names, images := containerCells(d.Spec.Template.Spec.Containers)
	return row(
		d.Name,
		fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, replicas(d.Spec.Replicas)),
		int64(d.Status.UpdatedReplicas),
		int64(d.Status.AvailableReplicas),
		since(d.CreationTimestamp.Time, now),
		names, images, selector,
	)
}

// daemonSetRow prints NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE
// NODE-SELECTOR AGE CONTAINERS IMAGES SELECTOR.
func daemonSetRow(ds *appsv1.DaemonSet, now time.Time) metav1.TableRow {
	names, images := containerCells(ds.Spec.Template.Spec.Containers)
	return row(
		ds.Name,
		int64(ds.Status.DesiredNumberScheduled),
		int64(ds.Status.CurrentNumberScheduled),
		int64(ds.Status.NumberReady),
		int64(ds.Status.UpdatedNumberScheduled),
		int64(ds.Status.NumberAvailable),
		labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
		since(ds.CreationTimestamp.Time, now),
		names, images, metav1.FormatLabelSelector(ds.Spec.Selector),
	)
}

// jobRow prints NAME STATUS COMPLETIONS DURATION AGE CONTAINERS IMAGES SELECTOR.
func jobRow(job *batchv1.Job, now time.Time) metav1.TableRow {
	names, images := containerCells(job.Spec.Template.Spec.Containers)
	return row(
		job.Name,
		jobStatus(job),
		jobCompletions(job),
		jobDuration(job, now),
		since(job.CreationTimestamp.Time, now),
		names, images, metav1.FormatLabelSelector(job.Spec.Selector),
	)
}

// jobStatus picks the first that holds of Complete, Failed, Terminating,
// Suspended, FailureTarget; otherwise Running.
func jobStatus(job *batchv1.Job) string {
	switch {
	case jobCondition(job, batchv1.JobComplete):
		return "Complete"
	case jobCondition(job, batchv1.JobFailed):
		return "Failed"
	case job.DeletionTimestamp != nil:
		return "Terminating"
	case jobCondition(job, batchv1.JobSuspended):
		return "Suspended"
	case jobCondition(job, batchv1.JobFailureTarget):
		return "FailureTarget"
	}
	return "Running"
}

// jobCompletions is "succeeded/completions"; a job without completions
// needs one success, shown with its parallelism when that is above 1.
func jobCompletions(job *batchv1.Job) string {
	if job.Spec.Completions != nil {
		return fmt.Sprintf("%d/%d", job.Status.Succeeded, *job.Spec.Completions)
	}
	if p := job.Spec.Parallelism; p != nil && *p > 1 {
		return fmt.Sprintf("%d/1 of %d", job.Status.Succeeded, *p)
	}
	return fmt.Sprintf("%d/1", job.Status.Succeeded)
}

// jobDuration is empty before the job starts and grows until it completes.
func jobDuration(job *batchv1.Job, now time.Time) string {
	switch {
	case job.Status.StartTime == nil:
		return ""
	case job.Status.CompletionTime == nil:
		return duration.HumanDuration(now.Sub(job.Status.StartTime.Time))
	}
	return duration.HumanDuration(job.Status.CompletionTime.Sub(job.Status.StartTime.Time))
}

// jobCondition reports whether the first job condition of type t is True.
func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
