package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testCronJobEveryMinute runs a CronJob every minute with
// concurrencyPolicy Forbid and a Job that never ends: the first Job
// starts within 70s, its pod runs on a real kubelet, and the next minute
// is skipped (JobAlreadyActive) while that Job is active. It takes up to
// two minutes of wall time, so it runs beside the other workload tests.
func testCronJobEveryMinute(t *testing.T, e *ctlEnv) {
	ctx := context.Background()
	grace := int64(1)
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "every-minute", Namespace: ns}, Spec: batchv1.CronJobSpec{
		Schedule: "*/1 * * * *", ConcurrencyPolicy: batchv1.ForbidConcurrent,
		JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "every-minute"}},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: &grace,
				Containers: []corev1.Container{{Name: "main", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}}}}}}},
	}}
	created, err := e.cs.BatchV1().CronJobs(ns).Create(ctx, cj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := metav1.DeletePropagationBackground
		_ = e.cs.BatchV1().CronJobs(ns).Delete(ctx, cj.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
		e.waitGone(t, "app=every-minute")
	})
	jobs := func() []batchv1.Job {
		l, err := e.cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []batchv1.Job
		for _, j := range l.Items {
			if ref := metav1.GetControllerOf(&j); ref != nil && ref.UID == created.UID {
				out = append(out, j)
			}
		}
		return out
	}
	waitFor(t, 70*time.Second, "the first Job", func() (bool, string) {
		return len(jobs()) == 1, fmt.Sprint(len(jobs()), " jobs")
	})
	first := jobs()[0]
	if first.Annotations[batchv1.CronJobScheduledTimestampAnnotation] == "" {
		t.Errorf("job %s lacks the scheduled-timestamp annotation: %v", first.Name, first.Annotations)
	}
	e.waitPods(t, "app=every-minute", 60*time.Second, "the Job's pod running", func(pods []corev1.Pod) bool {
		return len(pods) == 1 && pods[0].Status.Phase == corev1.PodRunning
	})
	// The next minute comes while the Job still runs.
	scheduled, err := time.Parse(time.RFC3339, first.Annotations[batchv1.CronJobScheduledTimestampAnnotation])
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Until(scheduled.Add(time.Minute))+20*time.Second, "a JobAlreadyActive event", func() (bool, string) {
		return e.events(t, cj.Name)["JobAlreadyActive"] > 0, fmt.Sprint(e.events(t, cj.Name))
	})
	if n := len(jobs()); n != 1 {
		t.Errorf("%d jobs after the skipped minute, want 1", n)
	}
	got, err := e.cs.BatchV1().CronJobs(ns).Get(ctx, cj.Name, metav1.GetOptions{})
	if err != nil || len(got.Status.Active) != 1 || got.Status.Active[0].Name != first.Name {
		t.Errorf("status.active %+v (%v), want %s", got.Status.Active, err, first.Name)
	}
}
