package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"minik/internal/testcluster"
)

// crontabCRD is upstream's CronTab example, with a status and a scale
// subresource, printer columns, a default and two served versions (v1
// stored, v1beta1 served too).
const crontabCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.selector
    additionalPrinterColumns:
    - {name: Spec, type: string, jsonPath: .spec.cronSpec}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [cronSpec]
            properties:
              cronSpec: {type: string, pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'}
              image: {type: string}
              replicas: {type: integer, minimum: 1, maximum: 10, default: 1}
              mode: {type: string, enum: [fast, slow]}
          status:
            type: object
            properties:
              replicas: {type: integer}
              selector: {type: string}
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

const crontab = `
apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: nightly
spec:
  cronSpec: "* * * * */5"
  image: my-cron-image
`

func TestCustomResourceDefinitions(t *testing.T) {
	c := testcluster.StartAPIOnly(t)
	kubectl := func(stdin string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return c.Kubectl(ctx, stdin, args...)
	}

	t.Run("apply of a kind nobody defined says no matches for kind", func(t *testing.T) {
		out, err := kubectl(crontab, "apply", "-f", "-")
		if err == nil || !strings.Contains(out, `no matches for kind "CronTab" in version "stable.example.com/v1"`) {
			t.Fatalf("want no matches for kind, got %v: %s", err, out)
		}
	})
	t.Run("a CRD is established and its kind served within a second", func(t *testing.T) {
		c.MustKubectl(t, crontabCRD, "apply", "-f", "-")
		start := time.Now()
		disco := c.Clientset().Discovery()
		for {
			if list, err := disco.ServerResourcesForGroupVersion("stable.example.com/v1"); err == nil && len(list.APIResources) > 0 {
				break
			}
			// A second on an idle machine; CI machines are shared.
			if time.Since(start) > 3*time.Second {
				t.Fatalf("not served %v after the CRD was created", time.Since(start))
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("served %v after the CRD was created", time.Since(start))
		out := c.MustKubectl(t, "", "wait", "--for=condition=Established", "--timeout=10s", "crd/crontabs.stable.example.com")
		if !strings.Contains(out, "condition met") {
			t.Fatalf("wait: %s", out)
		}
		if got := c.MustKubectl(t, "", "get", "crd", "crontabs.stable.example.com", "-o", "jsonpath={.status.acceptedNames.kind} {.status.conditions[?(@.type==\"NamesAccepted\")].status}"); got != "CronTab True" {
			t.Fatalf("status: %q", got)
		}
		out = c.MustKubectl(t, crontab, "apply", "-f", "-")
		if !strings.Contains(out, "crontab.stable.example.com/nightly created") {
			t.Fatalf("apply: %s", out)
		}
	})
	t.Run("kubectl get shows the printer columns, by short name and category", func(t *testing.T) {
		out := c.MustKubectl(t, "", "get", "ct")
		for _, want := range []string{"NAME", "SPEC", "REPLICAS", "AGE", "nightly", "* * * * */5", " 1 "} {
			if !strings.Contains(out, want) {
				t.Errorf("missing %q in\n%s", want, out)
			}
		}
		if out := c.MustKubectl(t, "", "get", "all", "-o", "name"); !strings.Contains(out, "crontab.stable.example.com/nightly") {
			t.Errorf("get all: %s", out)
		}
	})
	t.Run("kubectl explain reads the schema and label selectors select", func(t *testing.T) {
		if out := c.MustKubectl(t, "", "explain", "crontab.spec.replicas"); !strings.Contains(out, "replicas") || !strings.Contains(out, "<integer>") {
			t.Errorf("explain: %s", out)
		}
		c.MustKubectl(t, "", "label", "crontab", "nightly", "tier=batch")
		if out := c.MustKubectl(t, "", "get", "crontabs", "-l", "tier=batch", "-o", "name"); strings.TrimSpace(out) != "crontab.stable.example.com/nightly" {
			t.Errorf("label selector: %q", out)
		}
		if out := c.MustKubectl(t, "", "get", "crontabs", "-l", "tier=web", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Errorf("label selector matched: %q", out)
		}
	})
	t.Run("server-side apply works on custom objects: managedFields, conflicts, force", func(t *testing.T) {
		ssa := strings.Replace(strings.Replace(crontab, "nightly", "applied", 1), "my-cron-image", "img:1", 1)
		if out := c.MustKubectl(t, ssa, "apply", "--server-side", "--field-manager=alice", "-f", "-"); !strings.Contains(out, "crontab.stable.example.com/applied serverside-applied") {
			t.Fatalf("apply --server-side: %s", out)
		}
		managers := c.MustKubectl(t, "", "get", "crontab", "applied", "--show-managed-fields", "-o", "jsonpath={.metadata.managedFields[*].manager}")
		if !strings.Contains(managers, "alice") {
			t.Fatalf("managers %q, want alice", managers)
		}
		other := strings.Replace(ssa, "img:1", "img:2", 1)
		out, err := kubectl(other, "apply", "--server-side", "--field-manager=bob", "-f", "-")
		if err == nil || !strings.Contains(out, `conflict with "alice": .spec.image`) {
			t.Fatalf("a second manager changing alice's field: %v %s, want a conflict naming alice and .spec.image", err, out)
		}
		c.MustKubectl(t, other, "apply", "--server-side", "--field-manager=bob", "--force-conflicts", "-f", "-")
		if got := c.MustKubectl(t, "", "get", "crontab", "applied", "-o", "jsonpath={.spec.image}"); got != "img:2" {
			t.Fatalf("image after a forced apply: %q", got)
		}
		c.MustKubectl(t, "", "delete", "crontab", "applied")
	})
	t.Run("the default is applied and every served version reads the object", func(t *testing.T) {
		if got := c.MustKubectl(t, "", "get", "crontabs.v1beta1.stable.example.com", "nightly", "-o", "jsonpath={.apiVersion} {.spec.replicas}"); got != "stable.example.com/v1beta1 1" {
			t.Fatalf("v1beta1: %q", got)
		}
	})
	t.Run("an invalid object gets 422 with field causes", func(t *testing.T) {
		bad := strings.Replace(crontab, "image: my-cron-image", "image: my-cron-image\n  replicas: \"three\"\n  mode: medium", 1)
		bad = strings.Replace(bad, `cronSpec: "* * * * */5"`, `cronSpec: "nope"`, 1)
		out, err := kubectl(bad, "apply", "-f", "-")
		for _, want := range []string{
			`spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`,
			`spec.mode: Unsupported value: "medium": supported values: "fast", "slow"`,
			`spec.cronSpec: Invalid value: "nope": spec.cronSpec in body should match`,
		} {
			if err == nil || !strings.Contains(out, want) {
				t.Errorf("want %q, got %v: %s", want, err, out)
			}
		}
		out, err = kubectl(strings.Replace(crontab, "image: my-cron-image", "image: x\n  imagePullPolicy: Always", 1), "apply", "-f", "-")
		if err == nil || !strings.Contains(out, `unknown field "spec.imagePullPolicy"`) {
			t.Errorf("unknown field: %v: %s", err, out)
		}
	})
	t.Run("the status subresource ignores spec changes and the main resource ignores status", func(t *testing.T) {
		c.MustKubectl(t, "", "patch", "crontab", "nightly", "--subresource=status", "--type=merge",
			"-p", `{"spec":{"image":"other"},"status":{"replicas":3,"selector":"app=cron"}}`)
		if got := c.MustKubectl(t, "", "get", "crontab", "nightly", "-o", "jsonpath={.spec.image} {.status.replicas} {.metadata.generation}"); got != "my-cron-image 3 1" {
			t.Fatalf("after status patch: %q", got)
		}
		c.MustKubectl(t, "", "patch", "crontab", "nightly", "--type=merge", "-p", `{"spec":{"image":"new"},"status":{"replicas":9}}`)
		if got := c.MustKubectl(t, "", "get", "crontab", "nightly", "-o", "jsonpath={.spec.image} {.status.replicas} {.metadata.generation}"); got != "new 3 2" {
			t.Fatalf("after main patch: %q", got)
		}
	})
	t.Run("kubectl scale goes through the scale subresource", func(t *testing.T) {
		c.MustKubectl(t, "", "scale", "crontab", "nightly", "--replicas=4")
		if got := c.MustKubectl(t, "", "get", "crontab", "nightly", "-o", "jsonpath={.spec.replicas}"); got != "4" {
			t.Fatalf("replicas: %q", got)
		}
	})
	t.Run("a dynamic informer sees add, update and delete, with a field selector", func(t *testing.T) {
		dyn := dynamic.NewForConfigOrDie(c.RESTConfig())
		gvr := schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}
		factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, "default", func(o *metav1.ListOptions) {
			o.FieldSelector = "metadata.name=watched"
		})
		events := make(chan string, 10)
		inf := factory.ForResource(gvr).Informer()
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(o any) { events <- "add " + o.(*unstructured.Unstructured).GetName() },
			UpdateFunc: func(_, o any) {
				img, _, _ := unstructured.NestedString(o.(*unstructured.Unstructured).Object, "spec", "image")
				events <- "update " + img
			},
			DeleteFunc: func(o any) { events <- "delete" },
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		factory.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatal("informer did not sync")
		}
		c.MustKubectl(t, strings.Replace(crontab, "nightly", "watched", 1), "apply", "-f", "-")
		c.MustKubectl(t, "", "patch", "crontab", "watched", "--type=merge", "-p", `{"spec":{"image":"v2"}}`)
		c.MustKubectl(t, "", "delete", "crontab", "watched")
		for _, want := range []string{"add watched", "update v2", "delete"} {
			select {
			case got := <-events:
				if got != want {
					t.Fatalf("event %q, want %q", got, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no %q event", want)
			}
		}
	})
	t.Run("a cluster-scoped kind, and field selectors on metadata", func(t *testing.T) {
		cluster := strings.NewReplacer("crontabs", "clustertabs", "crontab", "clustertab", "CronTab", "ClusterTab",
			"scope: Namespaced", "scope: Cluster", "shortNames: [ct]", "shortNames: [clt]").Replace(crontabCRD)
		c.MustKubectl(t, cluster, "apply", "-f", "-")
		c.MustKubectl(t, "", "wait", "--for=condition=Established", "--timeout=10s", "crd/clustertabs.stable.example.com")
		obj := strings.NewReplacer("CronTab", "ClusterTab", "name: nightly", "name: global").Replace(crontab)
		var out string
		// kubectl's discovery may lag the new kind; each try is a kubectl run.
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			var err error
			if out, err = kubectl(obj, "apply", "-f", "-"); err == nil {
				break
			}
		}
		if !strings.Contains(out, "clustertab.stable.example.com/global created") {
			t.Fatalf("apply: %s", out)
		}
		if got := c.MustKubectl(t, "", "get", "clustertab", "global", "-o", "jsonpath={.metadata.namespace}|{.metadata.name}"); got != "|global" {
			t.Fatalf("cluster-scoped object: %q", got)
		}
		if out := c.MustKubectl(t, "", "get", "crontabs", "-A", "--field-selector", "metadata.namespace=default,metadata.name=nightly", "-o", "name"); strings.TrimSpace(out) != "crontab.stable.example.com/nightly" {
			t.Fatalf("field selector: %q", out)
		}
		if out, err := kubectl("", "get", "crontabs", "--field-selector", "spec.image=x"); err == nil || !strings.Contains(out, "field label not supported: spec.image") {
			t.Fatalf("unsupported field selector: %v %s", err, out)
		}
		c.MustKubectl(t, "", "delete", "crd", "clustertabs.stable.example.com", "--timeout=20s")
	})
	t.Run("a restarted apiserver serves the custom objects at once", func(t *testing.T) {
		c.Restart()
		if got := c.MustKubectl(t, "", "get", "crontab", "nightly", "-o", "jsonpath={.spec.replicas}"); got != "4" {
			t.Fatalf("after restart: %q", got)
		}
	})
	t.Run("a CRD with CEL rules is refused with a clear message", func(t *testing.T) {
		cel := strings.Replace(strings.Replace(crontabCRD, "crontabs", "celtabs", -1), "CronTab", "CelTab", 1)
		cel = strings.Replace(cel, "shortNames: [ct]", "shortNames: [cel]", 1)
		cel = strings.Replace(cel, "            required: [cronSpec]\n", "            required: [cronSpec]\n            x-kubernetes-validations:\n            - rule: self.replicas < 5\n", 1)
		out, err := kubectl(cel, "apply", "-f", "-")
		if err == nil || !strings.Contains(out, "minik does not evaluate CEL validation rules") || !strings.Contains(out, "x-kubernetes-validations") {
			t.Fatalf("want a 422 about CEL, got %v: %s", err, out)
		}
	})
	t.Run("a CRD whose names are taken is not established", func(t *testing.T) {
		dup := strings.Replace(crontabCRD, "name: crontabs.stable.example.com", "name: crontabz.stable.example.com", 1)
		dup = strings.Replace(dup, "plural: crontabs", "plural: crontabz", 1)
		c.MustKubectl(t, dup, "apply", "-f", "-")
		var got string
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			got = c.MustKubectl(t, "", "get", "crd", "crontabz.stable.example.com", "-o",
				`jsonpath={.status.conditions[?(@.type=="NamesAccepted")].reason} {.status.conditions[?(@.type=="Established")].status}`)
			if strings.HasPrefix(got, "SingularConflict") {
				break
			}
		}
		if got != "SingularConflict False" {
			t.Fatalf("conditions: %q", got)
		}
		c.MustKubectl(t, "", "delete", "crd", "crontabz.stable.example.com")
	})
	t.Run("deleting the CRD removes its objects and its discovery entries", func(t *testing.T) {
		c.MustKubectl(t, "", "delete", "crd", "crontabs.stable.example.com", "--timeout=20s")
		// The delete returns once the CRD is gone; serving stops a moment later.
		var out string
		var err error
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if _, err = kubectl("", "get", "--raw", "/apis/stable.example.com/v1/namespaces/default/crontabs"); err != nil {
				break
			}
		}
		// kubectl's discovery cache may still list the kind: then the
		// list itself is NotFound.
		if out, err = kubectl("", "get", "crontabs"); err == nil || !strings.Contains(out, `the server doesn't have a resource type "crontabs"`) &&
			!strings.Contains(out, "the server could not find the requested resource") {
			t.Fatalf("after delete: %v: %s", err, out)
		}
		if out := c.MustKubectl(t, "", "get", "--raw", "/apis"); strings.Contains(out, "stable.example.com") {
			t.Fatalf("group still in discovery: %s", out)
		}
		c.MustKubectl(t, crontabCRD, "apply", "-f", "-")
		c.MustKubectl(t, "", "wait", "--for=condition=Established", "--timeout=10s", "crd/crontabs.stable.example.com")
		if out := c.MustKubectl(t, "", "get", "crontabs", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Fatalf("objects survived their CRD: %q", out)
		}
	})
}

// The controller manager, under its own identity, collects custom
// objects whose owner is gone and objects owned by a deleted custom
// object.
func TestGarbageCollectorOnCustomResources(t *testing.T) {
	c := testcluster.Start(t, "--scheduler=false")
	c.MustKubectl(t, crontabCRD, "apply", "-f", "-")
	c.MustKubectl(t, "", "wait", "--for=condition=Established", "--timeout=10s", "crd/crontabs.stable.example.com")
	uid := strings.TrimSpace(c.MustKubectl(t, "", "create", "configmap", "owner", "-o", "jsonpath={.metadata.uid}"))
	owned := strings.Replace(crontab, "name: nightly", `name: owned
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: owner, uid: `+uid+`}`, 1)
	c.MustKubectl(t, owned, "create", "-f", "-")
	ctUID := strings.TrimSpace(c.MustKubectl(t, crontab, "create", "-f", "-", "-o", "jsonpath={.metadata.uid}"))
	c.MustKubectl(t, ownedConfigMap("dependent", "stable.example.com/v1", "CronTab", "nightly", ctUID), "create", "-f", "-")

	c.MustKubectl(t, "", "delete", "configmap", "owner")
	c.MustKubectl(t, "", "delete", "crontab", "nightly")
	waitNotFound(t, c, "crontab", "owned")
	waitNotFound(t, c, "configmap", "dependent")

	// Deleting a namespace deletes its custom objects, and then the namespace goes.
	c.MustKubectl(t, "", "create", "namespace", "team")
	c.MustKubectl(t, crontab, "create", "-n", "team", "-f", "-")
	c.MustKubectl(t, "", "delete", "namespace", "team", "--wait=false")
	waitNotFound(t, c, "namespace", "team")
}

// The controller manager collects objects of the kinds it finds by
// discovery (no shared informer and no CRD: a Role, a NetworkPolicy)
// whose owner is gone, and objects owned by a deleted one.
func TestGarbageCollectorOnDiscoveredKinds(t *testing.T) {
	c := testcluster.Start(t, "--scheduler=false")
	uid := strings.TrimSpace(c.MustKubectl(t, "", "create", "configmap", "owner", "-o", "jsonpath={.metadata.uid}"))
	c.MustKubectl(t, `
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: owned
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: owner, uid: `+uid+`}
rules: []
`, "create", "-f", "-")
	c.MustKubectl(t, `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: policy
spec:
  podSelector: {}
`, "create", "-f", "-")
	npUID := strings.TrimSpace(c.MustKubectl(t, "", "get", "networkpolicy", "policy", "-o", "jsonpath={.metadata.uid}"))
	c.MustKubectl(t, ownedConfigMap("dependent", "networking.k8s.io/v1", "NetworkPolicy", "policy", npUID), "create", "-f", "-")

	c.MustKubectl(t, "", "delete", "configmap", "owner")
	c.MustKubectl(t, "", "delete", "networkpolicy", "policy")
	waitNotFound(t, c, "role", "owned")
	waitNotFound(t, c, "configmap", "dependent")
}

// ownedConfigMap is the manifest of a ConfigMap whose owner is the
// object apiVersion/kind name with uid.
func ownedConfigMap(name, apiVersion, kind, owner, uid string) string {
	return `
apiVersion: v1
kind: ConfigMap
metadata:
  name: ` + name + `
  ownerReferences:
  - {apiVersion: ` + apiVersion + `, kind: ` + kind + `, name: ` + owner + `, uid: ` + uid + `}
`
}

// waitNotFound waits until kubectl get says NotFound for one object.
func waitNotFound(t *testing.T, c *testcluster.Cluster, kind, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		out, err := c.Kubectl(ctx, "", "get", kind, name, "-o", "name")
		if err != nil && strings.Contains(out, "NotFound") {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s %s still there: %v %s", kind, name, err, out)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// A custom kind takes a server-side apply as soon as it is served: the
// FieldValidation conformance specs apply a custom object right after
// their CRD is established.
func TestApplyToACustomKindAsSoonAsItIsServed(t *testing.T) {
	c := testcluster.StartAPIOnly(t)
	ctx := ctxT(t)
	dyn := dynamic.NewForConfigOrDie(c.RESTConfig())
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for i := range 5 {
		group := fmt.Sprintf("race%d.example.com", i)
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "widgets." + group},
			"spec": map[string]any{"group": group, "scope": "Cluster",
				"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object",
						"properties": map[string]any{"spec": map[string]any{"type": "object",
							"properties": map[string]any{"size": map[string]any{"type": "integer"}}}}}}}}}}}
		if _, err := dyn.Resource(crds).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		widgets := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"})
		deadline := time.Now().Add(10 * time.Second)
		for _, err := widgets.List(ctx, metav1.ListOptions{}); err != nil; _, err = widgets.List(ctx, metav1.ListOptions{}) {
			if time.Now().After(deadline) {
				t.Fatalf("widgets of %s not served: %v", group, err)
			}
		}
		body := fmt.Sprintf("apiVersion: %s/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 3\n", group)
		_, err := widgets.Patch(ctx, "w", types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: "race"})
		if err != nil {
			t.Fatalf("apply right after %s was served: %v", group, err)
		}
	}
}
