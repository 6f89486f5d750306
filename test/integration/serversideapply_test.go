package integration

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	eventsv1ac "k8s.io/client-go/applyconfigurations/events/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"minik/internal/testcluster"
)

const ssaDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: IMAGE}]
`

func ssaManifest(replicas, image string) string {
	return strings.NewReplacer("REPLICAS", replicas, "IMAGE", image).Replace(ssaDeployment)
}

// managers returns "manager/operation[/subresource]" of each
// managedFields entry, sorted (the server orders entries by operation,
// time to the second, then name).
func managers(entries []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, e := range entries {
		s := e.Manager + "/" + string(e.Operation)
		if e.Subresource != "" {
			s += "/" + e.Subresource
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// owns reports whether the entry of manager owns the FieldsV1 path
// given as nested keys ("f:spec", "f:replicas").
func owns(entries []metav1.ManagedFieldsEntry, manager string, path ...string) bool {
	for _, e := range entries {
		if e.Manager != manager || e.FieldsV1 == nil {
			continue
		}
		var node map[string]any
		if json.Unmarshal(e.FieldsV1.Raw, &node) != nil {
			return false
		}
		found := true
		for _, p := range path {
			next, ok := node[p].(map[string]any)
			if !ok {
				found = false
				break
			}
			node = next
		}
		if found {
			return true
		}
	}
	return false
}

// TestServerSideApply drives server-side apply as kubectl and client-go
// use it: create and change with `kubectl apply --server-side`, the
// conflict between two managers on .spec.replicas and --force-conflicts,
// client-go's typed Apply, and managedFields on every kind of write.
func TestServerSideApply(t *testing.T) {
	c := testcluster.StartAPIOnly(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("minik up log:\n%s", c.Log())
		}
	})
	kubectl := func(stdin string, args ...string) string { t.Helper(); return c.MustKubectl(t, stdin, args...) }
	cs := c.Clientset()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("kubectl apply --server-side creates, then changes the object", func(t *testing.T) {
		cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa, namespace: default}\ndata: {a: \"1\"}\n"
		if out := kubectl(cm, "apply", "--server-side", "-f", "-"); strings.TrimSpace(out) != "configmap/ssa serverside-applied" {
			t.Errorf("first apply: %q", out)
		}
		out := kubectl(strings.Replace(cm, `a: "1"`, `b: "2"`, 1), "apply", "--server-side", "-f", "-")
		if strings.TrimSpace(out) != "configmap/ssa serverside-applied" {
			t.Errorf("second apply: %q", out)
		}
		got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "ssa", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The field a no longer applied is removed: its only manager let go.
		if len(got.Data) != 1 || got.Data["b"] != "2" {
			t.Errorf("data %v, want only b=2", got.Data)
		}
		if m := managers(got.ManagedFields); len(m) != 1 || m[0] != "kubectl/Apply" {
			t.Errorf("managers %v, want [kubectl/Apply]", m)
		}
		if !owns(got.ManagedFields, "kubectl", "f:data", "f:b") || owns(got.ManagedFields, "kubectl", "f:data", "f:a") {
			t.Errorf("kubectl's fields: %s", got.ManagedFields[0].FieldsV1.Raw)
		}
		yaml := kubectl("", "get", "configmap", "ssa", "-o", "yaml")
		if strings.Contains(yaml, "managedFields") {
			t.Errorf("kubectl get -o yaml shows managedFields:\n%s", yaml)
		}
		yaml = kubectl("", "get", "configmap", "ssa", "-o", "yaml", "--show-managed-fields")
		if !strings.Contains(yaml, "manager: kubectl") || !strings.Contains(yaml, "operation: Apply") {
			t.Errorf("--show-managed-fields:\n%s", yaml)
		}
	})

	t.Run("kubectl apply --server-side of a Pod and a Service, twice", func(t *testing.T) {
		objs := `apiVersion: v1
kind: Pod
metadata: {name: ssa-pod, namespace: default, labels: {app: ssa}}
spec:
  containers: [{name: c, image: busybox, ports: [{containerPort: 80}]}]
---
apiVersion: v1
kind: Service
metadata: {name: ssa-svc, namespace: default}
spec:
  selector: {app: ssa}
  ports: [{port: 80}]
`
		if out := kubectl(objs, "apply", "--server-side", "-f", "-"); !strings.Contains(out, "pod/ssa-pod serverside-applied") || !strings.Contains(out, "service/ssa-svc serverside-applied") {
			t.Errorf("first apply: %s", out)
		}
		out := kubectl(strings.Replace(objs, "{app: ssa}}", "{app: ssa, tier: web}}", 1), "apply", "--server-side", "-f", "-")
		if !strings.Contains(out, "pod/ssa-pod serverside-applied") {
			t.Errorf("second apply: %s", out)
		}
		if got := kubectl("", "get", "pod", "ssa-pod", "-o", "jsonpath={.metadata.labels.tier} {.spec.dnsPolicy}"); got != "web ClusterFirst" {
			t.Errorf("pod after the second apply: %q", got)
		}
		if got := kubectl("", "get", "svc", "ssa-svc", "-o", "jsonpath={.spec.clusterIP}"); got == "" {
			t.Errorf("the applied Service has no cluster IP")
		}
	})

	t.Run("two managers conflict on .spec.replicas until --force-conflicts", func(t *testing.T) {
		kubectl(ssaManifest("2", "busybox"), "apply", "-f", "-") // client-side: kubectl-client-side-apply
		out, err := c.Kubectl(ctx, ssaManifest("3", "busybox"), "apply", "--server-side", "--field-manager=deployer", "-f", "-")
		if err == nil {
			t.Fatalf("server-side apply over a client-side one succeeded: %s", out)
		}
		want := `error: Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas`
		if !strings.Contains(out, want) {
			t.Errorf("conflict:\n%s\nwant %s", out, want)
		}
		out = kubectl(ssaManifest("3", "busybox"), "apply", "--server-side", "--field-manager=deployer", "--force-conflicts", "-f", "-")
		if strings.TrimSpace(out) != "deployment.apps/web serverside-applied" {
			t.Errorf("forced apply: %q", out)
		}
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 3 {
			t.Errorf("replicas %d, want 3", *d.Spec.Replicas)
		}
		if !owns(d.ManagedFields, "deployer", "f:spec", "f:replicas") || owns(d.ManagedFields, "kubectl-client-side-apply", "f:spec", "f:replicas") {
			t.Errorf("replicas did not move to deployer: %v", d.ManagedFields)
		}
		// kubectl then moves what kubectl-client-side-apply owned to the
		// applying manager (its csaupgrade JSON patch of managedFields)
		// and applies again.
		if m := strings.Join(managers(d.ManagedFields), " "); m != "deployer/Apply" {
			t.Errorf("managers %s", m)
		}

		// The same conflict through client-go: a 409 whose Status names
		// the manager and the field.
		_, err = cs.AppsV1().Deployments("default").Apply(ctx,
			appsv1ac.Deployment("web", "default").WithSpec(appsv1ac.DeploymentSpec().WithReplicas(5)),
			metav1.ApplyOptions{FieldManager: "scaler"})
		var se *apierrors.StatusError
		if !errors.As(err, &se) {
			t.Fatalf("apply by a second manager: %v, want a 409", err)
		}
		st := se.ErrStatus
		if st.Code != 409 || st.Reason != metav1.StatusReasonConflict || st.Details == nil || st.Details.Name != "web" ||
			st.Details.Group != "apps" || st.Details.Kind != "deployments" ||
			st.Message != `Apply failed with 1 conflict: conflict with "deployer": .spec.replicas` ||
			len(st.Details.Causes) != 1 || st.Details.Causes[0].Type != metav1.CauseTypeFieldManagerConflict ||
			st.Details.Causes[0].Field != ".spec.replicas" || st.Details.Causes[0].Message != `conflict with "deployer"` {
			t.Errorf("conflict status: %+v %+v", st, st.Details)
		}
		body, err := cs.AppsV1().RESTClient().Patch(types.ApplyPatchType).Namespace("default").Resource("deployments").Name("web").
			Param("fieldManager", "scaler").Body([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":6}}`)).DoRaw(ctx)
		if err == nil || !strings.Contains(string(body), `"kind":"Status","apiVersion":"v1"`) || !strings.Contains(string(body), `"code":409`) {
			t.Errorf("raw conflict: %v %s", err, body)
		}
	})

	t.Run("kubectl apply --server-side takes over what kubectl applied client-side", func(t *testing.T) {
		m := strings.Replace(ssaManifest("2", "busybox"), "name: web", "name: migrate", 1)
		kubectl(m, "apply", "-f", "-")
		// As upstream: the fields of the last-applied annotation are no
		// conflict for the manager "kubectl", which takes them over.
		out := kubectl(strings.Replace(m, "replicas: 2", "replicas: 3", 1), "apply", "--server-side", "-f", "-")
		if strings.TrimSpace(out) != "deployment.apps/migrate serverside-applied" {
			t.Errorf("migrating apply: %q", out)
		}
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "migrate", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 3 || !owns(d.ManagedFields, "kubectl", "f:spec", "f:replicas") {
			t.Errorf("replicas %d, managers %v", *d.Spec.Replicas, managers(d.ManagedFields))
		}
		// The annotation follows, so a later client-side apply still works.
		if a := d.Annotations["kubectl.kubernetes.io/last-applied-configuration"]; !strings.Contains(a, `"replicas":3`) {
			t.Errorf("last-applied-configuration not updated: %s", a)
		}
		kubectl(strings.Replace(m, "replicas: 2", "replicas: 1", 1), "apply", "-f", "-")
	})

	t.Run("an apply without fieldManager and a force outside apply are 422", func(t *testing.T) {
		for _, tc := range []struct {
			patchType types.PatchType
			params    map[string]string
			want      string
		}{
			{types.ApplyPatchType, nil, `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`},
			{types.MergePatchType, map[string]string{"force": "true"}, `PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch`},
		} {
			req := cs.CoreV1().RESTClient().Patch(tc.patchType).Namespace("default").Resource("configmaps").Name("ssa").
				Body([]byte(`{"apiVersion":"v1","kind":"ConfigMap","data":{"x":"1"}}`))
			for k, v := range tc.params {
				req = req.Param(k, v)
			}
			err := req.Do(ctx).Error()
			if !apierrors.IsInvalid(err) || err.Error() != tc.want {
				t.Errorf("%s: %v, want 422 %q", tc.patchType, err, tc.want)
			}
		}
	})

	t.Run("client-go Apply creates and updates a Deployment and a ConfigMap", func(t *testing.T) {
		opts := metav1.ApplyOptions{FieldManager: "operator"}
		d, err := cs.AppsV1().Deployments("default").Apply(ctx, appsv1ac.Deployment("api", "default").
			WithSpec(appsv1ac.DeploymentSpec().WithReplicas(1).
				WithSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"app": "api"})).
				WithTemplate(corev1ac.PodTemplateSpec().WithLabels(map[string]string{"app": "api"}).
					WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("c").WithImage("busybox"))))), opts)
		if err != nil {
			t.Fatal(err)
		}
		if m := managers(d.ManagedFields); len(m) != 1 || m[0] != "operator/Apply" || d.UID == "" || d.Generation != 1 {
			t.Errorf("created: managers %v uid %q generation %d", m, d.UID, d.Generation)
		}
		if d.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
			t.Errorf("the applied Deployment was not defaulted: %+v", d.Spec.Template.Spec)
		}
		cm, err := cs.CoreV1().ConfigMaps("default").Apply(ctx, corev1ac.ConfigMap("settings", "default").
			WithData(map[string]string{"mode": "fast"}), opts)
		if err != nil {
			t.Fatal(err)
		}
		cm, err = cs.CoreV1().ConfigMaps("default").Apply(ctx, corev1ac.ConfigMap("settings", "default").
			WithData(map[string]string{"mode": "slow"}), metav1.ApplyOptions{FieldManager: "tuner", Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data["mode"] != "slow" || !owns(cm.ManagedFields, "tuner", "f:data", "f:mode") || owns(cm.ManagedFields, "operator", "f:data", "f:mode") {
			t.Errorf("forced ConfigMap apply: %v %v", cm.Data, cm.ManagedFields)
		}
	})

	t.Run("apply on a view of another kind's storage (events.k8s.io Events)", func(t *testing.T) {
		ev, err := cs.EventsV1().Events("default").Apply(ctx, eventsv1ac.Event("e1", "default").
			WithEventTime(metav1.NowMicro()).WithReportingController("x.io/c").WithReportingInstance("i").
			WithAction("Test").WithReason("Tested").WithType("Normal").WithNote("hello").
			WithRegarding(corev1ac.ObjectReference().WithKind("Pod").WithName("p").WithNamespace("default")),
			metav1.ApplyOptions{FieldManager: "recorder"})
		if err != nil {
			t.Fatal(err)
		}
		if m := managers(ev.ManagedFields); len(m) != 1 || m[0] != "recorder/Apply" || ev.Note != "hello" {
			t.Errorf("applied event: %v %q", m, ev.Note)
		}
	})

	t.Run("create, update and patch each record their manager", func(t *testing.T) {
		cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{FieldManager: "creator"})
		if err != nil {
			t.Fatal(err)
		}
		e := cm.ManagedFields
		if len(e) != 1 || e[0].Manager != "creator" || e[0].Operation != metav1.ManagedFieldsOperationUpdate ||
			e[0].APIVersion != "v1" || e[0].FieldsType != "FieldsV1" || e[0].Time == nil || !owns(e, "creator", "f:data", "f:a") {
			t.Fatalf("after create: %+v", e)
		}
		cm.Data["b"] = "2"
		if cm, err = cs.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{FieldManager: "updater"}); err != nil {
			t.Fatal(err)
		}
		if !owns(cm.ManagedFields, "updater", "f:data", "f:b") || owns(cm.ManagedFields, "updater", "f:data", "f:a") {
			t.Errorf("after update: %v", cm.ManagedFields)
		}
		cm, err = cs.CoreV1().ConfigMaps("default").Patch(ctx, "plain", types.MergePatchType, []byte(`{"data":{"c":"3"}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Without fieldManager the manager is the User-Agent's first
		// part (this test binary's name).
		if m := strings.Join(managers(cm.ManagedFields), " "); m != "creator/Update integration.test/Update updater/Update" ||
			!owns(cm.ManagedFields, "integration.test", "f:data", "f:c") {
			t.Errorf("after patch: %s", m)
		}
		kubectl("", "label", "configmap", "plain", "team=a")
		got, _ := cs.CoreV1().ConfigMaps("default").Get(ctx, "plain", metav1.GetOptions{})
		if !owns(got.ManagedFields, "kubectl-label", "f:metadata", "f:labels", "f:team") {
			t.Errorf("kubectl label: %v", managers(got.ManagedFields))
		}
	})

	t.Run("status writes are recorded under their own manager and subresource", func(t *testing.T) {
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Status = appsv1.DeploymentStatus{Replicas: 1, ObservedGeneration: d.Generation}
		if d, err = cs.AppsV1().Deployments("default").UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: "controller"}); err != nil {
			t.Fatal(err)
		}
		m := strings.Join(managers(d.ManagedFields), " ")
		if m != "controller/Update/status operator/Apply" || !owns(d.ManagedFields, "controller", "f:status", "f:replicas") {
			t.Errorf("after a status update: %s", m)
		}
		_, err = cs.AppsV1().Deployments("default").ApplyStatus(ctx, appsv1ac.Deployment("api", "default").
			WithStatus(appsv1ac.DeploymentStatus().WithReadyReplicas(1)), metav1.ApplyOptions{FieldManager: "prober"})
		if err != nil {
			t.Fatal(err)
		}
		scale, err := cs.AppsV1().Deployments("default").GetScale(ctx, "api", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		scale.Spec.Replicas = 4
		if _, err := cs.AppsV1().Deployments("default").UpdateScale(ctx, "api", scale, metav1.UpdateOptions{FieldManager: "autoscaler"}); err != nil {
			t.Fatal(err)
		}
		d, _ = cs.AppsV1().Deployments("default").Get(ctx, "api", metav1.GetOptions{})
		m = strings.Join(managers(d.ManagedFields), " ")
		if m != "autoscaler/Update/scale controller/Update/status operator/Apply prober/Apply/status" ||
			d.Status.ReadyReplicas != 1 || *d.Spec.Replicas != 4 || !owns(d.ManagedFields, "autoscaler", "f:spec", "f:replicas") {
			t.Errorf("after status apply and scale: %s, ready %d replicas %d", m, d.Status.ReadyReplicas, *d.Spec.Replicas)
		}
	})
}
