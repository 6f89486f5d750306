package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/controller"
	"minik/internal/testcluster"
)

// TestReplicaFailureCondition gives a ReplicaSet and a
// ReplicationController a pod template the apiserver rejects at pod
// creation (its PriorityClass does not exist): the condition
// ReplicaFailure=True with reason FailedCreate and the apiserver's message
// appears, and goes once the PriorityClass exists and creates succeed.
func TestReplicaFailureCondition(t *testing.T) {
	c := testcluster.StartAPIOnly(t)
	startController(t, c, controller.Config{})
	cs := c.Clientset()
	ctx := ctxT(t)
	ns := "default"
	const wantMsg = "no PriorityClass with name missing-class was found"

	rs := makeRS("rejected", 2, map[string]string{"app": "rejected"})
	rs.Spec.Template.Spec.PriorityClassName = "missing-class"
	if _, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "rejected-rc"}
	rc := &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "rejected-rc"}, Spec: corev1.ReplicationControllerSpec{
		Replicas: int32p(1), Selector: labels,
		Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			PriorityClassName: "missing-class", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if _, err := cs.CoreV1().ReplicationControllers(ns).Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	rsFailure := func() *appsv1.ReplicaSetCondition {
		got, err := cs.AppsV1().ReplicaSets(ns).Get(ctx, "rejected", metav1.GetOptions{})
		if err != nil {
			return nil
		}
		for i := range got.Status.Conditions {
			if got.Status.Conditions[i].Type == appsv1.ReplicaSetReplicaFailure {
				return &got.Status.Conditions[i]
			}
		}
		return nil
	}
	rcFailure := func() *corev1.ReplicationControllerCondition {
		got, err := cs.CoreV1().ReplicationControllers(ns).Get(ctx, "rejected-rc", metav1.GetOptions{})
		if err != nil {
			return nil
		}
		for i := range got.Status.Conditions {
			if got.Status.Conditions[i].Type == corev1.ReplicationControllerReplicaFailure {
				return &got.Status.Conditions[i]
			}
		}
		return nil
	}
	eventually(t, 20*time.Second, "ReplicaFailure FailedCreate on both", func() (bool, string) {
		a, b := rsFailure(), rcFailure()
		ok := a != nil && a.Status == corev1.ConditionTrue && a.Reason == "FailedCreate" && strings.Contains(a.Message, wantMsg) &&
			b != nil && b.Status == corev1.ConditionTrue && b.Reason == "FailedCreate" && strings.Contains(b.Message, wantMsg)
		return ok, fmt.Sprintf("rs %+v, rc %+v", a, b)
	})
	out := c.MustKubectl(t, "", "get", "rs", "rejected", "-o", "jsonpath={.status.conditions[0].type}={.status.conditions[0].reason}")
	if out != "ReplicaFailure=FailedCreate" {
		t.Fatalf("kubectl sees %q", out)
	}

	if _, err := cs.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "missing-class"}, Value: 10}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "pods created and ReplicaFailure gone", func() (bool, string) {
		n, _ := countPods(ctx, cs, ns, "app=rejected")
		m, _ := countPods(ctx, cs, ns, "app=rejected-rc")
		return n == 2 && m == 1 && rsFailure() == nil && rcFailure() == nil, fmt.Sprintf("%d+%d pods, rs %+v, rc %+v", n, m, rsFailure(), rcFailure())
	})
}
