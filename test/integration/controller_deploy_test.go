package integration

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"minik/controller"
)

// fakeKubelet marks every pod in ns Running and Ready (unless it has the
// label "stuck"), as a kubelet would once its containers start, until the
// test ends. Pods being deleted with a grace period are removed, as a
// kubelet does once their containers stop.
func fakeKubelet(t *testing.T, cs kubernetes.Interface, ns string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err == nil {
				for _, p := range l.Items {
					if p.DeletionTimestamp != nil {
						zero := int64(0)
						_ = cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
						continue
					}
					if p.Labels["stuck"] != "" || p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
						continue
					}
					setRunningReady(ctx, cs, &p)
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
}

func setRunningReady(ctx context.Context, cs kubernetes.Interface, p *corev1.Pod) {
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &now
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	_, _ = cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
}

func makeDeployment(name string, replicas int32, image string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	surge, unavail := intstr.FromInt32(1), intstr.FromInt32(0)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: int32p(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavail}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
			},
		},
	}
}

func waitDeploymentComplete(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, name string, replicas int32) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	eventually(t, 30*time.Second, "deployment "+name+" complete", func() (bool, string) {
		var err error
		d, err = cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		s := d.Status
		n, _ := countPods(ctx, cs, ns, "app="+name)
		return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == replicas && s.Replicas == replicas &&
			s.AvailableReplicas == replicas && n == int(replicas), fmt.Sprintf("status %+v, %d pods", s, n)
	})
	return d
}

func ownedReplicaSets(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns string, d *appsv1.Deployment) []appsv1.ReplicaSet {
	t.Helper()
	l, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []appsv1.ReplicaSet
	for _, rs := range l.Items {
		if ref := metav1.GetControllerOf(&rs); ref != nil && ref.UID == d.UID {
			out = append(out, rs)
		}
	}
	return out
}

func TestControllerDeploymentRollouts(t *testing.T) {
	c, cs, ctx := startWithController(t, controller.Config{})
	ns := "default"
	fakeKubelet(t, cs, ns)

	d, err := cs.AppsV1().Deployments(ns).Create(ctx, makeDeployment("web", 3, "busybox:1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d = waitDeploymentComplete(t, ctx, cs, ns, "web", 3)

	t.Run("the first ReplicaSet is revision 1, named and labelled by the template hash", func(t *testing.T) {
		rss := ownedReplicaSets(t, ctx, cs, ns, d)
		if len(rss) != 1 {
			t.Fatalf("want 1 ReplicaSet, got %d", len(rss))
		}
		rs := rss[0]
		hash := rs.Labels["pod-template-hash"]
		if hash == "" || rs.Name != "web-"+hash || rs.Spec.Selector.MatchLabels["pod-template-hash"] != hash ||
			rs.Annotations["deployment.kubernetes.io/revision"] != "1" || rs.Annotations["deployment.kubernetes.io/desired-replicas"] != "3" ||
			rs.Annotations["deployment.kubernetes.io/max-replicas"] != "4" {
			t.Fatalf("ReplicaSet %s labels %v annotations %v", rs.Name, rs.Labels, rs.Annotations)
		}
		cond := deploymentCondition(d, appsv1.DeploymentProgressing)
		if cond == nil || cond.Reason != "NewReplicaSetAvailable" || deploymentCondition(d, appsv1.DeploymentAvailable).Reason != "MinimumReplicasAvailable" {
			t.Fatalf("conditions %+v", d.Status.Conditions)
		}
	})

	t.Run("a rolling update with maxSurge 1 and maxUnavailable 0 never drops below 3 ready pods", func(t *testing.T) {
		var minReady atomic.Int32
		minReady.Store(100)
		watchCtx, stop := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			for watchCtx.Err() == nil {
				l, err := cs.CoreV1().Pods(ns).List(watchCtx, metav1.ListOptions{LabelSelector: "app=web"})
				if err == nil {
					var ready int32
					for _, p := range l.Items {
						if p.DeletionTimestamp == nil && podReady(&p) {
							ready++
						}
					}
					if ready < minReady.Load() {
						minReady.Store(ready)
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		out := c.MustKubectl(t, "", "set", "image", "deployment/web", "c=busybox:2")
		if !strings.Contains(out, "image updated") {
			t.Fatalf("kubectl set image: %s", out)
		}
		out = c.MustKubectl(t, "", "rollout", "status", "deployment/web", "--timeout=60s")
		if !strings.Contains(out, "successfully rolled out") {
			t.Fatalf("rollout status: %s", out)
		}
		d = waitDeploymentComplete(t, ctx, cs, ns, "web", 3)
		stop()
		<-watched
		if m := minReady.Load(); m < 3 {
			t.Fatalf("ready pods dropped to %d during the rollout", m)
		}
		rss := ownedReplicaSets(t, ctx, cs, ns, d)
		revs := map[string]int32{}
		for _, rs := range rss {
			revs[rs.Annotations["deployment.kubernetes.io/revision"]] = *rs.Spec.Replicas
		}
		if len(rss) != 2 || revs["1"] != 0 || revs["2"] != 3 {
			t.Fatalf("want revision 1 at 0 and 2 at 3 replicas, got %v", revs)
		}
	})

	t.Run("kubectl rollout history lists both revisions and undo returns to the first template as revision 3", func(t *testing.T) {
		out := c.MustKubectl(t, "", "rollout", "history", "deployment/web")
		if !strings.Contains(out, "1 ") || !strings.Contains(out, "2 ") {
			t.Fatalf("history: %s", out)
		}
		// The Deployment carries its current revision, as kubectl expects.
		if rev := c.MustKubectl(t, "", "get", "deployment/web", "-o", `jsonpath={.metadata.annotations.deployment\.kubernetes\.io/revision}`); rev != "2" {
			t.Fatalf("the Deployment's revision annotation is %q, want 2", rev)
		}
		c.MustKubectl(t, "", "rollout", "undo", "deployment/web")
		eventually(t, 30*time.Second, "image busybox:1 at revision 3", func() (bool, string) {
			d, _ = cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			img := d.Spec.Template.Spec.Containers[0].Image
			for _, rs := range ownedReplicaSets(t, ctx, cs, ns, d) {
				if rs.Spec.Template.Spec.Containers[0].Image == "busybox:1" {
					return img == "busybox:1" && rs.Annotations["deployment.kubernetes.io/revision"] == "3" &&
						rs.Annotations["deployment.kubernetes.io/revision-history"] == "1", fmt.Sprintf("image %s, annotations %v", img, rs.Annotations)
				}
			}
			return false, "no ReplicaSet with busybox:1"
		})
		waitDeploymentComplete(t, ctx, cs, ns, "web", 3)
		eventually(t, 10*time.Second, "the Deployment at revision 3", func() (bool, string) {
			d, _ = cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			rev := d.Annotations["deployment.kubernetes.io/revision"]
			return rev == "3", "revision " + rev
		})
	})

	t.Run("kubectl scale takes it from 3 to 10 to 2", func(t *testing.T) {
		c.MustKubectl(t, "", "scale", "deployment/web", "--replicas=10")
		waitDeploymentComplete(t, ctx, cs, ns, "web", 10)
		c.MustKubectl(t, "", "scale", "deployment/web", "--replicas=2")
		waitDeploymentComplete(t, ctx, cs, ns, "web", 2)
	})

	t.Run("a paused deployment does not roll out until resumed", func(t *testing.T) {
		c.MustKubectl(t, "", "rollout", "pause", "deployment/web")
		c.MustKubectl(t, "", "set", "image", "deployment/web", "c=busybox:3")
		eventually(t, 10*time.Second, "Progressing Unknown DeploymentPaused", func() (bool, string) {
			d, _ = cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			cond := deploymentCondition(d, appsv1.DeploymentProgressing)
			return cond != nil && cond.Reason == "DeploymentPaused" && d.Status.ObservedGeneration == d.Generation, fmt.Sprintf("%+v", d.Status.Conditions)
		})
		for _, rs := range ownedReplicaSets(t, ctx, cs, ns, d) {
			if rs.Spec.Template.Spec.Containers[0].Image == "busybox:3" {
				t.Fatal("a paused deployment created a new ReplicaSet")
			}
		}
		c.MustKubectl(t, "", "rollout", "resume", "deployment/web")
		c.MustKubectl(t, "", "rollout", "status", "deployment/web", "--timeout=60s")
		d = waitDeploymentComplete(t, ctx, cs, ns, "web", 2)
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "busybox:3" {
			t.Fatalf("image %s", img)
		}
	})

	t.Run("kubectl rollout restart makes a new revision", func(t *testing.T) {
		before := len(ownedReplicaSets(t, ctx, cs, ns, d))
		c.MustKubectl(t, "", "rollout", "restart", "deployment/web")
		eventually(t, 30*time.Second, "a new ReplicaSet", func() (bool, string) {
			d, _ = cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			n := len(ownedReplicaSets(t, ctx, cs, ns, d))
			return n == before+1, fmt.Sprintf("%d ReplicaSets", n)
		})
		waitDeploymentComplete(t, ctx, cs, ns, "web", 2)
	})
}

func TestControllerDeploymentRecreateHistoryAndDeadline(t *testing.T) {
	c, cs, ctx := startWithController(t, controller.Config{})
	ns := "default"
	fakeKubelet(t, cs, ns)

	t.Run("Recreate scales the old ReplicaSet to zero before the new one starts", func(t *testing.T) {
		d := makeDeployment("rec", 2, "busybox:1")
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitDeploymentComplete(t, ctx, cs, ns, "rec", 2)
		var overlap atomic.Bool
		watchCtx, stop := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			for watchCtx.Err() == nil {
				l, err := cs.CoreV1().Pods(ns).List(watchCtx, metav1.ListOptions{LabelSelector: "app=rec"})
				if err == nil {
					imgs := map[string]bool{}
					for _, p := range l.Items {
						imgs[p.Spec.Containers[0].Image] = true
					}
					if len(imgs) > 1 {
						overlap.Store(true)
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
		}()
		c.MustKubectl(t, "", "set", "image", "deployment/rec", "c=busybox:2")
		eventually(t, 30*time.Second, "new image rolled out", func() (bool, string) {
			dd, _ := cs.AppsV1().Deployments(ns).Get(ctx, "rec", metav1.GetOptions{})
			return dd.Status.UpdatedReplicas == 2 && dd.Status.AvailableReplicas == 2 && dd.Status.Replicas == 2 && dd.Status.ObservedGeneration == dd.Generation, fmt.Sprintf("%+v", dd.Status)
		})
		stop()
		<-watched
		if overlap.Load() {
			t.Fatal("old and new pods ran at the same time under Recreate")
		}
	})

	t.Run("revisionHistoryLimit 1 keeps one old ReplicaSet", func(t *testing.T) {
		d := makeDeployment("hist", 1, "busybox:1")
		d.Spec.RevisionHistoryLimit = int32p(1)
		d, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 2; i <= 4; i++ {
			waitDeploymentComplete(t, ctx, cs, ns, "hist", 1)
			c.MustKubectl(t, "", "set", "image", "deployment/hist", fmt.Sprintf("c=busybox:%d", i))
		}
		waitDeploymentComplete(t, ctx, cs, ns, "hist", 1)
		eventually(t, 20*time.Second, "2 ReplicaSets", func() (bool, string) {
			n := len(ownedReplicaSets(t, ctx, cs, ns, d))
			return n == 2, fmt.Sprintf("%d ReplicaSets", n)
		})
	})

	t.Run("a rollout that makes no progress for progressDeadlineSeconds reports ProgressDeadlineExceeded", func(t *testing.T) {
		d := makeDeployment("stuck", 2, "busybox:1")
		d.Spec.Template.Labels["stuck"] = "yes"
		d.Spec.ProgressDeadlineSeconds = int32p(2)
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "Progressing=False ProgressDeadlineExceeded", func() (bool, string) {
			dd, _ := cs.AppsV1().Deployments(ns).Get(ctx, "stuck", metav1.GetOptions{})
			cond := deploymentCondition(dd, appsv1.DeploymentProgressing)
			return cond != nil && cond.Status == corev1.ConditionFalse && cond.Reason == "ProgressDeadlineExceeded", fmt.Sprintf("%+v", dd.Status.Conditions)
		})
		ctx2, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		out, err := c.Kubectl(ctx2, "", "rollout", "status", "deployment/stuck", "--timeout=15s")
		if err == nil || !strings.Contains(out, "exceeded its progress deadline") {
			t.Fatalf("rollout status should fail with the deadline: %v %s", err, out)
		}
	})
}

func deploymentCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	c := podCondition(p, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// podCondition returns the pod's condition of that type, or nil.
func podCondition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
