package openapi

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// crontab is a custom resource with what Swagger 2.0 cannot say
// (nullable, anyOf) in its schema.
var crontab = Resource{Group: "stable.example.com", Version: "v1", Kind: "CronTab", Resource: "crontabs", Namespaced: true,
	Verbs: allVerbs, Subresources: []string{"status", "scale"},
	Schema: map[string]any{"type": "object", "properties": map[string]any{
		"spec": map[string]any{"type": "object", "properties": map[string]any{
			"cronSpec": map[string]any{"type": "string", "nullable": true},
			"port":     map[string]any{"x-kubernetes-int-or-string": true, "anyOf": []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}},
		}},
	}}}

func TestCustomResourcesAreDescribed(t *testing.T) {
	h, err := newHandler(append(slices.Clone(testResources), crontab))
	if err != nil {
		t.Fatalf("building the documents with a custom resource: %v", err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	doc := v3Doc(t, srv, schema.GroupVersion{Group: "stable.example.com", Version: "v1"})
	def := dig(doc, "components", "schemas", "com.example.stable.v1.CronTab")
	if def == nil {
		t.Fatal("no com.example.stable.v1.CronTab in the v3 document")
	}
	if got := dig(def, "properties", "spec", "properties", "cronSpec", "nullable"); got != true {
		t.Errorf("v3 lost nullable: %v", got)
	}
	if dig(def, "properties", "metadata") == nil || dig(def, "properties", "apiVersion") == nil {
		t.Error("metadata or apiVersion missing")
	}
	gvks, _ := json.Marshal(dig(def, "x-kubernetes-group-version-kind"))
	if string(gvks) != `[{"group":"stable.example.com","kind":"CronTab","version":"v1"}]` {
		t.Errorf("gvk %s", gvks)
	}
	_, _, types := patchParams(t, srv, true, schema.GroupVersion{Group: "stable.example.com", Version: "v1"}, "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}")
	if slices.Contains(types, "application/strategic-merge-patch+json") || !slices.Contains(types, "application/merge-patch+json") {
		t.Errorf("patch body types %v: custom objects take no strategic merge patch", types)
	}
	var v2 map[string]any
	if err := json.Unmarshal(h.v2JSON.body, &v2); err != nil {
		t.Fatal(err)
	}
	v2def := dig(v2, "definitions", "com.example.stable.v1.CronTab", "properties", "spec", "properties")
	if dig(v2def, "cronSpec", "nullable") != nil || dig(v2def, "port", "anyOf") != nil {
		t.Errorf("v2 keeps what Swagger 2.0 cannot say: %v", v2def)
	}
	if Schemas([]Resource{crontab})["com.example.stable.v1.CronTabList"] == nil {
		t.Error("Schemas lacks the list")
	}
}
