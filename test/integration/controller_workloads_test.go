package integration

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"minik/controller"
)

func TestControllerGarbageCollectionModes(t *testing.T) {
	_, cs, ctx := startWithController(t, controller.Config{})
	ns := "default"
	fakeKubelet(t, cs, ns)

	t.Run("background: deleting a Deployment deletes its ReplicaSets and pods", func(t *testing.T) {
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, makeDeployment("bg", 2, "busybox"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitDeploymentComplete(t, ctx, cs, ns, "bg", 2)
		bg := metav1.DeletePropagationBackground
		if err := cs.AppsV1().Deployments(ns).Delete(ctx, "bg", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "ReplicaSets and pods gone", func() (bool, string) {
			rs, _ := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=bg"})
			pods, _ := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=bg"})
			return len(rs.Items) == 0 && len(pods.Items) == 0, fmt.Sprintf("%d rs, %d pods", len(rs.Items), len(pods.Items))
		})
	})

	t.Run("foreground: the Deployment stays, with foregroundDeletion, until its dependents are gone", func(t *testing.T) {
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, makeDeployment("fg", 2, "busybox"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitDeploymentComplete(t, ctx, cs, ns, "fg", 2)
		fg := metav1.DeletePropagationForeground
		if err := cs.AppsV1().Deployments(ns).Delete(ctx, "fg", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
			t.Fatal(err)
		}
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "fg", metav1.GetOptions{})
		if err != nil || d.DeletionTimestamp == nil || !strings.Contains(strings.Join(d.Finalizers, ","), "foregroundDeletion") {
			t.Fatalf("want a terminating Deployment with foregroundDeletion, got %v %v", err, d)
		}
		var sawPodsWhileOwnerExisted atomic.Bool
		eventually(t, 20*time.Second, "Deployment, ReplicaSets and pods gone", func() (bool, string) {
			_, derr := cs.AppsV1().Deployments(ns).Get(ctx, "fg", metav1.GetOptions{})
			rs, _ := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=fg"})
			pods, _ := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=fg"})
			if apierrors.IsNotFound(derr) && (len(rs.Items) > 0 || len(pods.Items) > 0) {
				sawPodsWhileOwnerExisted.Store(true)
			}
			return apierrors.IsNotFound(derr) && len(rs.Items) == 0 && len(pods.Items) == 0,
				fmt.Sprintf("deployment err %v, %d rs, %d pods", derr, len(rs.Items), len(pods.Items))
		})
		if sawPodsWhileOwnerExisted.Load() {
			t.Fatal("the owner was gone before its dependents")
		}
	})

	t.Run("orphan: deleting a ReplicaSet leaves its pods, without the ownerReference", func(t *testing.T) {
		if _, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, makeRS("orph", 2, map[string]string{"app": "orph"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "2 pods", func() (bool, string) {
			n, _ := countPods(ctx, cs, ns, "app=orph")
			return n == 2, fmt.Sprintf("%d", n)
		})
		orphan := metav1.DeletePropagationOrphan
		if err := cs.AppsV1().ReplicaSets(ns).Delete(ctx, "orph", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "ReplicaSet gone, pods orphaned", func() (bool, string) {
			_, err := cs.AppsV1().ReplicaSets(ns).Get(ctx, "orph", metav1.GetOptions{})
			n, pods := countPods(ctx, cs, ns, "app=orph")
			for _, p := range pods {
				if len(p.OwnerReferences) != 0 {
					return false, "pod still owned"
				}
			}
			return apierrors.IsNotFound(err) && n == 2, fmt.Sprintf("rs err %v, %d pods", err, n)
		})
	})

	t.Run("a dependent whose owner never existed is collected", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dangling", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "ghost", UID: types.UID("00000000-0000-0000-0000-000000000001")}}}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "dangling ConfigMap collected", func() (bool, string) {
			_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "dangling", metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	})
}

func TestControllerReplicationController(t *testing.T) {
	c, cs, ctx := startWithController(t, controller.Config{})
	ns := "default"
	fakeKubelet(t, cs, ns)
	rc := &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "legacy"}, Spec: corev1.ReplicationControllerSpec{
		Replicas: int32p(3), Selector: map[string]string{"app": "legacy"},
		Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "legacy"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if _, err := cs.CoreV1().ReplicationControllers(ns).Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Run("keeps 3 ready replicas and reports them", func(t *testing.T) {
		eventually(t, 20*time.Second, "3 ready", func() (bool, string) {
			got, _ := cs.CoreV1().ReplicationControllers(ns).Get(ctx, "legacy", metav1.GetOptions{})
			return got.Status.Replicas == 3 && got.Status.ReadyReplicas == 3 && got.Status.AvailableReplicas == 3, fmt.Sprintf("%+v", got.Status)
		})
	})
	t.Run("kubectl scale rc to 1 deletes two", func(t *testing.T) {
		c.MustKubectl(t, "", "scale", "rc/legacy", "--replicas=1")
		eventually(t, 20*time.Second, "1 pod", func() (bool, string) {
			n, _ := countPods(ctx, cs, ns, "app=legacy")
			return n == 1, fmt.Sprintf("%d", n)
		})
	})
}

// finishJobPods marks the job's running pods Succeeded (or Failed if fail
// is set), as their containers would exit.
func finishJobPods(ctx context.Context, cs kubernetes.Interface, ns, job string, phase corev1.PodPhase, limit int) int {
	l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
	if err != nil {
		return 0
	}
	n := 0
	for _, p := range l.Items {
		if n >= limit || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		p.Status.Phase = phase
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err == nil {
			n++
		}
	}
	return n
}

func jobCondition(j *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range j.Status.Conditions {
		if j.Status.Conditions[i].Type == t && j.Status.Conditions[i].Status == corev1.ConditionTrue {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

func makeJob(name string, completions, parallelism, backoff int32, restart corev1.RestartPolicy) *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: batchv1.JobSpec{
		Completions: &completions, Parallelism: &parallelism, BackoffLimit: &backoff,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: restart,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
}

func TestControllerJobs(t *testing.T) {
	_, cs, ctx := startWithController(t, controller.Config{})
	ns := "default"
	fakeKubelet(t, cs, ns)

	t.Run("3 completions with parallelism 2 run at most 2 at once and complete", func(t *testing.T) {
		if _, err := cs.BatchV1().Jobs(ns).Create(ctx, makeJob("work", 3, 2, 6, corev1.RestartPolicyNever), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitJob(t, ctx, cs, ns, "work", "Complete", func(j *batchv1.Job) bool {
			if j.Status.Active > 2 {
				t.Errorf("%d active pods with parallelism 2", j.Status.Active)
			}
			finishJobPods(ctx, cs, ns, "work", corev1.PodSucceeded, 1)
			return jobCondition(j, batchv1.JobComplete) != nil && j.Status.Succeeded == 3 && j.Status.CompletionTime != nil
		})
	})
	t.Run("backoffLimit 1 with restartPolicy Never fails after 2 pod failures", func(t *testing.T) {
		if _, err := cs.BatchV1().Jobs(ns).Create(ctx, makeJob("flaky", 1, 1, 1, corev1.RestartPolicyNever), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitJob(t, ctx, cs, ns, "flaky", "Failed BackoffLimitExceeded", func(j *batchv1.Job) bool {
			finishJobPods(ctx, cs, ns, "flaky", corev1.PodFailed, 1)
			c := jobCondition(j, batchv1.JobFailed)
			return c != nil && c.Reason == "BackoffLimitExceeded" && j.Status.Failed == 2
		})
	})
	t.Run("activeDeadlineSeconds fails a job that runs too long and removes its pods", func(t *testing.T) {
		j := makeJob("slow", 1, 1, 6, corev1.RestartPolicyOnFailure)
		j.Spec.ActiveDeadlineSeconds = func() *int64 { v := int64(1); return &v }()
		if _, err := cs.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitJob(t, ctx, cs, ns, "slow", "Failed DeadlineExceeded and no pod left", func(j *batchv1.Job) bool {
			n, _ := countPods(ctx, cs, ns, "job-name=slow")
			c := jobCondition(j, batchv1.JobFailed)
			return c != nil && c.Reason == "DeadlineExceeded" && n == 0
		})
	})
	t.Run("ttlSecondsAfterFinished deletes a finished job", func(t *testing.T) {
		j := makeJob("brief", 1, 1, 6, corev1.RestartPolicyNever)
		j.Spec.TTLSecondsAfterFinished = int32p(1)
		if _, err := cs.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "job deleted", func() (bool, string) {
			finishJobPods(ctx, cs, ns, "brief", corev1.PodSucceeded, 1)
			_, err := cs.BatchV1().Jobs(ns).Get(ctx, "brief", metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	})
}

// makeDaemonSet returns a DaemonSet whose pods, labelled app=name, run image.
func makeDaemonSet(name, image string) *appsv1.DaemonSet {
	labels := map[string]string{"app": name}
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}}}}
}

// daemonPodsByNode returns the active pods of DaemonSet name by the node
// their node affinity pins them to.
func daemonPodsByNode(ctx context.Context, cs kubernetes.Interface, ns, name string) map[string][]corev1.Pod {
	_, pods := countPods(ctx, cs, ns, "app="+name)
	out := map[string][]corev1.Pod{}
	for _, p := range pods {
		terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		node := terms[0].MatchFields[0].Values[0]
		out[node] = append(out[node], p)
	}
	return out
}

func TestControllerDaemonSet(t *testing.T) {
	c, cs, ctx := startWithController(t, controller.Config{})
	ns := "default"
	fakeKubelet(t, cs, ns)
	fakeNode(t, ctx, cs, "n1")
	fakeNode(t, ctx, cs, "n2")
	if _, err := cs.AppsV1().DaemonSets(ns).Create(ctx, makeDaemonSet("agent", "agent:1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	podsByNode := func() map[string][]corev1.Pod { return daemonPodsByNode(ctx, cs, ns, "agent") }
	t.Run("one pod per node, pinned by node affinity, with the DaemonSet tolerations", func(t *testing.T) {
		eventually(t, 20*time.Second, "a pod on n1 and n2", func() (bool, string) {
			m := podsByNode()
			return len(m["n1"]) == 1 && len(m["n2"]) == 1 && len(m) == 2, fmt.Sprint(m)
		})
		p := podsByNode()["n1"][0]
		keys := map[string]bool{}
		for _, tol := range p.Spec.Tolerations {
			keys[tol.Key+":"+string(tol.Effect)] = true
		}
		for _, want := range []string{"node.kubernetes.io/not-ready:NoExecute", "node.kubernetes.io/unreachable:NoExecute",
			"node.kubernetes.io/disk-pressure:NoSchedule", "node.kubernetes.io/memory-pressure:NoSchedule",
			"node.kubernetes.io/pid-pressure:NoSchedule", "node.kubernetes.io/unschedulable:NoSchedule"} {
			if !keys[want] {
				t.Errorf("missing toleration %s in %v", want, keys)
			}
		}
	})
	t.Run("pods follow nodes as they join and leave", func(t *testing.T) {
		fakeNode(t, ctx, cs, "n3")
		eventually(t, 20*time.Second, "a pod on n3", func() (bool, string) {
			m := podsByNode()
			return len(m["n3"]) == 1, fmt.Sprint(len(m))
		})
		if err := cs.CoreV1().Nodes().Delete(ctx, "n3", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "n3's pod gone", func() (bool, string) {
			m := podsByNode()
			return len(m["n3"]) == 0 && len(m) == 2, fmt.Sprint(len(m))
		})
	})
	t.Run("a NoExecute taint the daemon does not tolerate removes its pod from the node", func(t *testing.T) {
		updateNode(t, ctx, cs, "n2", false, func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute})
		})
		eventually(t, 20*time.Second, "no pod on n2", func() (bool, string) {
			m := podsByNode()
			return len(m["n2"]) == 0 && len(m["n1"]) == 1, fmt.Sprint(len(m))
		})
		got, _ := cs.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
		eventually(t, 20*time.Second, "status desired 1", func() (bool, string) {
			got, _ = cs.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
			return got.Status.DesiredNumberScheduled == 1 && got.Status.NumberReady == 1 && got.Status.CurrentNumberScheduled == 1, fmt.Sprintf("%+v", got.Status)
		})
	})
	t.Run("a rolling update replaces every pod with the new template", func(t *testing.T) {
		updateNode(t, ctx, cs, "n2", false, func(n *corev1.Node) { n.Spec.Taints = nil })
		eventually(t, 20*time.Second, "2 pods", func() (bool, string) { m := podsByNode(); return len(m) == 2, fmt.Sprint(len(m)) })
		c.MustKubectl(t, "", "set", "image", "daemonset/agent", "c=agent:2")
		eventually(t, 30*time.Second, "all pods on agent:2", func() (bool, string) {
			m := podsByNode()
			for _, ps := range m {
				if len(ps) != 1 || ps[0].Spec.Containers[0].Image != "agent:2" {
					return false, fmt.Sprint(len(m))
				}
			}
			got, _ := cs.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
			return len(m) == 2 && got.Status.UpdatedNumberScheduled == 2 && got.Status.NumberAvailable == 2, fmt.Sprintf("%+v", got.Status)
		})
	})
}

func TestControllerDisruptionBudgetEvictionAndDrain(t *testing.T) {
	c, cs, ctx := startWithController(t, controller.Config{})
	ns := "default"
	fakeKubelet(t, cs, ns)
	fakeNode(t, ctx, cs, "n1")
	fakeNode(t, ctx, cs, "n2")
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, makeDeployment("web", 2, "busybox"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDeploymentComplete(t, ctx, cs, ns, "web", 2)
	// Bind both to n1, as a scheduler would.
	_, pods := countPods(ctx, cs, ns, "app=web")
	for _, p := range pods {
		if err := cs.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name},
			Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	two := intstr.FromInt32(2)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: &two, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Run("the disruption controller reports minAvailable 2 of 2 as no disruption allowed", func(t *testing.T) {
		eventually(t, 20*time.Second, "pdb status", func() (bool, string) {
			got, _ := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
			s := got.Status
			ok := s.ObservedGeneration == got.Generation && s.CurrentHealthy == 2 && s.DesiredHealthy == 2 && s.ExpectedPods == 2 && s.DisruptionsAllowed == 0
			for _, cond := range s.Conditions {
				ok = ok && cond.Type == "DisruptionAllowed" && cond.Status == metav1.ConditionFalse && cond.Reason == "InsufficientPods"
			}
			return ok && len(s.Conditions) == 1, fmt.Sprintf("%+v", s)
		})
	})
	t.Run("an eviction that would break the budget answers 429", func(t *testing.T) {
		_, pods := countPods(ctx, cs, ns, "app=web")
		err := cs.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pods[0].Name, Namespace: ns}})
		if !apierrors.IsTooManyRequests(err) {
			t.Fatalf("want 429, got %v", err)
		}
	})
	t.Run("with maxUnavailable 1, kubectl drain evicts the pods and the Deployment recreates them; uncordon restores scheduling", func(t *testing.T) {
		one := intstr.FromInt32(1)
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error { // the disruption controller writes the status meanwhile
			got, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			got.Spec.MinAvailable, got.Spec.MaxUnavailable = nil, &one
			_, err = cs.PolicyV1().PodDisruptionBudgets(ns).Update(ctx, got, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "disruptionsAllowed 1", func() (bool, string) {
			got, _ := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
			return got.Status.DisruptionsAllowed == 1 && got.Status.ExpectedPods == 2, fmt.Sprintf("%+v", got.Status)
		})
		out := c.MustKubectl(t, "", "drain", "n1", "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=60s")
		if !strings.Contains(out, "drained") {
			t.Fatalf("drain: %s", out)
		}
		n1, _ := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if !n1.Spec.Unschedulable {
			t.Fatal("n1 not cordoned")
		}
		eventually(t, 20*time.Second, "2 replacement pods, none on n1", func() (bool, string) {
			n, pods := countPods(ctx, cs, ns, "app=web")
			for _, p := range pods {
				if p.Spec.NodeName == "n1" {
					return false, "a pod is still on n1"
				}
			}
			return n == 2, fmt.Sprintf("%d pods", n)
		})
		eventually(t, 10*time.Second, "unschedulable taint on n1", func() (bool, string) {
			n1, _ := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
			return hasTaint(n1, corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule), fmt.Sprint(n1.Spec.Taints)
		})
		c.MustKubectl(t, "", "uncordon", "n1")
		eventually(t, 10*time.Second, "n1 schedulable and untainted", func() (bool, string) {
			n1, _ := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
			return !n1.Spec.Unschedulable && !hasTaint(n1, corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule), fmt.Sprint(n1.Spec.Taints)
		})
	})
}
