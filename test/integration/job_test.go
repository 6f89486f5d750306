package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"minik/controller"
	"minik/internal/testcluster"
)

// exitPod ends p as a kubelet reports a pod whose only container exited
// with code: phase Succeeded (code 0) or Failed, the container terminated
// now, Ready False.
func exitPod(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod, code int32) error {
	now := metav1.Now()
	p.Status.Phase = corev1.PodFailed
	reason := "Error"
	if code == 0 {
		p.Status.Phase, reason = corev1.PodSucceeded, "Completed"
	}
	var statuses []corev1.ContainerStatus
	for _, c := range p.Spec.Containers {
		statuses = append(statuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, FinishedAt: now}}})
	}
	p.Status.ContainerStatuses = statuses
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: now}}
	_, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}

// jobPods returns the pods of job name, oldest first.
func jobPods(ctx context.Context, cs kubernetes.Interface, ns, name string) []corev1.Pod {
	l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + name})
	if err != nil {
		return nil
	}
	return l.Items
}

// runningJobPod waits for the only running pod of job name and returns it.
func runningJobPod(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, name string) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	eventually(t, 20*time.Second, "a running pod of "+name, func() (bool, string) {
		var running []corev1.Pod
		for _, p := range jobPods(ctx, cs, ns, name) {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running = append(running, p)
			}
		}
		if len(running) != 1 {
			return false, fmt.Sprintf("%d running", len(running))
		}
		pod = running[0]
		return true, ""
	})
	return pod
}

func TestJobPodFailureBackoff(t *testing.T) {
	c := testcluster.StartAPIOnly(t)
	startController(t, c, controller.Config{})
	cs := c.Clientset()
	ctx := ctxT(t)
	ns := "default"
	fakeKubelet(t, cs, ns)

	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, makeJob("retry", 1, 1, 3, corev1.RestartPolicyNever), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := runningJobPod(t, ctx, cs, ns, "retry")
	failedAt := time.Now()
	if err := exitPod(ctx, cs, &first, 1); err != nil {
		t.Fatal(err)
	}

	// The replacement waits 10s from the failure (whose time the API keeps
	// to the second, hence the slack).
	var replacedAt time.Time
	eventually(t, 25*time.Second, "a replacement pod", func() (bool, string) {
		pods := jobPods(ctx, cs, ns, "retry")
		if len(pods) == 2 {
			replacedAt = time.Now()
			return true, ""
		}
		return false, fmt.Sprintf("%d pods", len(pods))
	})
	if waited := replacedAt.Sub(failedAt); waited < 8500*time.Millisecond {
		t.Fatalf("the replacement came %v after the failure, want about 10s", waited)
	}
	j, err := cs.BatchV1().Jobs(ns).Get(ctx, "retry", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Status.Failed != 1 {
		t.Fatalf("status.failed %d, want 1", j.Status.Failed)
	}
	second := runningJobPod(t, ctx, cs, ns, "retry")
	if err := exitPod(ctx, cs, &second, 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "Complete", func() (bool, string) {
		j, _ := cs.BatchV1().Jobs(ns).Get(ctx, "retry", metav1.GetOptions{})
		return jobCondition(j, batchv1.JobComplete) != nil && j.Status.Succeeded == 1, fmt.Sprintf("%+v", j.Status)
	})
}

func makeIndexedJob(name string, completions, parallelism int32) *batchv1.Job {
	j := makeJob(name, completions, parallelism, 6, corev1.RestartPolicyNever)
	mode := batchv1.IndexedCompletion
	j.Spec.CompletionMode = &mode
	return j
}

// podOfIndex returns the running pod of index ix of job name.
func podOfIndex(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, name, ix string) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	eventually(t, 20*time.Second, "a running pod of index "+ix, func() (bool, string) {
		for _, p := range jobPods(ctx, cs, ns, name) {
			if p.Annotations[batchv1.JobCompletionIndexAnnotation] == ix && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				pod = p
				return true, ""
			}
		}
		return false, "none"
	})
	return pod
}

func TestJobIndexed(t *testing.T) {
	c := testcluster.StartAPIOnly(t)
	startController(t, c, controller.Config{})
	cs := c.Clientset()
	ctx := ctxT(t)
	ns := "default"
	fakeKubelet(t, cs, ns)

	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, makeIndexedJob("idx", 3, 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Run("the lowest indexes start, each pod carrying its index", func(t *testing.T) {
		for _, ix := range []string{"0", "1"} {
			p := podOfIndex(t, ctx, cs, ns, "idx", ix)
			if !strings.HasPrefix(p.Name, "idx-"+ix+"-") || len(p.Name) != len("idx-"+ix+"-")+5 {
				t.Errorf("pod name %q, want idx-%s-<random>", p.Name, ix)
			}
			if p.Spec.Hostname != "idx-"+ix || p.Labels[batchv1.JobCompletionIndexAnnotation] != ix {
				t.Errorf("hostname %q label %q, want idx-%s and %s", p.Spec.Hostname, p.Labels[batchv1.JobCompletionIndexAnnotation], ix, ix)
			}
			env := p.Spec.Containers[0].Env
			if len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" || env[0].ValueFrom == nil ||
				env[0].ValueFrom.FieldRef.FieldPath != "metadata.labels['batch.kubernetes.io/job-completion-index']" {
				t.Errorf("env %+v", env)
			}
		}
		if pods := jobPods(ctx, cs, ns, "idx"); len(pods) != 2 {
			t.Fatalf("%d pods with parallelism 2", len(pods))
		}
	})
	t.Run("a succeeded index is recorded and the next index starts", func(t *testing.T) {
		p := podOfIndex(t, ctx, cs, ns, "idx", "1")
		if err := exitPod(ctx, cs, &p, 0); err != nil {
			t.Fatal(err)
		}
		podOfIndex(t, ctx, cs, ns, "idx", "2")
		eventually(t, 20*time.Second, "completedIndexes 1", func() (bool, string) {
			j, _ := cs.BatchV1().Jobs(ns).Get(ctx, "idx", metav1.GetOptions{})
			return j.Status.CompletedIndexes == "1" && j.Status.Succeeded == 1 && j.Status.Active == 2, fmt.Sprintf("%+v", j.Status)
		})
	})
	t.Run("once every index succeeded the Job completes, which kubectl wait sees", func(t *testing.T) {
		for _, ix := range []string{"0", "2"} {
			p := podOfIndex(t, ctx, cs, ns, "idx", ix)
			if err := exitPod(ctx, cs, &p, 0); err != nil {
				t.Fatal(err)
			}
		}
		c.MustKubectl(t, "", "wait", "--for=condition=complete", "job/idx", "--timeout=30s")
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, "idx", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if j.Status.CompletedIndexes != "0-2" || j.Status.Succeeded != 3 || jobCondition(j, batchv1.JobSuccessCriteriaMet) == nil {
			t.Fatalf("status %+v", j.Status)
		}
	})
}

func TestJobBackoffLimitPerIndex(t *testing.T) {
	c := testcluster.StartAPIOnly(t)
	startController(t, c, controller.Config{})
	cs := c.Clientset()
	ctx := ctxT(t)
	ns := "default"
	fakeKubelet(t, cs, ns)

	j := makeIndexedJob("per-index", 2, 2)
	zero := int32(0)
	j.Spec.BackoffLimitPerIndex = &zero
	j.Spec.BackoffLimit = nil
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	failed := podOfIndex(t, ctx, cs, ns, "per-index", "0")
	if failed.Annotations[batchv1.JobIndexFailureCountAnnotation] != "0" {
		t.Fatalf("annotations %v, want a failure count of 0", failed.Annotations)
	}
	if err := exitPod(ctx, cs, &failed, 3); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "failedIndexes 0", func() (bool, string) {
		j, _ := cs.BatchV1().Jobs(ns).Get(ctx, "per-index", metav1.GetOptions{})
		return j.Status.FailedIndexes != nil && *j.Status.FailedIndexes == "0" && j.Status.Failed == 1, fmt.Sprintf("%+v", j.Status)
	})
	ok := podOfIndex(t, ctx, cs, ns, "per-index", "1")
	if err := exitPod(ctx, cs, &ok, 0); err != nil {
		t.Fatal(err)
	}
	c.MustKubectl(t, "", "wait", "--for=condition=failed", "job/per-index", "--timeout=30s")
	got, err := cs.BatchV1().Jobs(ns).Get(ctx, "per-index", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := jobCondition(got, batchv1.JobFailed); c == nil || c.Reason != "FailedIndexes" || c.Message != "Job has failed indexes" || got.Status.CompletedIndexes != "1" {
		t.Fatalf("status %+v", got.Status)
	}
	for _, p := range jobPods(ctx, cs, ns, "per-index") {
		if p.Annotations[batchv1.JobCompletionIndexAnnotation] == "0" && p.Name != failed.Name {
			t.Fatalf("index 0 was retried past backoffLimitPerIndex 0: %s", p.Name)
		}
	}
}
