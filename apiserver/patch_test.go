package apiserver

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The attack review's second hole: a 2 KB JSON patch of twenty "copy"
// operations doubles the document twenty times. It must be refused once
// the copies pass Kubernetes' limit, quickly and without the memory.
func TestJSONPatchCannotExhaustMemory(t *testing.T) {
	ts := startTestServer(t)
	ctx := t.Context()
	admin := ts.client(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bomb", Namespace: "default"},
		Data: map[string]string{"seed": strings.Repeat("x", 1024)}}
	if _, err := admin.ConfigMaps().Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for i := range 20 {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/data","path":"/data/k%d"}`, i))
	}
	patch := "[" + strings.Join(ops, ",") + "]"
	if len(patch) > 2048 {
		t.Fatalf("the patch is %d bytes, want the review's 2 KB", len(patch))
	}
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := admin.ConfigMaps().Patch(ctx, "default", "bomb", types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "exceeding the limit") {
		t.Fatalf("doubling patch: err %v, want 422 naming the copy limit", err)
	}
	// Unbounded, the twenty copies allocate a gigabyte and take seconds.
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 256<<20 {
		t.Errorf("the refused patch allocated %d MiB", grown>>20)
	}
	t.Logf("refused in %v", time.Since(start))
	if got, err := admin.ConfigMaps().Get(ctx, "default", "bomb", metav1.GetOptions{}); err != nil || len(got.Data) != 1 {
		t.Errorf("after the refused patch: %v, %d keys, want the object unchanged", err, len(got.Data))
	}

	// More operations than Kubernetes allows: 413.
	many := "[" + strings.Repeat(`{"op":"test","path":"/data/seed","value":"x"},`, maxJSONPatchOperations) + `{"op":"test","path":"/data/seed","value":"x"}]`
	_, err = admin.ConfigMaps().Patch(ctx, "default", "bomb", types.JSONPatchType, []byte(many), metav1.PatchOptions{})
	if !apierrors.IsRequestEntityTooLargeError(err) {
		t.Errorf("%d operations: err %v, want 413", maxJSONPatchOperations+1, err)
	}
}

// dryRun values other than All are refused (422, as Kubernetes validates
// the request's options) and nothing is written; dryRun=All writes
// nothing either.
func TestDryRunValuesAreValidated(t *testing.T) {
	ts := startTestServer(t)
	ctx := t.Context()
	admin := ts.client(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "keep", Namespace: "default"}, Data: map[string]string{"a": "1"}}
	if _, err := admin.ConfigMaps().Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := "/api/v1/namespaces/default/configmaps"
	body := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "new"}}
	for _, c := range []struct {
		name, method, path, dryRun string
		body                       any
		want                       int
	}{
		{"a delete with dryRun=true", http.MethodDelete, path + "/keep", "true", nil, http.StatusUnprocessableEntity},
		{"a collection delete with dryRun=yes", http.MethodDelete, path, "yes", nil, http.StatusUnprocessableEntity},
		{"a create with dryRun=1", http.MethodPost, path, "1", body, http.StatusUnprocessableEntity},
		{"a delete with dryRun=All", http.MethodDelete, path + "/keep", "All", nil, http.StatusOK},
		{"a create with dryRun=All", http.MethodPost, path, "All", body, http.StatusCreated},
	} {
		err := admin.Do(ctx, c.method, c.path, map[string][]string{"dryRun": {c.dryRun}}, c.body, nil)
		code := http.StatusOK
		if c.method == http.MethodPost {
			code = http.StatusCreated
		}
		if err != nil {
			code = -1
			if se, ok := err.(apierrors.APIStatus); ok {
				code = int(se.Status().Code)
			}
		}
		if code != c.want {
			t.Errorf("%s: %d (%v), want %d", c.name, code, err, c.want)
		}
	}
	if _, err := admin.ConfigMaps().Get(ctx, "default", "keep", metav1.GetOptions{}); err != nil {
		t.Errorf("after the dry runs: %v, want the config map kept", err)
	}
	if _, err := admin.ConfigMaps().Get(ctx, "default", "new", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after the dry-run create: %v, want NotFound", err)
	}
}

// A patch may not rename or move an object, nor delete it whole; a
// create must name its namespace in the URL.
func TestPatchesKeepNameAndNamespace(t *testing.T) {
	ts := startTestServer(t)
	ctx := t.Context()
	admin := ts.client(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "keep", Namespace: "default"}, Data: map[string]string{"a": "1"}}
	if _, err := admin.ConfigMaps().Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		pt    types.PatchType
		patch string
	}{
		"a rename":                     {types.MergePatchType, `{"metadata":{"name":"other"}}`},
		"a move to another namespace":  {types.MergePatchType, `{"metadata":{"namespace":"kube-system"}}`},
		"a strategic delete of it all": {types.StrategicMergePatchType, `{"$patch":"delete"}`},
		"a JSON patch of the name":     {types.JSONPatchType, `[{"op":"replace","path":"/metadata/name","value":"x"}]`},
	} {
		if _, err := admin.ConfigMaps().Patch(ctx, "default", "keep", c.pt, []byte(c.patch), metav1.PatchOptions{}); !apierrors.IsBadRequest(err) {
			t.Errorf("%s: %v, want 400", name, err)
		}
	}
	got, err := admin.ConfigMaps().Get(ctx, "default", "keep", metav1.GetOptions{})
	if err != nil || got.Data["a"] != "1" {
		t.Errorf("after the refused patches: %v %v", err, got)
	}
	body := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": "default"}}
	err = admin.Do(ctx, http.MethodPost, "/api/v1/configmaps", nil, body, nil)
	if se, ok := err.(apierrors.APIStatus); !ok || se.Status().Code != http.StatusMethodNotAllowed {
		t.Errorf("a create at the cluster scope: %v, want 405", err)
	}
}
