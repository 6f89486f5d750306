package apiserver

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"k8s.io/apimachinery/pkg/types"

	"minik/apiserver/registry"
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
	var before goruntime.MemStats
	goruntime.ReadMemStats(&before)
	start := time.Now()
	_, err := admin.ConfigMaps().Patch(ctx, "default", "bomb", types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
	var after goruntime.MemStats
	goruntime.ReadMemStats(&after)
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

// TestStatusPatchesMatchTheWholeObjectsPatch: a merge or strategic merge
// patch of the status alone is applied to the status alone, and gives the
// object (and the warnings, and the errors) the whole object's patch gives.
func TestStatusPatchesMatchTheWholeObjectsPatch(t *testing.T) {
	var podRes *registry.Resource
	for _, r := range registry.All() {
		if r.Resource == "pods" && r.Group == "" {
			podRes = r
		}
	}
	h := &resourceHandler{res: podRes}
	at := metav1.NewTime(time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC))
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", ResourceVersion: "7", CreationTimestamp: at, Labels: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"cpu": resource.MustParse("100m")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, NominatedNodeName: "old", Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", LastTransitionTime: at},
			{Type: "Custom", Status: corev1.ConditionTrue, LastTransitionTime: at}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Image: "busybox", RestartCount: 2}}},
	}
	cases := []struct {
		name, patchType, patch, mode string
		statusOnly                   bool
	}{
		{"the scheduler's nomination and condition", strategicMergePatchType,
			`{"status":{"$setElementOrder/conditions":[{"type":"PodScheduled"},{"type":"Custom"}],"conditions":[{"type":"PodScheduled","message":"0/1 nodes"}],"nominatedNodeName":"n1"}}`, fieldValidationWarn, true},
		{"a condition removed by its key", strategicMergePatchType, `{"status":{"conditions":[{"type":"Custom","$patch":"delete"}]}}`, fieldValidationWarn, true},
		{"the status replaced", strategicMergePatchType, `{"status":{"$patch":"replace","phase":"Running"}}`, fieldValidationWarn, true},
		{"a field cleared by a merge patch", mergePatchType, `{"status":{"nominatedNodeName":null,"phase":"Failed"}}`, fieldValidationWarn, true},
		{"a list replaced by a merge patch", mergePatchType, `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`, fieldValidationWarn, true},
		{"an unknown status field, warned", strategicMergePatchType, `{"status":{"bogus":1,"phase":"Running"}}`, fieldValidationWarn, true},
		{"an unknown status field, refused", strategicMergePatchType, `{"status":{"bogus":1}}`, fieldValidationStrict, true},
		{"a field of the wrong type", mergePatchType, `{"status":{"phase":3}}`, fieldValidationWarn, true},
		{"a bad directive", strategicMergePatchType, `{"status":{"$retainKeys":[{}]}}`, fieldValidationWarn, true},
		{"the status removed", mergePatchType, `{"status":null}`, fieldValidationWarn, false},
		{"status and labels", mergePatchType, `{"metadata":{"labels":{"a":"c"}},"status":{"phase":"Running"}}`, fieldValidationWarn, false},
		{"a JSON patch of the status", jsonPatchType, `[{"op":"replace","path":"/status/phase","value":"Running"}]`, fieldValidationWarn, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			view := pod.DeepCopy()
			sp, ok := asStatusPatch(c.patchType, view, []byte(c.patch))
			if ok != c.statusOnly {
				t.Fatalf("taken as a status patch: %v, want %v", ok, c.statusOnly)
			}
			fastW, wholeW := httptest.NewRecorder(), httptest.NewRecorder()
			fast, fastErr := h.applyPatchTo(pod.DeepCopy(), c.patchType, []byte(c.patch), c.mode, fastW)
			var whole runtime.Object
			patched, wholeErr := applyPatch(c.patchType, pod.DeepCopy(), []byte(c.patch))
			if wholeErr == nil {
				whole, wholeErr = decodeInto(podRes, patched, "application/json", c.mode, wholeW)
				if wholeErr != nil {
					wholeErr = patchError(patched, wholeErr)
				}
			}
			if fmt.Sprint(fastErr) != fmt.Sprint(wholeErr) {
				t.Fatalf("error %v, want %v", fastErr, wholeErr)
			}
			if !equality.Semantic.DeepEqual(fast, whole) {
				t.Fatalf("patched object differs:\n%s", cmp.Diff(whole, fast))
			}
			if got, want := fastW.Header().Values("Warning"), wholeW.Header().Values("Warning"); !slices.Equal(got, want) {
				t.Fatalf("warnings %q, want %q", got, want)
			}
			// Where the whole patch succeeds, the status alone did the work.
			if c.statusOnly && wholeErr == nil {
				if err := h.applyStatusPatch(view, sp, c.patchType, c.mode, httptest.NewRecorder()); err != nil {
					t.Fatalf("the status patch failed alone: %v", err)
				}
				if !equality.Semantic.DeepEqual(runtime.Object(view), whole) {
					t.Fatalf("the status patch alone gives:\n%s", cmp.Diff(whole, runtime.Object(view)))
				}
			}
		})
	}
}
