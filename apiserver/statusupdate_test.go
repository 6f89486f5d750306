package apiserver

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/client"
)

// TestStatusUpdateMetadata checks what a write to /status may change
// besides the status, as upstream's status strategies decide: the
// metadata (the Namespaces conformance spec patches an annotation with
// the status), never the spec, a Deployment's labels or a Pod's owner
// references.
func TestStatusUpdateMetadata(t *testing.T) {
	ts := startTestServer(t)
	admin := ts.client(t)
	ctx := t.Context()
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "ReplicationController", Name: "rc", UID: "u1"}
	pod := func(name string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "a"},
			OwnerReferences: []metav1.OwnerReference{owner}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		created, err := admin.Pods().Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return created
	}
	tests := []struct {
		name  string
		write func(t *testing.T) // makes and writes the object
		check func(t *testing.T) // reads it back
	}{
		{
			name: "a merge patch of a namespace's status sets the annotation it carries, and the condition",
			write: func(t *testing.T) {
				if _, err := admin.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "status-ns"}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				_, err := admin.Namespaces().Patch(ctx, "", "status-ns", types.MergePatchType,
					[]byte(`{"metadata":{"annotations":{"e2e-patched-ns-status":"yes"}},"status":{"conditions":[{"type":"StatusPatch","status":"True","reason":"E2E"}]}}`),
					metav1.PatchOptions{}, "status")
				if err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T) {
				ns := get(t, ctx, admin.Namespaces(), "", "status-ns")
				if ns.Annotations["e2e-patched-ns-status"] != "yes" || len(ns.Status.Conditions) != 1 || ns.Status.Conditions[0].Reason != "E2E" {
					t.Errorf("annotations %v conditions %v, want both patched", ns.Annotations, ns.Status.Conditions)
				}
			},
		},
		{
			name: "a pod status update that names its resourceVersion changes its labels, not its spec",
			write: func(t *testing.T) {
				p := pod("conditional")
				p.Labels["app"] = "b"
				p.Spec.ActiveDeadlineSeconds = new(int64(5))
				p.Status.Message = "written"
				if _, err := admin.Pods().UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T) {
				p := get(t, ctx, admin.Pods(), "default", "conditional")
				if p.Labels["app"] != "b" || p.Status.Message != "written" || p.Spec.ActiveDeadlineSeconds != nil {
					t.Errorf("labels %v message %q activeDeadlineSeconds %v, want the new labels and status and the old spec", p.Labels, p.Status.Message, p.Spec.ActiveDeadlineSeconds)
				}
			},
		},
		{
			name: "an unconditional pod status update with only the pod's identity keeps its labels (the kubelet's form)",
			write: func(t *testing.T) {
				p := pod("unconditional")
				update := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID}, Status: corev1.PodStatus{Message: "written", QOSClass: p.Status.QOSClass}}
				if _, err := admin.Pods().UpdateStatus(ctx, update, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T) {
				p := get(t, ctx, admin.Pods(), "default", "unconditional")
				if p.Labels["app"] != "a" || len(p.OwnerReferences) != 1 || p.Status.Message != "written" {
					t.Errorf("labels %v owners %v message %q, want the stored metadata and the new status", p.Labels, p.OwnerReferences, p.Status.Message)
				}
			},
		},
		{
			name: "a pod status update cannot change the pod's owner references",
			write: func(t *testing.T) {
				p := pod("owned")
				p.OwnerReferences = nil
				if _, err := admin.Pods().UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T) {
				if p := get(t, ctx, admin.Pods(), "default", "owned"); len(p.OwnerReferences) != 1 {
					t.Errorf("owners %v, want the stored one", p.OwnerReferences)
				}
			},
		},
		{
			name: "a deployment status patch cannot change its labels but sets its annotations",
			write: func(t *testing.T) {
				d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "a"}},
					Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}},
						Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}},
							Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
				if _, err := admin.Deployments().Create(ctx, d, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				_, err := admin.Deployments().Patch(ctx, "default", "web", types.MergePatchType,
					[]byte(`{"metadata":{"labels":{"app":"b"},"annotations":{"patched":"yes"}},"status":{"observedGeneration":7}}`), metav1.PatchOptions{}, "status")
				if err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T) {
				d := get(t, ctx, admin.Deployments(), "default", "web")
				if d.Labels["app"] != "a" || d.Annotations["patched"] != "yes" || d.Status.ObservedGeneration != 7 {
					t.Errorf("labels %v annotations %v observedGeneration %d, want the old labels, the new annotation and status", d.Labels, d.Annotations, d.Status.ObservedGeneration)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.write(t)
			tt.check(t)
		})
	}
}

func get[T any](t *testing.T, ctx context.Context, api *client.Typed[T], ns, name string) *T {
	t.Helper()
	obj, err := api.Get(ctx, ns, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return obj
}
