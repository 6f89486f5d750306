package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"minik/controller"
	"minik/internal/testcluster"
)

func int32p(i int32) *int32 { return &i }

func makeRS(name string, replicas int32, labels map[string]string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: int32p(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
}

// countPods returns the active pods in ns matching sel.
func countPods(ctx context.Context, cs kubernetes.Interface, ns, sel string) (int, []corev1.Pod) {
	l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return -1, nil
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return len(out), out
}

func TestControllerReplicaSetKeepsReplicas(t *testing.T) {
	_, cs, ctx := startWithController(t, controller.Config{})
	ns := "default"

	if _, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, makeRS("web", 3, map[string]string{"app": "web"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Run("creates spec.replicas pods owned by the ReplicaSet", func(t *testing.T) {
		eventually(t, 20*time.Second, "3 pods", func() (bool, string) {
			n, pods := countPods(ctx, cs, ns, "app=web")
			for _, p := range pods {
				if ref := metav1.GetControllerOf(&p); ref == nil || ref.Kind != "ReplicaSet" || ref.Name != "web" {
					return false, fmt.Sprintf("pod %s has controller %v", p.Name, ref)
				}
			}
			return n == 3, fmt.Sprintf("%d pods", n)
		})
	})
	t.Run("replaces a deleted pod", func(t *testing.T) {
		_, pods := countPods(ctx, cs, ns, "app=web")
		if err := cs.CoreV1().Pods(ns).Delete(ctx, pods[0].Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "3 pods again", func() (bool, string) {
			n, now := countPods(ctx, cs, ns, "app=web")
			for _, p := range now {
				if p.Name == pods[0].Name {
					return false, "deleted pod still there"
				}
			}
			return n == 3, fmt.Sprintf("%d pods", n)
		})
	})
	t.Run("adopts a matching orphan instead of creating", func(t *testing.T) {
		orphan := makePod("orphan", map[string]string{"app": "web"})
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// 4 matching pods for 3 replicas: one is deleted; the orphan, as the
		// newest unscheduled pod, goes first, or it is adopted.
		eventually(t, 20*time.Second, "3 owned pods", func() (bool, string) {
			n, pods := countPods(ctx, cs, ns, "app=web")
			for _, p := range pods {
				if metav1.GetControllerOf(&p) == nil {
					return false, "an orphan remains: " + p.Name
				}
			}
			return n == 3, fmt.Sprintf("%d pods", n)
		})
	})
	t.Run("releases a pod whose labels stop matching", func(t *testing.T) {
		_, pods := countPods(ctx, cs, ns, "app=web")
		p := pods[0]
		p.Labels = map[string]string{"app": "other"}
		if _, err := cs.CoreV1().Pods(ns).Update(ctx, &p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "released pod and a replacement", func() (bool, string) {
			got, err := cs.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			n, _ := countPods(ctx, cs, ns, "app=web")
			return len(got.OwnerReferences) == 0 && n == 3, fmt.Sprintf("owners %v, %d pods", got.OwnerReferences, n)
		})
	})
	t.Run("scales down to 1 and reports status", func(t *testing.T) {
		if _, err := cs.AppsV1().ReplicaSets(ns).UpdateScale(ctx, "web", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 1}}, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "1 pod and status.replicas 1", func() (bool, string) {
			n, _ := countPods(ctx, cs, ns, "app=web")
			rs, err := cs.AppsV1().ReplicaSets(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return n == 1 && rs.Status.Replicas == 1 && rs.Status.FullyLabeledReplicas == 1 && rs.Status.ObservedGeneration == rs.Generation,
				fmt.Sprintf("%d pods, status %+v", n, rs.Status)
		})
	})
	t.Run("the controllers act as their own service accounts", func(t *testing.T) {
		for _, account := range []string{"replicaset-controller", "generic-garbage-collector"} {
			if _, err := cs.CoreV1().ServiceAccounts("kube-system").Get(ctx, account, metav1.GetOptions{}); err != nil {
				t.Errorf("service account kube-system/%s: %v", account, err)
			}
		}
	})
	t.Run("deleting the ReplicaSet deletes its pods (background)", func(t *testing.T) {
		if err := cs.AppsV1().ReplicaSets(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 20*time.Second, "no pods", func() (bool, string) {
			n, _ := countPods(ctx, cs, ns, "app=web")
			return n == 0, fmt.Sprintf("%d pods", n)
		})
	})
}

func TestControllerNamespaceDeletionEmptiesAndRemovesIt(t *testing.T) {
	_, cs, ctx := startWithController(t, controller.Config{})
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().ReplicaSets("doomed").Create(ctx, makeRS("web", 2, map[string]string{"app": "web"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("doomed").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Kinds the controller knows only from discovery.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := cs.CoreV1().Services("doomed").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": resource.MustParse("10")}}}
	if _, err := cs.CoreV1().ResourceQuotas("doomed").Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "2 pods in doomed", func() (bool, string) {
		n, _ := countPods(ctx, cs, "doomed", "app=web")
		return n == 2, fmt.Sprintf("%d pods", n)
	})
	if err := cs.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the namespace to be gone", func() (bool, string) {
		ns, err := cs.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("phase %s, conditions %+v", ns.Status.Phase, ns.Status.Conditions)
	})
	for _, check := range []func() error{
		func() error {
			_, err := cs.CoreV1().ConfigMaps("doomed").Get(ctx, "cfg", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := cs.AppsV1().ReplicaSets("doomed").Get(ctx, "web", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().Services("doomed").Get(ctx, "web", metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().ResourceQuotas("doomed").Get(ctx, "q", metav1.GetOptions{})
			return err
		},
	} {
		if err := check(); !apierrors.IsNotFound(err) {
			t.Errorf("content survived the namespace: %v", err)
		}
	}
}

// TestControllerRunsInMinikUp uses the controller and scheduler that
// `minik up` runs itself: a Deployment's pods are created, scheduled onto
// the registered nodes and the rollout completes.
func TestControllerRunsInMinikUp(t *testing.T) {
	c := testcluster.Start(t)
	cs := c.Clientset()
	ctx := ctxT(t)
	fakeKubelet(t, cs, "default")
	fakeNode(t, ctx, cs, "n1")
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, makeDeployment("up", 2, "busybox"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDeploymentComplete(t, ctx, cs, "default", "up", 2)
	// The fake kubelet runs pods bound or not: the scheduler may bind them
	// after the rollout is complete.
	eventually(t, 20*time.Second, "the pods on n1", func() (bool, string) {
		_, pods := countPods(ctx, cs, "default", "app=up")
		ok := len(pods) > 0
		var on []string
		for _, p := range pods {
			ok = ok && p.Spec.NodeName == "n1"
			on = append(on, p.Name+"@"+p.Spec.NodeName)
		}
		return ok, fmt.Sprint(on)
	})
}
