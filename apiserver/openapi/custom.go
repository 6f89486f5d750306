package openapi

import (
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// CustomDefName is upstream's definition name of a custom kind: the
// group reversed, then version and kind (stable.example.com, v1,
// CronTab → com.example.stable.v1.CronTab).
func CustomDefName(group, version, kind string) string {
	parts := strings.Split(group, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, ".") + "." + version + "." + kind
}

// kindRefs returns references to r's object and list definitions,
// defining them on first use: by reflection for built-in kinds, from the
// CRD version's schema for custom ones.
func (b *builder) kindRefs(r Resource) (obj, list object) {
	if r.Schema == nil {
		obj = b.ref(reflect.TypeOf(r.Object).Elem())
		if r.List != nil { // the review kinds have no list
			list = b.ref(reflect.TypeOf(r.List).Elem())
		}
		return obj, list
	}
	name := CustomDefName(r.Group, r.Version, r.Kind)
	listName := name + "List"
	if _, ok := b.defs[name]; !ok {
		b.defs[name] = b.customSchema(r)
		b.defs[listName] = object{
			"type":        "object",
			"description": r.Kind + "List is a list of " + r.Kind,
			"required":    []any{"items"},
			"properties": object{
				"apiVersion": object{"type": "string", "description": apiVersionDoc},
				"kind":       object{"type": "string", "description": kindDoc},
				"items":      object{"type": "array", "items": object{"$ref": b.refPrefix() + name}},
				"metadata":   b.typeSchema(reflect.TypeFor[metav1.ListMeta]()),
			},
		}
	}
	return object{"$ref": b.refPrefix() + name}, object{"$ref": b.refPrefix() + listName}
}

const (
	apiVersionDoc = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
	kindDoc       = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)

// customSchema is the CRD version's schema with apiVersion, kind and
// metadata filled in as upstream publishes it. Swagger 2.0 cannot say
// what some v3 schemas say: v2 gets upstream's conversion (toV2), and a
// kind that keeps unknown fields at its root only `type: object`, which
// kubectl then validates nothing of.
func (b *builder) customSchema(r Resource) object {
	if !b.v3 && r.Schema["x-kubernetes-preserve-unknown-fields"] == true {
		return object{"type": "object"}
	}
	s := runtime.DeepCopyJSON(r.Schema)
	if !b.v3 {
		toV2(s)
	}
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		props = object{}
		s["properties"] = props
	}
	props["apiVersion"] = object{"type": "string", "description": apiVersionDoc}
	props["kind"] = object{"type": "string", "description": kindDoc}
	props["metadata"] = b.field(reflect.TypeFor[metav1.ObjectMeta](), "",
		"Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata")
	return s
}

// toV2 turns a v3 schema into its Swagger 2.0 form in place, as upstream's
// ToStructuralOpenAPIV2: no junctors (allOf, anyOf, oneOf, not) and no
// CEL rules; a nullable value loses its type, items and properties (and
// its parent does not require it); one that keeps unknown fields loses
// its items and properties, and an object type; an array left without
// items loses its type: kubectl mishandles each of these.
func toV2(s map[string]any) {
	for _, k := range []string{"allOf", "anyOf", "oneOf", "not", "x-kubernetes-validations"} {
		delete(s, k)
	}
	props, _ := s["properties"].(map[string]any)
	if required, ok := s["required"].([]any); ok {
		kept := required[:0]
		for _, name := range required {
			if p, _ := props[fmt.Sprint(name)].(map[string]any); p == nil || p["nullable"] != true {
				kept = append(kept, name)
			}
		}
		s["required"] = kept
		if len(kept) == 0 {
			delete(s, "required")
		}
	}
	if ap, _ := s["additionalProperties"].(map[string]any); ap != nil && ap["nullable"] == true {
		delete(s, "required")
	}
	if s["nullable"] == true {
		delete(s, "type")
		delete(s, "items")
		delete(s, "properties")
	}
	delete(s, "nullable")
	if s["x-kubernetes-preserve-unknown-fields"] == true {
		delete(s, "items")
		delete(s, "properties")
		if s["type"] == "object" {
			delete(s, "type")
		}
	}
	if s["type"] == "array" && s["items"] == nil {
		delete(s, "type")
	}
	if props, _ := s["properties"].(map[string]any); props != nil {
		for _, p := range props {
			if p, ok := p.(map[string]any); ok {
				toV2(p)
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties"} {
		if sub, ok := s[k].(map[string]any); ok {
			toV2(sub)
		}
	}
}

// addCustomKind defines a custom kind and its list and marks them with
// their group, version and kind.
func (b *builder) addCustomKind(r Resource) {
	b.kindRefs(r)
	name := CustomDefName(r.Group, r.Version, r.Kind)
	b.defs[name]["x-kubernetes-group-version-kind"] = []gvk{{r.Group, r.Version, r.Kind}}
	b.defs[name+"List"]["x-kubernetes-group-version-kind"] = []gvk{{r.Group, r.Version, r.Kind + "List"}}
}

// Schemas returns the OpenAPI v3 schemas of resources and of every type
// they use, keyed by definition name (io.k8s.api.core.v1.Pod,
// com.example.stable.v1.CronTab), as /openapi/v3 serves them; each
// kind's schema carries x-kubernetes-group-version-kind. References are
// "#/components/schemas/NAME". A server-side apply type converter is
// built from them; custom kinds come from their CRD version's schema.
func Schemas(resources []Resource) map[string]any {
	out := map[string]any{}
	for name, s := range build(true, resources, resources).defs {
		out[name] = s
	}
	return out
}
