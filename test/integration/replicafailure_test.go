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

// TestReplicaFailureCondition gives a ReplicaSet, a ReplicationController
// and a Deployment a pod template the apiserver rejects at pod creation
// (its PriorityClass does not exist): the condition ReplicaFailure=True
// with reason FailedCreate and the apiserver's message appears (on the
// Deployment, copied from its ReplicaSet), and goes once the PriorityClass
// exists and creates succeed.
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
	d := makeDeployment("rejected-deploy", 1, "busybox")
	d.Spec.Template.Spec.PriorityClassName = "missing-class"
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	dyn := dynamic.NewForConfigOrDie(c.RESTConfig())
	// failures returns the ReplicaFailure condition of each object.
	failures := func() map[string]string {
		return map[string]string{
			"rs":         replicaFailure(ctx, dyn, "apps/v1", "replicasets", ns, "rejected"),
			"rc":         replicaFailure(ctx, dyn, "v1", "replicationcontrollers", ns, "rejected-rc"),
			"deployment": replicaFailure(ctx, dyn, "apps/v1", "deployments", ns, "rejected-deploy"),
		}
	}
	const wantFailure = "True FailedCreate: " // then the apiserver's message
	eventually(t, 20*time.Second, "ReplicaFailure FailedCreate on all three", func() (bool, string) {
		got := failures()
		for _, f := range got {
			if !strings.HasPrefix(f, wantFailure) || !strings.Contains(f, wantMsg) {
				return false, fmt.Sprint(got)
			}
		}
		return true, ""
	})
	out := c.MustKubectl(t, "", "get", "rs", "rejected", "-o", "jsonpath={.status.conditions[0].type}={.status.conditions[0].reason}")
	if out != "ReplicaFailure=FailedCreate" {
		t.Fatalf("kubectl sees %q", out)
	}
	out = c.MustKubectl(t, "", "get", "deployment", "rejected-deploy", "-o", `jsonpath={.status.conditions[?(@.type=="ReplicaFailure")].reason}`)
	if out != "FailedCreate" {
		t.Fatalf("kubectl sees the Deployment's ReplicaFailure reason as %q", out)
	}

	if _, err := cs.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "missing-class"}, Value: 10}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "pods created and ReplicaFailure gone", func() (bool, string) {
		n, _ := countPods(ctx, cs, ns, "app=rejected")
		m, _ := countPods(ctx, cs, ns, "app=rejected-rc")
		k, _ := countPods(ctx, cs, ns, "app=rejected-deploy")
		got := failures()
		return n == 2 && m == 1 && k == 1 && got["rs"] == "" && got["rc"] == "" && got["deployment"] == "",
			fmt.Sprintf("%d+%d+%d pods, conditions %v", n, m, k, got)
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
