package apiserver

import (
	"net/url"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A kubelet may write its pods' status and mirror pods, but not place,
// evict or exec into pods, as with Kubernetes' node authorizer.
func TestNodesMayNotBindEvictOrExec(t *testing.T) {
	ts := startTestServer(t)
	node := ts.clientAs(t, "system:node:a", "system:nodes")
	ctx := t.Context()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "a", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	created, err := node.Pods().Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a node creating a (mirror) pod: %v", err)
	}
	created.Status.Phase = corev1.PodRunning
	if _, err := node.Pods().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("a node updating pod status: %v", err)
	}
	other := pod.DeepCopy()
	other.Name, other.Spec.NodeName = "unbound", ""
	if _, err := ts.client(t).Pods().Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"bind": func() error {
			return node.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "unbound", Namespace: "default"},
				Target: corev1.ObjectReference{Kind: "Node", Name: "a"}}, metav1.CreateOptions{})
		},
		"evict": func() error {
			return node.Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "default"}})
		},
		"exec": func() error {
			return node.Do(ctx, "GET", "/api/v1/namespaces/default/pods/m/exec", url.Values{"command": {"ls"}}, nil, nil)
		},
		"portforward": func() error {
			return node.Do(ctx, "POST", "/api/v1/namespaces/default/pods/m/portforward", nil, nil, nil)
		},
	} {
		if err := call(); !apierrors.IsForbidden(err) {
			t.Errorf("%s: err %v, want Forbidden", name, err)
		}
	}
}
