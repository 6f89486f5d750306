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
	"k8s.io/apimachinery/pkg/types"
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

// runningJobPods returns the running pods of job name that are not being
// deleted.
func runningJobPods(ctx context.Context, cs kubernetes.Interface, ns, name string) []corev1.Pod {
	var running []corev1.Pod
	for _, p := range jobPods(ctx, cs, ns, name) {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running = append(running, p)
		}
	}
	return running
}

// waitRunningJobPods waits until job name has n running pods and returns
// them.
func waitRunningJobPods(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, name string, n int) []corev1.Pod {
	t.Helper()
	var running []corev1.Pod
	eventually(t, 30*time.Second, fmt.Sprintf("%d running pods of %s", n, name), func() (bool, string) {
		running = runningJobPods(ctx, cs, ns, name)
		return len(running) == n, fmt.Sprintf("%d running", len(running))
	})
	return running
}

// waitJob waits until cond holds for Job name and returns the Job.
func waitJob(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, name, what string, cond func(*batchv1.Job) bool) *batchv1.Job {
	t.Helper()
	var j *batchv1.Job
	eventually(t, 30*time.Second, what, func() (bool, string) {
		var err error
		if j, err = cs.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		return cond(j), fmt.Sprintf("%+v", j.Status)
	})
	return j
}

// kubectlWaitJob waits for condition (complete, failed...) of Job name in
// the default namespace with `kubectl wait`, as users do, and returns the
// Job.
func kubectlWaitJob(t *testing.T, ctx context.Context, c *testcluster.Cluster, name, condition string) *batchv1.Job {
	t.Helper()
	c.MustKubectl(t, "", "wait", "--for=condition="+condition, "job/"+name, "--timeout=40s")
	j, err := c.Clientset().BatchV1().Jobs("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestJobPodFailureBackoff(t *testing.T) {
	_, cs, ctx := startWithController(t, controller.Config{})
	ns := "default"
	fakeKubelet(t, cs, ns)

	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, makeJob("retry", 1, 1, 3, corev1.RestartPolicyNever), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := waitRunningJobPods(t, ctx, cs, ns, "retry", 1)[0]
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
	second := waitRunningJobPods(t, ctx, cs, ns, "retry", 1)[0]
	if err := exitPod(ctx, cs, &second, 0); err != nil {
		t.Fatal(err)
	}
	waitJob(t, ctx, cs, ns, "retry", "Complete", func(j *batchv1.Job) bool {
		return jobCondition(j, batchv1.JobComplete) != nil && j.Status.Succeeded == 1
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
		for _, p := range runningJobPods(ctx, cs, ns, name) {
			if p.Annotations[batchv1.JobCompletionIndexAnnotation] == ix {
				pod = p
				return true, ""
			}
		}
		return false, "none"
	})
	return pod
}

func TestJobIndexed(t *testing.T) {
	c, cs, ctx := startWithController(t, controller.Config{})
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
		waitJob(t, ctx, cs, ns, "idx", "completedIndexes 1", func(j *batchv1.Job) bool {
			return j.Status.CompletedIndexes == "1" && j.Status.Succeeded == 1 && j.Status.Active == 2
		})
	})
	t.Run("once every index succeeded the Job completes, which kubectl wait sees", func(t *testing.T) {
		for _, ix := range []string{"0", "2"} {
			p := podOfIndex(t, ctx, cs, ns, "idx", ix)
			if err := exitPod(ctx, cs, &p, 0); err != nil {
				t.Fatal(err)
			}
		}
		j := kubectlWaitJob(t, ctx, c, "idx", "complete")
		if j.Status.CompletedIndexes != "0-2" || j.Status.Succeeded != 3 || jobCondition(j, batchv1.JobSuccessCriteriaMet) == nil {
			t.Fatalf("status %+v", j.Status)
		}
	})
}

func TestJobBackoffLimitPerIndex(t *testing.T) {
	c, cs, ctx := startWithController(t, controller.Config{})
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
	waitJob(t, ctx, cs, ns, "per-index", "failedIndexes 0", func(j *batchv1.Job) bool {
		return j.Status.FailedIndexes != nil && *j.Status.FailedIndexes == "0" && j.Status.Failed == 1
	})
	ok := podOfIndex(t, ctx, cs, ns, "per-index", "1")
	if err := exitPod(ctx, cs, &ok, 0); err != nil {
		t.Fatal(err)
	}
	got := kubectlWaitJob(t, ctx, c, "per-index", "failed")
	if c := jobCondition(got, batchv1.JobFailed); c == nil || c.Reason != "FailedIndexes" || c.Message != "Job has failed indexes" || got.Status.CompletedIndexes != "1" {
		t.Fatalf("status %+v", got.Status)
	}
	for _, p := range jobPods(ctx, cs, ns, "per-index") {
		if p.Annotations[batchv1.JobCompletionIndexAnnotation] == "0" && p.Name != failed.Name {
			t.Fatalf("index 0 was retried past backoffLimitPerIndex 0: %s", p.Name)
		}
	}
}

// TestJobAdoptsOrphansAndReleasesPods is upstream's conformance spec "Job
// should adopt matching orphans and release non-matching pods": a pod
// whose ownerReference is removed is adopted again; a pod whose labels no
// longer match is released, and the Job replaces it.
func TestJobAdoptsOrphansAndReleasesPods(t *testing.T) {
	_, cs, ctx := startWithController(t, controller.Config{})
	ns := "default"
	fakeKubelet(t, cs, ns)
	job, err := cs.BatchV1().Jobs(ns).Create(ctx, makeJob("adopt", 4, 2, 6, corev1.RestartPolicyNever), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := waitRunningJobPods(t, ctx, cs, ns, "adopt", 2)[0]
	controlledByJob := func(p *corev1.Pod) bool {
		ref := metav1.GetControllerOf(p)
		return ref != nil && ref.UID == job.UID
	}

	orphan := []byte(`{"metadata":{"ownerReferences":null}}`)
	if _, err := cs.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, orphan, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the orphan adopted again", func() (bool, string) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return controlledByJob(p), fmt.Sprintf("owners %v", p.OwnerReferences)
	})

	unlabel := []byte(`{"metadata":{"labels":null}}`)
	if _, err := cs.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, unlabel, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the unlabelled pod released", func() (bool, string) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return !controlledByJob(p) && len(p.OwnerReferences) == 0, fmt.Sprintf("owners %v", p.OwnerReferences)
	})
	waitRunningJobPods(t, ctx, cs, ns, "adopt", 2)
}
