package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A binding places the pod, copies the Binding's annotations to it and
// clears status.nominatedNodeName, as kube-apiserver's binding does.
func TestBindingClearsTheNominationAndCopiesAnnotations(t *testing.T) {
	ts := startTestServer(t)
	c := ts.client(t)
	ctx := t.Context()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Annotations: map[string]string{"kept": "yes"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	created, err := c.Pods().Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status.NominatedNodeName = "a"
	if _, err := c.Pods().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = c.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default",
		Annotations: map[string]string{"example.com/placed-by": "test"}},
		Target: corev1.ObjectReference{Kind: "Node", Name: "a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Pods().Get(ctx, "default", "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.NodeName != "a" || got.Status.NominatedNodeName != "" || got.Annotations["example.com/placed-by"] != "test" ||
		got.Annotations["kept"] != "yes" {
		t.Fatalf("bound pod: node %q, nominatedNodeName %q, annotations %v; want node a, no nomination, both annotations",
			got.Spec.NodeName, got.Status.NominatedNodeName, got.Annotations)
	}
}
