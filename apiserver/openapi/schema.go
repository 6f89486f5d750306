package openapi

//go:generate go run ./optionalfields/gen

import (
	"encoding/json"
	"reflect"
	"strings"
)

// object is one JSON object of a document, such as a schema or an operation.
type object = map[string]any

// gvk is the value of x-kubernetes-group-version-kind, both on operations
// (one object) and on definitions (a list of them).
type gvk struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// builder turns Go types into named OpenAPI definitions by reflection. One
// builder makes one document: v2 puts extra keys beside a $ref, v3 wraps the
// $ref in allOf as upstream does, and the ref prefixes differ.
type builder struct {
	v3   bool
	defs map[string]object
	gvks map[string][]gvk // definition name → kinds it serves
}

func newBuilder(v3 bool) *builder {
	return &builder{v3: v3, defs: map[string]object{}, gvks: map[string][]gvk{}}
}

// Optional methods on apimachinery types that say how they look on the
// wire: Time, MicroTime, Duration, Quantity and IntOrString all implement
// these, so reflection over their Go fields would be wrong.
type openAPITyper interface {
	OpenAPISchemaType() []string
	OpenAPISchemaFormat() string
}

type swaggerDocer interface{ SwaggerDoc() map[string]string }

var (
	typerType     = reflect.TypeFor[openAPITyper]()
	docerType     = reflect.TypeFor[swaggerDocer]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
)

// defName returns upstream's definition name, for example
// k8s.io/api/core/v1.Pod → io.k8s.api.core.v1.Pod.
func defName(t reflect.Type) string {
	parts := strings.Split(t.PkgPath(), "/")
	host := strings.Split(parts[0], ".")
	for i, j := 0, len(host)-1; i < j; i, j = i+1, j-1 {
		host[i], host[j] = host[j], host[i]
	}
	return strings.Join(append(host, parts[1:]...), ".") + "." + t.Name()
}

func (b *builder) refPrefix() string {
	if b.v3 {
		return "#/components/schemas/"
	}
	return "#/definitions/"
}

// ref returns a reference to the definition of t, building it on first use.
func (b *builder) ref(t reflect.Type) object {
	name := defName(t)
	if _, ok := b.defs[name]; !ok {
		b.defs[name] = nil // placeholder: stops recursion on cyclic types
		b.defs[name] = b.define(t)
	}
	return object{"$ref": b.refPrefix() + name}
}

// addKind marks the definition of t as the schema of k, which is how kubectl
// finds the schema for a GVK.
func (b *builder) addKind(t reflect.Type, k gvk) {
	b.ref(t)
	name := defName(t)
	for _, have := range b.gvks[name] {
		if have == k {
			return
		}
	}
	b.gvks[name] = append(b.gvks[name], k)
	b.defs[name]["x-kubernetes-group-version-kind"] = b.gvks[name]
}

// define builds the definition of the named struct type t.
func (b *builder) define(t reflect.Type) object {
	doc := docOf(t)
	s := object{}
	if d := doc[""]; d != "" {
		s["description"] = d
	}
	switch {
	case t.Implements(typerType):
		v := reflect.Zero(t).Interface().(openAPITyper)
		if one, ok := v.(interface{ OpenAPIV3OneOfTypes() []string }); ok && b.v3 {
			// As upstream, v3 lists the alternatives (a Quantity is a
			// string or a number), so kubectl explain shows "Quantity".
			var alts []any
			for _, typ := range one.OpenAPIV3OneOfTypes() {
				alts = append(alts, object{"type": typ})
			}
			s["oneOf"] = alts
		} else if types := v.OpenAPISchemaType(); len(types) > 0 {
			s["type"] = types[0]
		} // no types: any JSON value (the CRD schema's JSON fields)
		if f := v.OpenAPISchemaFormat(); f != "" {
			s["format"] = f
		}
		if s["format"] == "int-or-string" {
			s["x-kubernetes-int-or-string"] = true
		}
		return s
	case t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType):
		// RawExtension and FieldsV1 carry arbitrary JSON.
		s["type"] = "object"
		return s
	}
	props, required := object{}, []string{}
	b.fields(t, props, &required)
	s["type"] = "object"
	s["properties"] = props
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// fields adds the JSON fields of struct t to props, flattening embedded
// structs the way encoding/json does.
func (b *builder) fields(t reflect.Type, props object, required *[]string) {
	doc := docOf(t)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			b.fields(ft, props, required)
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := b.field(f.Type, f.Tag, doc[name])
		props[name] = p
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") && !optionalByComment[t.PkgPath()+"."+t.Name()+"."+name] {
			*required = append(*required, name)
		}
	}
}

// field returns the schema of one struct field: its type plus description
// and strategic-merge-patch hints, which upstream puts beside the $ref.
func (b *builder) field(t reflect.Type, tag reflect.StructTag, desc string) object {
	ext := object{}
	if desc != "" {
		ext["description"] = desc
	}
	if v := tag.Get("patchStrategy"); v != "" {
		ext["x-kubernetes-patch-strategy"] = v
	}
	if v := tag.Get("patchMergeKey"); v != "" {
		ext["x-kubernetes-patch-merge-key"] = v
	}
	s := b.typeSchema(t)
	if s["type"] == "array" {
		// Without +listType comments the merge key is the best hint we have.
		if key, ok := ext["x-kubernetes-patch-merge-key"]; ok {
			ext["x-kubernetes-list-type"] = "map"
			ext["x-kubernetes-list-map-keys"] = []any{key}
		} else if strings.Contains(tag.Get("patchStrategy"), "merge") {
			ext["x-kubernetes-list-type"] = "set"
		}
	}
	if _, isRef := s["$ref"]; isRef && len(ext) > 0 && b.v3 {
		s = object{"allOf": []any{s}}
	}
	for k, v := range ext {
		s[k] = v
	}
	return s
}

// typeSchema maps a Go type to an inline schema or a $ref.
func (b *builder) typeSchema(t reflect.Type) object {
	switch t.Kind() {
	case reflect.Pointer:
		return b.typeSchema(t.Elem())
	case reflect.Struct:
		return b.ref(t)
	case reflect.Bool:
		return object{"type": "boolean"}
	case reflect.String:
		return object{"type": "string"}
	case reflect.Int64, reflect.Uint64:
		return object{"type": "integer", "format": "int64"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return object{"type": "integer", "format": "int32"}
	case reflect.Float32:
		return object{"type": "number", "format": "float"}
	case reflect.Float64:
		return object{"type": "number", "format": "double"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return object{"type": "string", "format": "byte"}
		}
		return object{"type": "array", "items": b.typeSchema(t.Elem())}
	case reflect.Map:
		return object{"type": "object", "additionalProperties": b.typeSchema(t.Elem())}
	default: // interface{}: any JSON value
		return object{}
	}
}

// docOf returns the SwaggerDoc of t, keyed by JSON field name; "" is the
// description of the type itself.
func docOf(t reflect.Type) map[string]string {
	if t.Implements(docerType) {
		return reflect.Zero(t).Interface().(swaggerDocer).SwaggerDoc()
	}
	return nil
}
