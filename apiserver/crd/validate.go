package crd

import (
	"fmt"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CELUnsupported is the message of the 422 a CRD with
// x-kubernetes-validations gets: minik would otherwise accept rules it
// never checks.
const CELUnsupported = "minik does not evaluate CEL validation rules (x-kubernetes-validations); remove them from the schema"

// printerColumnTypes are the column types upstream accepts.
var printerColumnTypes = []string{"integer", "number", "string", "boolean", "date"}

// Validate checks a CRD the way kube-apiserver does (names, scope,
// versions, structural schemas, subresources, printer columns), after
// SetDefaults. old is nil on create.
func Validate(c, old *apiextv1.CustomResourceDefinition) field.ErrorList {
	var errs field.ErrorList
	specPath := field.NewPath("spec")
	if want := c.Spec.Names.Plural + "." + c.Spec.Group; c.Name != want {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), c.Name, `must be spec.names.plural+"."+spec.group`))
	}
	if c.Spec.Group == "" {
		errs = append(errs, field.Required(specPath.Child("group"), ""))
	} else {
		if msgs := utilvalidation.IsDNS1123Subdomain(c.Spec.Group); len(msgs) > 0 {
			errs = append(errs, field.Invalid(specPath.Child("group"), c.Spec.Group, strings.Join(msgs, ",")))
		}
		if len(strings.Split(c.Spec.Group, ".")) < 2 {
			errs = append(errs, field.Invalid(specPath.Child("group"), c.Spec.Group, "should be a domain with at least one dot"))
		}
	}
	switch c.Spec.Scope {
	case apiextv1.ClusterScoped, apiextv1.NamespaceScoped:
	case "":
		errs = append(errs, field.Required(specPath.Child("scope"), ""))
	default:
		errs = append(errs, field.NotSupported(specPath.Child("scope"), c.Spec.Scope, []string{string(apiextv1.ClusterScoped), string(apiextv1.NamespaceScoped)}))
	}
	errs = append(errs, validateNames(&c.Spec.Names, specPath.Child("names"))...)
	errs = append(errs, validateVersions(c.Spec.Versions, specPath.Child("versions"))...)
	if c.Spec.PreserveUnknownFields {
		errs = append(errs, field.Invalid(specPath.Child("preserveUnknownFields"), true,
			"cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"))
	}
	if conv := c.Spec.Conversion; conv != nil && conv.Strategy != apiextv1.NoneConverter {
		errs = append(errs, field.NotSupported(specPath.Child("conversion", "strategy"), conv.Strategy, []string{string(apiextv1.NoneConverter)}))
	}
	if old != nil {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(c.Spec.Group, old.Spec.Group, specPath.Child("group"))...)
	}
	return errs
}

func validateNames(n *apiextv1.CustomResourceDefinitionNames, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	label := func(p *field.Path, v string, required bool) {
		if v == "" {
			if required {
				errs = append(errs, field.Required(p, ""))
			}
			return
		}
		if msgs := utilvalidation.IsDNS1035Label(v); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p, v, strings.Join(msgs, ",")))
		}
	}
	label(path.Child("plural"), n.Plural, true)
	label(path.Child("singular"), n.Singular, false)
	for i, s := range n.ShortNames {
		label(path.Child("shortNames").Index(i), s, true)
	}
	for i, s := range n.Categories {
		label(path.Child("categories").Index(i), s, true)
	}
	kind := func(p *field.Path, v string, required bool) {
		if v == "" {
			if required {
				errs = append(errs, field.Required(p, ""))
			}
			return
		}
		if msgs := utilvalidation.IsDNS1035Label(strings.ToLower(v)); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p, v, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
		}
	}
	kind(path.Child("kind"), n.Kind, true)
	kind(path.Child("listKind"), n.ListKind, true)
	if n.Kind != "" && n.Kind == n.ListKind {
		errs = append(errs, field.Invalid(path.Child("listKind"), n.ListKind, "kind and listKind may not be the same or parsing become ambiguous"))
	}
	return errs
}

func validateVersions(versions []apiextv1.CustomResourceDefinitionVersion, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(versions) == 0 {
		return append(errs, field.Invalid(path, versions, "must have exactly one version marked as storage version"))
	}
	storage, served := 0, 0
	seen := sets.New[string]()
	for i := range versions {
		v := &versions[i]
		vp := path.Index(i)
		if v.Storage {
			storage++
		}
		if v.Served {
			served++
		}
		if seen.Has(v.Name) {
			errs = append(errs, field.Invalid(vp.Child("name"), v.Name, "must be unique"))
		}
		seen.Insert(v.Name)
		if msgs := utilvalidation.IsDNS1035Label(v.Name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(vp.Child("name"), v.Name, strings.Join(msgs, ",")))
		}
		errs = append(errs, validateSchema(v, vp.Child("schema", "openAPIV3Schema"))...)
		if v.Subresources != nil && v.Subresources.Scale != nil {
			sc := v.Subresources.Scale
			sp := vp.Child("subresources", "scale")
			if !strings.HasPrefix(sc.SpecReplicasPath, ".spec.") {
				errs = append(errs, field.Invalid(sp.Child("specReplicasPath"), sc.SpecReplicasPath, "should be a json path under .spec"))
			}
			if !strings.HasPrefix(sc.StatusReplicasPath, ".status.") {
				errs = append(errs, field.Invalid(sp.Child("statusReplicasPath"), sc.StatusReplicasPath, "should be a json path under .status"))
			}
			if p := sc.LabelSelectorPath; p != nil && !strings.HasPrefix(*p, ".spec.") && !strings.HasPrefix(*p, ".status.") {
				errs = append(errs, field.Invalid(sp.Child("labelSelectorPath"), *p, "should be a json path under either .spec or .status"))
			}
		}
		for j, col := range v.AdditionalPrinterColumns {
			cp := vp.Child("additionalPrinterColumns").Index(j)
			if col.Name == "" {
				errs = append(errs, field.Required(cp.Child("name"), ""))
			}
			if !sets.New(printerColumnTypes...).Has(col.Type) {
				errs = append(errs, field.NotSupported(cp.Child("type"), col.Type, printerColumnTypes))
			}
			if _, err := parsePath(col.JSONPath); err != nil {
				errs = append(errs, field.Invalid(cp.Child("jsonPath"), col.JSONPath, err.Error()))
			}
		}
	}
	if storage != 1 {
		errs = append(errs, field.Invalid(path, versions, "must have exactly one version marked as storage version"))
	}
	if served == 0 {
		errs = append(errs, field.Invalid(path, versions, "must have at least one version marked as served"))
	}
	return errs
}

// validateSchema requires a structural schema with an object at its root
// and refuses CEL rules, which minik does not evaluate.
func validateSchema(v *apiextv1.CustomResourceDefinitionVersion, path *field.Path) field.ErrorList {
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return field.ErrorList{field.Required(path, "schemas are required")}
	}
	root := v.Schema.OpenAPIV3Schema
	var errs field.ErrorList
	walkSchema(root, path, func(s *apiextv1.JSONSchemaProps, p *field.Path) {
		if len(s.XValidations) > 0 {
			errs = append(errs, field.Forbidden(p.Child("x-kubernetes-validations"), CELUnsupported))
		}
	})
	if root.Type != "object" {
		errs = append(errs, field.Invalid(path.Child("type"), root.Type, "must be object at the root"))
	}
	s, err := Structural(root)
	if err != nil {
		return append(errs, field.Invalid(path, "", err.Error()))
	}
	errs = append(errs, structuralschema.ValidateStructural(path, s)...)
	return errs
}

// walkSchema calls fn on every schema node, with upstream's paths
// (properties[name], items, additionalProperties, allOf[i]...).
func walkSchema(s *apiextv1.JSONSchemaProps, p *field.Path, fn func(*apiextv1.JSONSchemaProps, *field.Path)) {
	if s == nil {
		return
	}
	fn(s, p)
	for k := range s.Properties {
		prop := s.Properties[k]
		walkSchema(&prop, p.Child("properties").Key(k), fn)
	}
	if s.Items != nil {
		walkSchema(s.Items.Schema, p.Child("items"), fn)
		for i := range s.Items.JSONSchemas {
			walkSchema(&s.Items.JSONSchemas[i], p.Child("items").Index(i), fn)
		}
	}
	if s.AdditionalProperties != nil {
		walkSchema(s.AdditionalProperties.Schema, p.Child("additionalProperties"), fn)
	}
	for name, list := range map[string][]apiextv1.JSONSchemaProps{"allOf": s.AllOf, "anyOf": s.AnyOf, "oneOf": s.OneOf} {
		for i := range list {
			walkSchema(&list[i], p.Child(name).Index(i), fn)
		}
	}
	walkSchema(s.Not, p.Child("not"), fn)
}

// errorf is fmt.Errorf, named for the path parser's messages.
var errorf = fmt.Errorf
