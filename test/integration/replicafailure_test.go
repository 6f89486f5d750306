package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"minik/controller"
)

// TestReplicaFailureCondition gives a ReplicaSet and a
// ReplicationController a pod template the apiserver rejects at pod
// creation (its PriorityClass does not exist): the condition
// ReplicaFailure=True with reason FailedCreate and the apiserver's message
// appears, and goes once the PriorityClass exists and creates succeed.
func TestReplicaFailureCondition(t *testing.T) {
	c, cs, ctx := startWithController(t, controller.Config{})
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

	dyn := dynamic.NewForConfigOrDie(c.RESTConfig())
	rsFailure := func() string { return replicaFailure(ctx, dyn, "apps/v1", "replicasets", ns, "rejected") }
	rcFailure := func() string { return replicaFailure(ctx, dyn, "v1", "replicationcontrollers", ns, "rejected-rc") }
	const wantFailure = "True FailedCreate: " // then the apiserver's message
	eventually(t, 20*time.Second, "ReplicaFailure FailedCreate on both", func() (bool, string) {
		a, b := rsFailure(), rcFailure()
		ok := strings.HasPrefix(a, wantFailure) && strings.Contains(a, wantMsg) && strings.HasPrefix(b, wantFailure) && strings.Contains(b, wantMsg)
		return ok, fmt.Sprintf("rs %q, rc %q", a, b)
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
		a, b := rsFailure(), rcFailure()
		return n == 2 && m == 1 && a == "" && b == "", fmt.Sprintf("%d+%d pods, rs %q, rc %q", n, m, a, b)
	})
}

// replicaFailure returns the ReplicaFailure condition of object ns/name
// (of resource in apiVersion) as "Status Reason: Message", "" if it has
// none: one reader for every kind that has the condition.
func replicaFailure(ctx context.Context, dyn dynamic.Interface, apiVersion, resource, ns, name string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return err.Error()
	}
	obj, err := dyn.Resource(gv.WithResource(resource)).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		if c, ok := c.(map[string]any); ok && c["type"] == "ReplicaFailure" {
			return fmt.Sprintf("%v %v: %v", c["status"], c["reason"], c["message"])
		}
	}
	return ""
}
