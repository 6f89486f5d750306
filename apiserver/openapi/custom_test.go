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

func TestToV2(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"a nullable field loses its type and properties, and its parent stops requiring it",
			`{"type":"object","required":["a","b"],"properties":{"a":{"type":"object","nullable":true,"properties":{"x":{"type":"string"}}},"b":{"type":"string"}}}`,
			`{"properties":{"a":{},"b":{"type":"string"}},"required":["b"],"type":"object"}`},
		{"an object that keeps unknown fields loses its properties and type",
			`{"type":"object","properties":{"free":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"x":{"type":"string"}}}}}`,
			`{"properties":{"free":{"x-kubernetes-preserve-unknown-fields":true}},"type":"object"}`},
		{"an array left without items loses its type",
			`{"type":"array","x-kubernetes-preserve-unknown-fields":true,"items":{"type":"string"}}`,
			`{"x-kubernetes-preserve-unknown-fields":true}`},
		{"junctors and CEL rules go, in items too",
			`{"type":"array","items":{"type":"object","anyOf":[{"required":["a"]}],"allOf":[{}],"x-kubernetes-validations":[{"rule":"true"}]}}`,
			`{"items":{"type":"object"},"type":"array"}`},
		{"a property named like a keyword is a property, not a keyword",
			`{"type":"object","properties":{"nullable":{"type":"boolean"},"type":{"type":"string"}}}`,
			`{"properties":{"nullable":{"type":"boolean"},"type":{"type":"string"}},"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s map[string]any
			if err := json.Unmarshal([]byte(tt.in), &s); err != nil {
				t.Fatal(err)
			}
			toV2(s)
			got, _ := json.Marshal(s)
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// A kind that keeps unknown fields at its root is published in v2 as
// `type: object` alone, as upstream does (kubectl would refuse every
// field but apiVersion, kind and metadata otherwise); v3 has it all.
func TestCustomKindKeepingUnknownFieldsInV2(t *testing.T) {
	free := Resource{Group: "free.example.com", Version: "v1", Kind: "Free", Resource: "frees", Verbs: allVerbs,
		Schema: map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
	h, err := newHandler(append(slices.Clone(testResources), free))
	if err != nil {
		t.Fatal(err)
	}
	var v2 map[string]any
	if err := json.Unmarshal(h.v2JSON.body, &v2); err != nil {
		t.Fatal(err)
	}
	def, _ := dig(v2, "definitions", "com.example.free.v1.Free").(map[string]any)
	if def["type"] != "object" || def["properties"] != nil || def["x-kubernetes-group-version-kind"] == nil {
		t.Errorf("v2 definition %v, want type object, no properties, and its kind", def)
	}
	if Schemas([]Resource{free})["com.example.free.v1.Free"].(map[string]any)["properties"] == nil {
		t.Error("the v3 schema lost apiVersion, kind and metadata")
	}
}
