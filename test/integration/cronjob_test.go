package integration

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"minik/controller"
)

// TestCronJobOnAFakeClock runs the CronJob and Job controllers on a fake
// clock, so minutes pass at once: `kubectl create cronjob` makes a
// CronJob whose Job starts at the next minute, Forbid skips the next run
// while that Job is active, and once it completes the skipped run starts.
func TestCronJobOnAFakeClock(t *testing.T) {
	start := time.Now()
	fc := testingclock.NewFakeClock(start)
	c, cs, ctx := startWithController(t, controller.Config{Controllers: []string{"cronjob", "job"}, Clock: fc})
	ns := "default"

	out := c.MustKubectl(t, "", "create", "cronjob", "tick", "--image=busybox", "--schedule=*/1 * * * *", "--", "/bin/true")
	if !strings.Contains(out, "cronjob.batch/tick created") {
		t.Fatalf("kubectl create cronjob: %s", out)
	}
	c.MustKubectl(t, "", "patch", "cj/tick", "-p", `{"spec":{"concurrencyPolicy":"Forbid"}}`)
	cj, err := cs.BatchV1().CronJobs(ns).Get(ctx, "tick", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *cj.Spec.SuccessfulJobsHistoryLimit != 3 || *cj.Spec.FailedJobsHistoryLimit != 1 || *cj.Spec.Suspend {
		t.Errorf("defaults: %+v", cj.Spec)
	}
	next := cj.CreationTimestamp.Time.Truncate(time.Minute).Add(time.Minute)
	jobName := func(at time.Time) string { return "tick-" + strconv.FormatInt(at.Unix()/60, 10) }

	// step moves the fake clock to at; the controller's requeue timers fire.
	step := func(at time.Time) { fc.SetTime(at) }
	t.Run("the next minute starts a Job named after it", func(t *testing.T) {
		step(next.Add(time.Second))
		eventually(t, 10*time.Second, "job "+jobName(next), func() (bool, string) {
			j, err := cs.BatchV1().Jobs(ns).Get(ctx, jobName(next), metav1.GetOptions{})
			return err == nil && j.Annotations[batchv1.CronJobScheduledTimestampAnnotation] != "", fmt.Sprint(err)
		})
		eventually(t, 10*time.Second, "the Job in status.active", func() (bool, string) {
			cj, _ := cs.BatchV1().CronJobs(ns).Get(ctx, "tick", metav1.GetOptions{})
			return len(cj.Status.Active) == 1 && cj.Status.LastScheduleTime != nil, fmt.Sprintf("%+v", cj.Status)
		})
		out := c.MustKubectl(t, "", "get", "cronjob", "tick")
		for _, col := range []string{"SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "*/1 * * * *", "<none>", "False"} {
			if !strings.Contains(out, col) {
				t.Errorf("kubectl get cronjob lacks %q:\n%s", col, out)
			}
		}
	})
	t.Run("Forbid skips the next minute while the Job runs", func(t *testing.T) {
		step(next.Add(61 * time.Second))
		eventually(t, 10*time.Second, "a JobAlreadyActive event", func() (bool, string) {
			evs, _ := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=tick,reason=JobAlreadyActive"})
			return len(evs.Items) > 0, ""
		})
		jobs, _ := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if len(jobs.Items) != 1 {
			t.Fatalf("%d jobs, want only %s", len(jobs.Items), jobName(next))
		}
	})
	t.Run("once the Job completes the skipped minute starts", func(t *testing.T) {
		eventually(t, 10*time.Second, "the Job's pod", func() (bool, string) {
			pods, _ := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + jobName(next)})
			if len(pods.Items) != 1 {
				return false, fmt.Sprint(len(pods.Items))
			}
			p := pods.Items[0]
			p.Status.Phase = corev1.PodSucceeded
			_, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{})
			return err == nil, fmt.Sprint(err)
		})
		// Without startingDeadlineSeconds the skipped minute is still due:
		// it starts as soon as the first Job is done, as upstream.
		eventually(t, 10*time.Second, "the skipped minute's Job alone in status.active", func() (bool, string) {
			cj, _ := cs.BatchV1().CronJobs(ns).Get(ctx, "tick", metav1.GetOptions{})
			return len(cj.Status.Active) == 1 && cj.Status.Active[0].Name == jobName(next.Add(time.Minute)) &&
				cj.Status.LastSuccessfulTime != nil, fmt.Sprintf("%+v", cj.Status)
		})
		// The recorder writes events asynchronously, after the status.
		eventually(t, 15*time.Second, "SuccessfulCreate, SawCompletedJob and JobAlreadyActive events", func() (bool, string) {
			evs, _ := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=tick"})
			var reasons []string
			for _, e := range evs.Items {
				reasons = append(reasons, e.Reason)
			}
			for _, want := range []string{"SuccessfulCreate", "SawCompletedJob", "JobAlreadyActive"} {
				if !strings.Contains(strings.Join(reasons, ","), want) {
					return false, fmt.Sprintf("events %v lack %s", reasons, want)
				}
			}
			return true, ""
		})
	})
}
