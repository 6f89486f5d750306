package crd

import (
	"encoding/json"
	"fmt"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	openapierrors "k8s.io/kube-openapi/pkg/validation/errors"
)

// Prune removes the fields the schema does not know (unless
// x-kubernetes-preserve-unknown-fields keeps them) and returns their
// paths ("spec.foo"), which a Strict request refuses and a Warn request
// reports as warnings, as upstream does.
func (v *Version) Prune(obj map[string]any) []string {
	if v.Schema == nil {
		return nil
	}
	return pruning.PruneWithOptions(obj, v.Schema, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
}

// Default fills in the schema's defaults, upstream's order: after
// pruning, before validation.
func (v *Version) Default(obj map[string]any) {
	if v.Schema != nil {
		applyDefaults(obj, v.Schema)
	}
}

// DefaultedOnRead returns obj as read from storage: with the defaults
// the schema has now (a default added after obj was written shows on
// the next read, as upstream's storage decoding applies it). It returns
// a copy, and true, only when the schema has defaults: stored objects
// are shared.
func (v *Version) DefaultedOnRead(obj map[string]any) (map[string]any, bool) {
	if v.Schema == nil || !v.hasDefaults {
		return obj, false
	}
	out := runtime.DeepCopyJSON(obj)
	applyDefaults(out, v.Schema)
	return out, true
}

// hasDefault reports whether s or any schema inside it has a default.
func hasDefault(s *structuralschema.Structural) bool {
	if s == nil {
		return false
	}
	if s.Default.Object != nil {
		return true
	}
	for _, p := range s.Properties {
		if hasDefault(&p) {
			return true
		}
	}
	if s.AdditionalProperties != nil && hasDefault(s.AdditionalProperties.Structural) {
		return true
	}
	return hasDefault(s.Items)
}

// applyDefaults sets the default of every missing property of x, and of
// null values where the schema is not nullable (properties, map values
// and list items), recursively, as upstream's structural defaulting does.
func applyDefaults(x any, s *structuralschema.Structural) {
	if s == nil {
		return
	}
	nonNullableNull := func(v any, s *structuralschema.Structural) bool { return v == nil && s != nil && !s.Nullable }
	switch x := x.(type) {
	case map[string]any:
		for k, prop := range s.Properties {
			if prop.Default.Object == nil {
				continue
			}
			if v, found := x[k]; !found || nonNullableNull(v, &prop) {
				x[k] = runtime.DeepCopyJSONValue(prop.Default.Object)
			}
		}
		for k, v := range x {
			if prop, ok := s.Properties[k]; ok {
				applyDefaults(v, &prop)
			} else if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
				if nonNullableNull(v, s.AdditionalProperties.Structural) && s.AdditionalProperties.Structural.Default.Object != nil {
					x[k] = runtime.DeepCopyJSONValue(s.AdditionalProperties.Structural.Default.Object)
				}
				applyDefaults(x[k], s.AdditionalProperties.Structural)
			}
		}
	case []any:
		for i := range x {
			if nonNullableNull(x[i], s.Items) && s.Items.Default.Object != nil {
				x[i] = runtime.DeepCopyJSONValue(s.Items.Default.Object)
			}
			applyDefaults(x[i], s.Items)
		}
	}
}

// Validate checks obj against the version's schema and returns the
// errors as kube-apiserver words them (`spec.replicas: Invalid value:
// "string": spec.replicas in body must be of type integer: "string"`),
// together with the checks of embedded resources.
func (v *Version) Validate(obj map[string]any) field.ErrorList {
	var errs field.ErrorList
	if v.validator != nil {
		for _, e := range v.validator.Validate(obj).Errors {
			errs = append(errs, toFieldError(e))
		}
	}
	if v.Schema != nil {
		errs = append(errs, validateEmbedded(obj, v.Schema, nil, true)...)
	}
	return errs
}

// toFieldError maps a kube-openapi validation error to the field error
// upstream reports for it.
func toFieldError(err error) *field.Error {
	verr, ok := err.(*openapierrors.Validation)
	if !ok {
		return field.Invalid(nil, "", err.Error())
	}
	var path *field.Path
	if verr.Name != "" && verr.Name != "." {
		path = field.NewPath(strings.TrimPrefix(verr.Name, "."))
	}
	value := verr.Value
	if value == nil {
		value = ""
	}
	switch verr.Code() {
	case openapierrors.RequiredFailCode:
		return field.Required(path, "")
	case openapierrors.EnumFailCode:
		var values []string
		for _, allowed := range verr.Values {
			if s, ok := allowed.(string); ok {
				values = append(values, s)
			} else {
				j, _ := json.Marshal(allowed)
				values = append(values, string(j))
			}
		}
		return field.NotSupported(path, verr.Value, values)
	case openapierrors.TooLongFailCode:
		limit := int64(-1)
		if i, ok := verr.Valid.(int64); ok {
			limit = i
		}
		return field.TooLong(path, "", int(limit))
	case openapierrors.MaxItemsFailCode, openapierrors.TooManyPropertiesCode:
		actual, limit := int64(-1), int64(-1)
		if i, ok := verr.Value.(int64); ok {
			actual = i
		}
		if i, ok := verr.Valid.(int64); ok {
			limit = i
		}
		return field.TooMany(path, int(actual), int(limit))
	case openapierrors.InvalidTypeCode:
		return field.TypeInvalid(path, value, verr.Error())
	}
	return field.Invalid(path, value, verr.Error())
}

// validateEmbedded checks the objects marked
// x-kubernetes-embedded-resource: apiVersion and kind are required, and
// their metadata is validated as any object's.
func validateEmbedded(x any, s *structuralschema.Structural, path *field.Path, root bool) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	switch x := x.(type) {
	case map[string]any:
		if s.XEmbeddedResource && !root {
			for _, k := range []string{"apiVersion", "kind"} {
				if v, _ := x[k].(string); v == "" {
					errs = append(errs, field.Required(path.Child(k), "must not be empty"))
				}
			}
			if md, ok := x["metadata"].(map[string]any); ok {
				if name, _ := md["name"].(string); name != "" {
					for _, msg := range validation.NameIsDNSSubdomain(name, false) {
						errs = append(errs, field.Invalid(path.Child("metadata", "name"), name, msg))
					}
				}
			}
		}
		for k, v := range x {
			if prop, ok := s.Properties[k]; ok {
				errs = append(errs, validateEmbedded(v, &prop, path.Child(k), false)...)
			} else if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
				errs = append(errs, validateEmbedded(v, s.AdditionalProperties.Structural, path.Key(k), false)...)
			}
		}
	case []any:
		for i, v := range x {
			errs = append(errs, validateEmbedded(v, s.Items, path.Index(i), false)...)
		}
	}
	return errs
}

// toMap renders a typed value as its JSON map form.
func toMap(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("decoding schema: %w", err)
	}
	return out, nil
}

func toJSONString(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// Replicas reads the scale subresource's values from obj: spec and
// status replicas (0 when missing, as upstream) and the label selector
// ("" without labelSelectorPath).
func (v *Version) Replicas(obj map[string]any) (spec, status int32, selector string) {
	if v.Scale == nil {
		return 0, 0, ""
	}
	num := func(path string) int32 {
		switch n, _ := Lookup(obj, path); n := n.(type) {
		case int64:
			return int32(n)
		case float64:
			return int32(n)
		}
		return 0
	}
	spec, status = num(v.Scale.SpecReplicasPath), num(v.Scale.StatusReplicasPath)
	if p := v.Scale.LabelSelectorPath; p != nil {
		selector, _ = func() (string, bool) { s, ok := Lookup(obj, *p); str, _ := s.(string); return str, ok }()
	}
	return spec, status, selector
}

// SetReplicas writes spec replicas at specReplicasPath.
func (v *Version) SetReplicas(obj map[string]any, n int32) bool {
	return v.Scale != nil && Set(obj, v.Scale.SpecReplicasPath, int64(n))
}
