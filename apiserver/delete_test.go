package apiserver

import (
	"encoding/json"
	"net/http"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A delete that leaves the object terminating answers 200 with it, its
// generation one higher (being deleted is a new generation, as upstream's
// BeforeDelete and markAsDeleting bump it); 202 only when the client
// asked for a cascade with orphanDependents=false.
func TestDeleteOfATerminatingObject(t *testing.T) {
	ts := startTestServer(t)
	admin := ts.client(t)
	ctx := t.Context()
	if _, err := admin.Pods().Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "running", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"held", "cascade"} {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Finalizers: []string{"example.com/hold"}},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
		if _, err := admin.Deployments().Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		path     string
		body     string
		wantCode int
	}{
		{"a graceful pod delete answers 200", "/api/v1/namespaces/default/pods/running?gracePeriodSeconds=60", "", http.StatusOK},
		{"a delete held by a finalizer answers 200", "/apis/apps/v1/namespaces/default/deployments/held", "", http.StatusOK},
		{"a held delete with orphanDependents=false answers 202", "/apis/apps/v1/namespaces/default/deployments/cascade",
			`{"kind":"DeleteOptions","apiVersion":"v1","orphanDependents":false}`, http.StatusAccepted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, data := ts.do(t, http.MethodDelete, tt.path, tt.body, "Content-Type", "application/json")
			var obj metav1.PartialObjectMetadata
			if err := json.Unmarshal(data, &obj); err != nil {
				t.Fatal(err)
			}
			if code != tt.wantCode {
				t.Errorf("code %d, want %d: %s", code, tt.wantCode, data)
			}
			if obj.DeletionTimestamp == nil || obj.Generation != 2 {
				t.Errorf("deletionTimestamp %v generation %d, want the terminating object at generation 2", obj.DeletionTimestamp, obj.Generation)
			}
		})
	}
}
