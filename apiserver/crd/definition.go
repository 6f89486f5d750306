// Package crd holds the rules of CustomResourceDefinitions and of the
// custom objects they define: CRD validation (names, versions, structural
// schemas), the accepted names and conditions, and for each object its
// pruning, defaulting and schema validation, printer columns and scale
// paths. It is pure: the apiserver does the IO (crds.go).
package crd

import (
	"fmt"
	"sort"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// Definition is a CRD compiled for serving: its accepted names and, per
// served version, the schema rules of its objects.
type Definition struct {
	Name       string // plural.group, the CRD's name
	UID        string
	Group      string
	Names      apiextv1.CustomResourceDefinitionNames // the accepted names
	Namespaced bool
	// Versions are the served versions, in discovery order (kube-aware
	// version priority: v2 before v1 before v1beta1).
	Versions []*Version
	// StorageVersion is the version objects are stored in.
	StorageVersion string
	// Terminating is set once the CRD is being deleted: no new objects.
	Terminating bool
}

// Version is one served version of a Definition.
type Version struct {
	Name string
	// Schema is the version's structural schema (nil: none, as v1 CRDs
	// always have one, only for tests).
	Schema *structuralschema.Structural
	// OpenAPI is the schema as JSON (map form), for the OpenAPI documents.
	OpenAPI   map[string]any
	validator *validate.SchemaValidator
	// hasDefaults: some property of the schema has a default.
	hasDefaults bool
	// Columns are the additionalPrinterColumns.
	Columns []apiextv1.CustomResourceColumnDefinition
	// Status and Scale are the subresources.
	Status             bool
	Scale              *apiextv1.CustomResourceSubresourceScale
	Deprecated         bool
	DeprecationWarning string
}

// Compile turns a valid CRD into a Definition. The CRD's accepted names
// (status.acceptedNames) are used, so a CRD whose names were not accepted
// yet serves nothing: Compile then returns nil and no error.
func Compile(c *apiextv1.CustomResourceDefinition) (*Definition, error) {
	if c.Status.AcceptedNames.Plural == "" || !IsEstablished(c) {
		return nil, nil
	}
	d := &Definition{Name: c.Name, UID: string(c.UID), Group: c.Spec.Group, Names: c.Status.AcceptedNames,
		Namespaced: c.Spec.Scope == apiextv1.NamespaceScoped, Terminating: c.DeletionTimestamp != nil}
	if d.Names.Singular == "" {
		d.Names.Singular = c.Spec.Names.Singular
	}
	if d.Names.ListKind == "" {
		d.Names.ListKind = d.Names.Kind + "List"
	}
	for i := range c.Spec.Versions {
		v := &c.Spec.Versions[i]
		if v.Storage {
			d.StorageVersion = v.Name
		}
		if !v.Served {
			continue
		}
		cv, err := compileVersion(v)
		if err != nil {
			return nil, fmt.Errorf("version %s: %w", v.Name, err)
		}
		d.Versions = append(d.Versions, cv)
	}
	sort.SliceStable(d.Versions, func(a, b int) bool {
		return version.CompareKubeAwareVersionStrings(d.Versions[a].Name, d.Versions[b].Name) > 0
	})
	return d, nil
}

func compileVersion(v *apiextv1.CustomResourceDefinitionVersion) (*Version, error) {
	out := &Version{Name: v.Name, Columns: v.AdditionalPrinterColumns, Deprecated: v.Deprecated}
	if v.DeprecationWarning != nil {
		out.DeprecationWarning = *v.DeprecationWarning
	}
	if v.Subresources != nil {
		out.Status = v.Subresources.Status != nil
		out.Scale = v.Subresources.Scale
	}
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return out, nil
	}
	s, err := Structural(v.Schema.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	out.Schema = s
	out.hasDefaults = hasDefault(s)
	out.OpenAPI, err = toMap(v.Schema.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	out.validator = validate.NewSchemaValidator(openAPISchema(s), nil, "", strfmt.Default)
	return out, nil
}

// Structural converts a v1 schema to its structural form (not validated:
// see ValidateStructural for that).
func Structural(props *apiextv1.JSONSchemaProps) (*structuralschema.Structural, error) {
	var internal apiextensions.JSONSchemaProps
	if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(props, &internal, nil); err != nil {
		return nil, err
	}
	return structuralschema.NewStructural(&internal)
}

// openAPISchema is the schema the value validator checks against. As
// upstream, an int-or-string field accepts integers and strings.
func openAPISchema(s *structuralschema.Structural) *spec.Schema {
	out := s.ToKubeOpenAPI()
	var fix func(*spec.Schema)
	fix = func(x *spec.Schema) {
		if x == nil {
			return
		}
		if v, ok := x.Extensions.GetBool("x-kubernetes-int-or-string"); ok && v {
			x.Type = spec.StringOrArray{"integer", "string"}
		}
		for k, p := range x.Properties {
			fix(&p)
			x.Properties[k] = p
		}
		if x.Items != nil {
			fix(x.Items.Schema)
			for i := range x.Items.Schemas {
				fix(&x.Items.Schemas[i])
			}
		}
		if x.AdditionalProperties != nil {
			fix(x.AdditionalProperties.Schema)
		}
	}
	fix(out)
	return out
}

// IsEstablished reports whether the CRD's Established condition is True.
func IsEstablished(c *apiextv1.CustomResourceDefinition) bool {
	return conditionTrue(c, apiextv1.Established)
}

func conditionTrue(c *apiextv1.CustomResourceDefinition, t apiextv1.CustomResourceDefinitionConditionType) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == t {
			return cond.Status == apiextv1.ConditionTrue
		}
	}
	return false
}

// Version returns the served version named name, or nil.
func (d *Definition) Version(name string) *Version {
	for _, v := range d.Versions {
		if v.Name == name {
			return v
		}
	}
	return nil
}
