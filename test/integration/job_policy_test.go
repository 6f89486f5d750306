package integration

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"minik/client"
	"minik/client/kubeconfig"
	"minik/controller"
	"minik/internal/testcluster"
	"minik/kubelet"
	"minik/kubelet/runtime/fake"
)

// runHollowKubeletOn runs a real kubelet for node on the fake runtime rt
// in this process until the test ends, so the test can make its
// containers exit.
func runHollowKubeletOn(t *testing.T, c *testcluster.Cluster, node string, rt *fake.Runtime) {
	t.Helper()
	kc, err := kubeconfig.Load(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.NewFromKubeconfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	cfg := kubelet.Config{NodeName: node, Client: cl, Runtime: rt, RootDir: filepath.Join(t.TempDir(), node),
		NodeIP: "127.0.0.1", LeaseRenewInterval: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))}
	go func() {
		defer close(done)
		_ = kubelet.Run(ctx, cfg)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// exitContainer makes container name of pod exit with code in rt, as if
// its process ended.
func exitContainer(t *testing.T, ctx context.Context, rt *fake.Runtime, pod *corev1.Pod, name string, code int32) {
	t.Helper()
	sandboxes, err := rt.ListPodSandbox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range sandboxes {
		if sb.Metadata.GetName() != pod.Name || sb.Metadata.GetNamespace() != pod.Namespace {
			continue
		}
		containers, err := rt.ListContainers(ctx, sb.Id)
		if err != nil {
			t.Fatal(err)
		}
		for _, ctr := range containers {
			if ctr.Metadata.GetName() == name {
				if err := rt.Exit(ctr.Id, code); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
	}
	t.Fatalf("no container %s of pod %s in the runtime", name, pod.Name)
}

func policyRule(action batchv1.PodFailurePolicyAction, codes ...int32) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
		Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: codes}}
}

var ignoreDisruptions = batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore,
	OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}}

// TestJobPodFailurePolicyOnHollowNode runs Jobs on a real kubelet with the
// fake runtime: a container exiting with a code a FailJob rule lists fails
// the Job at once, with the reason and message Kubernetes gives.
func TestJobPodFailurePolicyOnHollowNode(t *testing.T) {
	c := testcluster.StartAPIOnly(t)
	startController(t, c, controller.Config{})
	runSchedulerInProcess(t, c)
	rt := fake.New(fake.Config{Images: []string{"busybox"}})
	runHollowKubeletOn(t, c, "hollow-jobs", rt)
	cs := c.Clientset()
	ctx := ctxT(t)
	ns := "default"

	j := makeJob("fail-fast", 2, 2, 6, corev1.RestartPolicyNever)
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		policyRule(batchv1.PodFailurePolicyActionFailJob, 42), ignoreDisruptions}}
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	eventually(t, 30*time.Second, "2 running pods", func() (bool, string) {
		pods = nil
		for _, p := range jobPods(ctx, cs, ns, "fail-fast") {
			if p.Status.Phase == corev1.PodRunning {
				pods = append(pods, p)
			}
		}
		return len(pods) == 2, fmt.Sprintf("%d running", len(pods))
	})
	exitContainer(t, ctx, rt, &pods[0], "c", 42)

	c.MustKubectl(t, "", "wait", "--for=condition=failed", "job/fail-fast", "--timeout=40s")
	got, err := cs.BatchV1().Jobs(ns).Get(ctx, "fail-fast", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("Container c for pod %s/%s failed with exit code 42 matching FailJob rule at index 0", ns, pods[0].Name)
	for _, typ := range []batchv1.JobConditionType{batchv1.JobFailureTarget, batchv1.JobFailed} {
		if c := jobCondition(got, typ); c == nil || c.Reason != "PodFailurePolicy" || c.Message != want {
			t.Errorf("condition %s: %+v, want reason PodFailurePolicy and %q", typ, c, want)
		}
	}
	if got.Status.Failed != 2 || got.Status.Active != 0 {
		t.Errorf("status %+v: want both pods failed (the other one terminated by the Job) and none active", got.Status)
	}
}

// TestJobPodFailurePolicyIgnoresDisruptions stands in for the kubelet: a
// pod that failed with the DisruptionTarget condition is not counted and
// is replaced, even with backoffLimit 0; a failure no rule matches counts.
func TestJobPodFailurePolicyIgnoresDisruptions(t *testing.T) {
	c := testcluster.StartAPIOnly(t)
	startController(t, c, controller.Config{})
	cs := c.Clientset()
	ctx := ctxT(t)
	ns := "default"
	fakeKubelet(t, cs, ns)

	j := makeJob("tolerant", 1, 1, 0, corev1.RestartPolicyNever)
	j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		policyRule(batchv1.PodFailurePolicyActionFailJob, 42), ignoreDisruptions}}
	if _, err := cs.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	evicted := runningJobPod(t, ctx, cs, ns, "tolerant")
	if err := disruptPod(ctx, cs, &evicted); err != nil {
		t.Fatal(err)
	}
	replacement := evicted
	eventually(t, 30*time.Second, "a replacement after the backoff", func() (bool, string) {
		for _, p := range jobPods(ctx, cs, ns, "tolerant") {
			if p.Name != evicted.Name && p.Status.Phase == corev1.PodRunning {
				replacement = p
				return true, ""
			}
		}
		return false, "none"
	})
	got, _ := cs.BatchV1().Jobs(ns).Get(ctx, "tolerant", metav1.GetOptions{})
	if got.Status.Failed != 0 || jobCondition(got, batchv1.JobFailureTarget) != nil {
		t.Fatalf("the ignored failure counted: %+v", got.Status)
	}
	if err := exitPod(ctx, cs, &replacement, 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "Failed BackoffLimitExceeded", func() (bool, string) {
		got, _ := cs.BatchV1().Jobs(ns).Get(ctx, "tolerant", metav1.GetOptions{})
		c := jobCondition(got, batchv1.JobFailed)
		return c != nil && c.Reason == "BackoffLimitExceeded" && got.Status.Failed == 1, fmt.Sprintf("%+v", got.Status)
	})
}

// disruptPod reports p as a kubelet does a pod it killed for a disruption
// (an eviction): Failed, exit code 137, condition DisruptionTarget.
func disruptPod(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod) error {
	now := metav1.Now()
	p.Status.Phase = corev1.PodFailed
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Image: "busybox",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", FinishedAt: now}}}}
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: now},
		{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI", LastTransitionTime: now},
	}
	_, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}
