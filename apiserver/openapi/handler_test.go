package openapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
	oapiproto "k8s.io/kube-openapi/pkg/util/proto"
	"sigs.k8s.io/yaml"
)

var allVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// testResources is the set minik serves, per DESIGN.md.
var testResources = []Resource{
	{"", "v1", "Pod", "pods", true, &corev1.Pod{}, &corev1.PodList{}, allVerbs, []string{"status", "binding", "log"}, nil},
	{"", "v1", "Node", "nodes", false, &corev1.Node{}, &corev1.NodeList{}, allVerbs, []string{"status"}, nil},
	{"", "v1", "Namespace", "namespaces", false, &corev1.Namespace{}, &corev1.NamespaceList{}, allVerbs, []string{"status"}, nil},
	{"", "v1", "Event", "events", true, &corev1.Event{}, &corev1.EventList{}, allVerbs, nil, nil},
	{"", "v1", "ReplicationController", "replicationcontrollers", true, &corev1.ReplicationController{}, &corev1.ReplicationControllerList{}, allVerbs, []string{"status", "scale"}, nil},
	{"apps", "v1", "Deployment", "deployments", true, &appsv1.Deployment{}, &appsv1.DeploymentList{}, allVerbs, []string{"status", "scale"}, nil},
	{"apps", "v1", "ReplicaSet", "replicasets", true, &appsv1.ReplicaSet{}, &appsv1.ReplicaSetList{}, allVerbs, []string{"status", "scale"}, nil},
	{"apps", "v1", "DaemonSet", "daemonsets", true, &appsv1.DaemonSet{}, &appsv1.DaemonSetList{}, allVerbs, []string{"status"}, nil},
	{"batch", "v1", "Job", "jobs", true, &batchv1.Job{}, &batchv1.JobList{}, allVerbs, []string{"status"}, nil},
	{"scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", false, &schedulingv1.PriorityClass{}, &schedulingv1.PriorityClassList{}, allVerbs, nil, nil},
	{"coordination.k8s.io", "v1", "Lease", "leases", true, &coordinationv1.Lease{}, &coordinationv1.LeaseList{}, allVerbs, nil, nil},
}

func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(NewHandler(testResources))
	t.Cleanup(srv.Close)
	return srv
}

// get fetches url with the Accept header and returns the body of a 200.
func get(t *testing.T, url, accept string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d, want 200", url, resp.StatusCode)
	}
	return body
}

// v3Doc fetches one v3 document through client-go, as kubectl does.
func v3Doc(t *testing.T, srv *httptest.Server, gv schema.GroupVersion) map[string]any {
	t.Helper()
	root := openapi3.NewRoot(discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL}).OpenAPIV3())
	m, err := root.GVSpecAsMap(gv)
	if err != nil {
		t.Fatalf("GVSpecAsMap(%v): %v", gv, err)
	}
	return m
}

// dig follows keys through nested JSON maps; nil when a key is missing.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func TestSchemasCarryPatchHints(t *testing.T) {
	srv := newServer(t)
	core := v3Doc(t, srv, schema.GroupVersion{Version: "v1"})
	apps := v3Doc(t, srv, schema.GroupVersion{Group: "apps", Version: "v1"})
	schemas := func(d map[string]any, name string) any { return dig(d, "components", "schemas", name) }
	cases := []struct {
		name string
		got  any
		want any
	}{
		{"pod spec containers merge on name", dig(schemas(core, "io.k8s.api.core.v1.PodSpec"), "properties", "containers", "x-kubernetes-patch-merge-key"), "name"},
		{"pod spec containers use the merge strategy", dig(schemas(core, "io.k8s.api.core.v1.PodSpec"), "properties", "containers", "x-kubernetes-patch-strategy"), "merge"},
		{"pod spec containers are a list map", dig(schemas(core, "io.k8s.api.core.v1.PodSpec"), "properties", "containers", "x-kubernetes-list-type"), "map"},
		{"pod spec volumes retain keys", dig(schemas(core, "io.k8s.api.core.v1.PodSpec"), "properties", "volumes", "x-kubernetes-patch-strategy"), "merge,retainKeys"},
		{"pod spec containers are required", slices.Contains(toStrings(dig(schemas(core, "io.k8s.api.core.v1.PodSpec"), "required")), "containers"), true},
		// No omitempty, but +optional in its comment, as upstream's document says.
		{"an event's reporting component is optional", slices.Contains(toStrings(dig(schemas(core, "io.k8s.api.core.v1.Event"), "required")), "reportingComponent"), false},
		{"an event's involved object is required", slices.Contains(toStrings(dig(schemas(core, "io.k8s.api.core.v1.Event"), "required")), "involvedObject"), true},
		{"pod has its group version kind", dig(schemas(core, "io.k8s.api.core.v1.Pod"), "x-kubernetes-group-version-kind"), []any{map[string]any{"group": "", "version": "v1", "kind": "Pod"}}},
		{"pod spec is described from SwaggerDoc", dig(schemas(core, "io.k8s.api.core.v1.Pod"), "properties", "spec", "description") != nil, true},
		{"pod spec refers through allOf", dig(schemas(core, "io.k8s.api.core.v1.Pod"), "properties", "spec", "allOf"), []any{map[string]any{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}}},
		{"object meta keeps its apimachinery name", dig(schemas(core, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"), "properties", "name", "type"), "string"},
		{"type meta is inlined into pods", dig(schemas(core, "io.k8s.api.core.v1.Pod"), "properties", "apiVersion", "type"), "string"},
		{"time is a date-time string", dig(schemas(core, "io.k8s.apimachinery.pkg.apis.meta.v1.Time"), "format"), "date-time"},
		{"quantity is a string or a number", dig(schemas(core, "io.k8s.apimachinery.pkg.api.resource.Quantity"), "oneOf"), []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}},
		{"int-or-string is marked", dig(schemas(core, "io.k8s.apimachinery.pkg.util.intstr.IntOrString"), "x-kubernetes-int-or-string"), true},
		{"fieldsV1 is a free object", dig(schemas(core, "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"), "type"), "object"},
		{"labels are a string map", dig(schemas(core, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"), "properties", "labels", "additionalProperties", "type"), "string"},
		{"deployment strategy retains keys", dig(schemas(apps, "io.k8s.api.apps.v1.DeploymentSpec"), "properties", "strategy", "x-kubernetes-patch-strategy"), "retainKeys"},
		{"apps document holds the scale kind", dig(schemas(apps, "io.k8s.api.autoscaling.v1.Scale"), "x-kubernetes-group-version-kind"), []any{map[string]any{"group": "autoscaling", "version": "v1", "kind": "Scale"}}},
		{"apps document leaves out node", schemas(apps, "io.k8s.api.core.v1.Node"), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if g, w := mustJSON(t, tc.got), mustJSON(t, tc.want); g != w {
				t.Errorf("got %s, want %s", g, w)
			}
		})
	}
}

func TestStrategicMergePatchFromServedSchemas(t *testing.T) {
	srv := newServer(t)
	root := openapi3.NewRoot(discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL}).OpenAPIV3())
	spec, err := root.GVSpec(schema.GroupVersion{Group: "apps", Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	v3 := strategicpatch.PatchMetaFromOpenAPIV3{SchemaList: spec.Components.Schemas, Schema: spec.Components.Schemas["io.k8s.api.apps.v1.Deployment"]}

	v2body := get(t, srv.URL+"/openapi/v2", mediaTypeV2Protobuf)
	doc := &openapi_v2.Document{}
	if err := proto.Unmarshal(v2body, doc); err != nil {
		t.Fatal(err)
	}
	models, err := oapiproto.NewOpenAPIData(doc) // what kubectl apply parses
	if err != nil {
		t.Fatal(err)
	}
	v2 := strategicpatch.NewPatchMetaFromOpenAPI(models.LookupModel("io.k8s.api.apps.v1.Deployment"))

	original := `{"spec":{"template":{"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"y"}]}}}}`
	modified := `{"spec":{"template":{"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"z"}]}}}}`
	want := `{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"b"}],"containers":[{"image":"z","name":"b"}]}}}}`
	cases := []struct {
		name string
		meta strategicpatch.LookupPatchMeta
	}{
		{"the v3 schema merges containers by name", v3},
		{"the v2 schema merges containers by name", v2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			patch, err := strategicpatch.CreateTwoWayMergePatchUsingLookupPatchMeta([]byte(original), []byte(modified), tc.meta)
			if err != nil {
				t.Fatal(err)
			}
			if string(patch) != want {
				t.Errorf("patch = %s, want %s", patch, want)
			}
		})
	}
}

func TestV3Index(t *testing.T) {
	srv := newServer(t)
	body := get(t, srv.URL+"/openapi/v3", "")
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(body, &index); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path, wantPrefix string
	}{
		{"the core group is listed", "api/v1", "/openapi/v3/api/v1?hash="},
		{"apps is listed", "apis/apps/v1", "/openapi/v3/apis/apps/v1?hash="},
		{"a dotted group is listed", "apis/scheduling.k8s.io/v1", "/openapi/v3/apis/scheduling.k8s.io/v1?hash="},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := index.Paths[tc.path].ServerRelativeURL
			if len(u) <= len(tc.wantPrefix) || u[:len(tc.wantPrefix)] != tc.wantPrefix {
				t.Fatalf("serverRelativeURL = %q, want prefix %q", u, tc.wantPrefix)
			}
			if body := get(t, srv.URL+u, mediaTypeJSON); !json.Valid(body) {
				t.Errorf("GET %s is not JSON", u)
			}
		})
	}
}

func TestV2ProtobufRoundTrips(t *testing.T) {
	srv := newServer(t)
	jsonBody := get(t, srv.URL+"/openapi/v2", mediaTypeJSON)
	fromJSON, err := openapi_v2.ParseDocument(jsonBody)
	if err != nil {
		t.Fatal(err)
	}
	fromClient, err := discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL}).OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	names := func(d *openapi_v2.Document) (out []string) {
		for _, p := range d.GetDefinitions().GetAdditionalProperties() {
			out = append(out, p.GetName())
		}
		return out
	}
	cases := []struct {
		name string
		got  bool
	}{
		{"client-go's protobuf equals the parsed JSON", proto.Equal(fromJSON, fromClient)},
		{"the document defines pods", slices.Contains(names(fromClient), "io.k8s.api.core.v1.Pod")},
		{"the document has paths", len(fromClient.GetPaths().GetPath()) > 0},
		{"quantity is a plain string in v2", slices.Equal(definition(fromClient, "io.k8s.apimachinery.pkg.api.resource.Quantity").GetType().GetValue(), []string{"string"})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.got {
				t.Error("does not hold")
			}
		})
	}
}

func TestClientGoLoadsKindSchemas(t *testing.T) {
	srv := newServer(t)
	cases := []struct {
		name       string
		gvk        schema.GroupVersionKind
		wantSchema string
	}{
		{"pods load from the core document", schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "io.k8s.api.core.v1.Pod"},
		{"deployments load from the apps document", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "io.k8s.api.apps.v1.Deployment"},
		{"leases load from a dotted group", schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}, "io.k8s.api.coordination.v1.Lease"},
	}
	root := openapi3.NewRoot(discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL}).OpenAPIV3())
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := root.GVSpec(tc.gvk.GroupVersion())
			if err != nil {
				t.Fatal(err)
			}
			found := ""
			for name, s := range spec.Components.Schemas {
				var kinds []map[string]string
				if err := s.Extensions.GetObject("x-kubernetes-group-version-kind", &kinds); err != nil {
					continue
				}
				for _, k := range kinds {
					if k["group"] == tc.gvk.Group && k["version"] == tc.gvk.Version && k["kind"] == tc.gvk.Kind {
						found = name
					}
				}
			}
			if found != tc.wantSchema {
				t.Errorf("schema for %v = %q, want %q", tc.gvk, found, tc.wantSchema)
			}
		})
	}
}

// patchParams returns the parameter names and kind of the PATCH at path, in
// the v3 document as kubectl reads it, or in v2 as older kubectl does.
func patchParams(t *testing.T, srv *httptest.Server, v3 bool, gv schema.GroupVersion, path string) (names []string, kind string, bodyTypes []string) {
	t.Helper()
	dc := discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL})
	if v3 {
		spec, err := openapi3.NewRoot(dc.OpenAPIV3()).GVSpec(gv)
		if err != nil {
			t.Fatal(err)
		}
		item, ok := spec.Paths.Paths[path]
		if !ok || item.Patch == nil {
			t.Fatalf("no PATCH at %s", path)
		}
		for _, p := range item.Patch.Parameters {
			names = append(names, p.Name)
		}
		var k map[string]string
		_ = item.Patch.Extensions.GetObject("x-kubernetes-group-version-kind", &k)
		for ct := range item.Patch.RequestBody.Content {
			bodyTypes = append(bodyTypes, ct)
		}
		return names, k["kind"], bodyTypes
	}
	doc, err := dc.OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range doc.GetPaths().GetPath() {
		if item.GetName() != path {
			continue
		}
		patch := item.GetValue().GetPatch()
		for _, p := range patch.GetParameters() {
			if q := p.GetParameter().GetNonBodyParameter().GetQueryParameterSubSchema(); q != nil {
				names = append(names, q.GetName())
			}
		}
		for _, ext := range patch.GetVendorExtension() {
			if ext.GetName() == "x-kubernetes-group-version-kind" {
				var k map[string]string
				if err := yaml.Unmarshal([]byte(ext.GetValue().GetYaml()), &k); err != nil {
					t.Fatal(err)
				}
				kind = k["kind"]
			}
		}
		return names, kind, patch.GetConsumes()
	}
	t.Fatalf("no path %s", path)
	return nil, "", nil
}

func TestPatchOperationsOfferFieldValidation(t *testing.T) {
	srv := newServer(t)
	apps, core := schema.GroupVersion{Group: "apps", Version: "v1"}, schema.GroupVersion{Version: "v1"}
	cases := []struct {
		name     string
		v3       bool
		gv       schema.GroupVersion
		path     string
		wantKind string
	}{
		{"deployments in v3", true, apps, "/apis/apps/v1/namespaces/{namespace}/deployments/{name}", "Deployment"},
		{"deployments in v2", false, apps, "/apis/apps/v1/namespaces/{namespace}/deployments/{name}", "Deployment"},
		{"deployment status in v3", true, apps, "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status", "Deployment"},
		{"deployment scale in v3", true, apps, "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "Scale"},
		{"pods in v3", true, core, "/api/v1/namespaces/{namespace}/pods/{name}", "Pod"},
		{"cluster-scoped nodes in v2", false, core, "/api/v1/nodes/{name}", "Node"},
	}
	for _, tc := range cases {
		t.Run("the PATCH of "+tc.name+" takes fieldValidation and every patch type", func(t *testing.T) {
			params, kind, bodyTypes := patchParams(t, srv, tc.v3, tc.gv, tc.path)
			if !slices.Contains(params, "fieldValidation") {
				t.Errorf("parameters = %v, want fieldValidation among them", params)
			}
			if kind != tc.wantKind {
				t.Errorf("x-kubernetes-group-version-kind has kind %q, want %q", kind, tc.wantKind)
			}
			slices.Sort(bodyTypes)
			if want := slices.Sorted(slices.Values(patchContentTypes)); !slices.Equal(bodyTypes, want) {
				t.Errorf("patch content types = %v, want %v", bodyTypes, want)
			}
		})
	}
}

func TestServing(t *testing.T) {
	srv := newServer(t)
	index := get(t, srv.URL+"/openapi/v3", "")
	var idx struct {
		Paths map[string]map[string]string `json:"paths"`
	}
	if err := json.Unmarshal(index, &idx); err != nil {
		t.Fatal(err)
	}
	good := idx.Paths["api/v1"]["serverRelativeURL"]
	cases := []struct {
		name, path, accept, ifNoneMatch string
		want                            int
	}{
		{"v2 JSON is served by default", "/openapi/v2", "", "", http.StatusOK},
		{"v2 refuses unknown media types", "/openapi/v2", "text/html", "", http.StatusNotAcceptable},
		{"a current hash is served", good, mediaTypeJSON, "", http.StatusOK},
		{"a stale hash is redirected", "/openapi/v3/api/v1?hash=0", mediaTypeJSON, "", http.StatusMovedPermanently},
		{"an unknown group version is not found", "/openapi/v3/apis/nope/v1", mediaTypeJSON, "", http.StatusNotFound},
		{"a matching entity tag is not modified", "/openapi/v3", "", etagOf(t, srv.URL+"/openapi/v3"), http.StatusNotModified},
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+tc.path, nil)
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			if tc.ifNoneMatch != "" {
				req.Header.Set("If-None-Match", tc.ifNoneMatch)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

func definition(d *openapi_v2.Document, name string) *openapi_v2.Schema {
	for _, p := range d.GetDefinitions().GetAdditionalProperties() {
		if p.GetName() == name {
			return p.GetValue()
		}
	}
	return nil
}

func etagOf(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.Header.Get("Etag")
}

func toStrings(v any) (out []string) {
	l, _ := v.([]any)
	for _, s := range l {
		str, _ := s.(string)
		out = append(out, str)
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
