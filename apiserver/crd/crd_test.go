package crd

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const schemaYAML = `
type: object
properties:
  spec:
    type: object
    required: [cronSpec]
    properties:
      cronSpec: {type: string, pattern: '^\S+ \S+$', minLength: 3, maxLength: 20}
      replicas: {type: integer, minimum: 1, maximum: 10, exclusiveMaximum: true, default: 1}
      mode: {type: string, enum: [fast, slow]}
      port: {x-kubernetes-int-or-string: true}
      note: {type: string, nullable: true}
      tags: {type: array, maxItems: 2, items: {type: string, default: x}}
      labels: {type: object, additionalProperties: {type: string}}
      free: {type: object, x-kubernetes-preserve-unknown-fields: true}
      template:
        type: object
        x-kubernetes-embedded-resource: true
        x-kubernetes-preserve-unknown-fields: true
      nested:
        type: object
        default: {}
        properties:
          level: {type: string, default: info}
      when: {type: string, format: date-time}
`

func testVersion(t *testing.T) *Version {
	t.Helper()
	var props apiextv1.JSONSchemaProps
	if err := yaml.Unmarshal([]byte(schemaYAML), &props); err != nil {
		t.Fatal(err)
	}
	v, err := compileVersion(&apiextv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true,
		Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &props}})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func object(t *testing.T, spec string) map[string]any {
	t.Helper()
	var obj map[string]any
	data, err := yaml.YAMLToJSON([]byte("apiVersion: x.example.com/v1\nkind: X\nmetadata: {name: a}\nspec:\n" + spec))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	return fixNumbers(obj).(map[string]any)
}

// fixNumbers turns whole float64s into int64s, as the apiserver's decoder does.
func fixNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = fixNumbers(e)
		}
	case []any:
		for i := range x {
			x[i] = fixNumbers(x[i])
		}
	case float64:
		if x == float64(int64(x)) {
			return int64(x)
		}
	}
	return v
}

func TestValidate(t *testing.T) {
	v := testVersion(t)
	for _, tc := range []struct {
		name, spec string
		want       []string // error strings, in any order; none means valid
	}{
		{"a valid object passes", "  cronSpec: '* *'\n  replicas: 3\n  port: 8080\n  note: null\n  when: '2024-01-01T00:00:00Z'", nil},
		{"an int-or-string takes a string too", "  cronSpec: '* *'\n  port: http", nil},
		{"a wrong type is reported as upstream words it", "  cronSpec: '* *'\n  replicas: three",
			[]string{`spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`}},
		{"a missing required field", "  mode: fast", []string{`spec.cronSpec: Required value`}},
		{"an enum lists the supported values", "  cronSpec: '* *'\n  mode: medium",
			[]string{`spec.mode: Unsupported value: "medium": supported values: "fast", "slow"`}},
		{"a pattern mismatch", "  cronSpec: 'nospace'", []string{`spec.cronSpec: Invalid value: "nospace": spec.cronSpec in body should match '^\S+ \S+$'`}},
		{"exclusive maximum", "  cronSpec: '* *'\n  replicas: 10",
			[]string{`spec.replicas: Invalid value: 10: spec.replicas in body should be less than 10`}},
		{"minimum", "  cronSpec: '* *'\n  replicas: 0",
			[]string{`spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1`}},
		{"maxLength", "  cronSpec: '* 123456789012345678901'", []string{`spec.cronSpec: Too long: may not be more than 20 bytes`}},
		{"maxItems", "  cronSpec: '* *'\n  tags: [a, b, c]", []string{`spec.tags: Too many: 3: must have at most 2 items`}},
		{"null where not nullable", "  cronSpec: '* *'\n  mode: null",
			[]string{`spec.mode: Invalid value: "null": spec.mode in body must be of type string: "null"`,
				`spec.mode: Unsupported value: null: supported values: "fast", "slow"`}},
		{"a format", "  cronSpec: '* *'\n  when: yesterday",
			[]string{`spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"`}},
		{"an embedded resource needs apiVersion and kind", "  cronSpec: '* *'\n  template: {metadata: {name: x}}",
			[]string{`spec.template.apiVersion: Required value: must not be empty`, `spec.template.kind: Required value: must not be empty`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, tc.spec)
			v.Default(obj)
			var got []string
			for _, e := range v.Validate(obj) {
				got = append(got, e.Error())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("errors %q, want %q", got, tc.want)
			}
			for _, w := range tc.want {
				found := false
				for _, g := range got {
					found = found || g == w
				}
				if !found {
					t.Errorf("missing %q in %q", w, got)
				}
			}
		})
	}
}

func TestPruneAndDefault(t *testing.T) {
	v := testVersion(t)
	obj := object(t, "  cronSpec: '* *'\n  unknown: 1\n  free: {any: {thing: 1}}\n  tags: [null, b]\n  template: {apiVersion: v1, kind: Pod, extra: 1}\nstatus: {x: 1}")
	unknown := v.Prune(obj)
	v.Default(obj)
	if want := []string{"spec.unknown", "status"}; !reflect.DeepEqual(unknown, want) {
		t.Errorf("unknown fields %q, want %q", unknown, want)
	}
	spec := obj["spec"].(map[string]any)
	if _, ok := spec["unknown"]; ok {
		t.Error("unknown field kept")
	}
	if _, ok := obj["status"]; ok {
		t.Error("status not in the schema kept")
	}
	if spec["free"].(map[string]any)["any"] == nil || spec["template"].(map[string]any)["extra"] == nil {
		t.Errorf("preserve-unknown-fields pruned: %v", spec)
	}
	if spec["replicas"] != int64(1) {
		t.Errorf("replicas default: %v", spec["replicas"])
	}
	if got := spec["nested"]; !reflect.DeepEqual(got, map[string]any{"level": "info"}) {
		t.Errorf("nested defaults: %v", got)
	}
	if got := spec["tags"]; !reflect.DeepEqual(got, []any{"x", "b"}) {
		t.Errorf("item defaults: %v", got)
	}
	if obj["metadata"].(map[string]any)["name"] != "a" {
		t.Error("metadata pruned")
	}
}

func TestDefaultedOnRead(t *testing.T) {
	withDefaults := testVersion(t)
	noDefaults, err := compileVersion(&apiextv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true,
		Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object",
			Properties: map[string]apiextv1.JSONSchemaProps{"a": {Type: "string"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		v           *Version
		wantCopy    bool
		wantReplica any
	}{
		{"a stored object gets the defaults its schema has now, in a copy", withDefaults, true, int64(1)},
		{"a schema without defaults returns the stored object itself", noDefaults, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stored := object(t, "  cronSpec: '* *'")
			got, copied := tt.v.DefaultedOnRead(stored)
			if copied != tt.wantCopy {
				t.Fatalf("copied = %v, want %v", copied, tt.wantCopy)
			}
			if r := got["spec"].(map[string]any)["replicas"]; r != tt.wantReplica {
				t.Errorf("replicas %v, want %v", r, tt.wantReplica)
			}
			if _, changed := stored["spec"].(map[string]any)["replicas"]; changed {
				t.Error("the stored object was changed")
			}
		})
	}
}

func crdFrom(t *testing.T, y string) *apiextv1.CustomResourceDefinition {
	t.Helper()
	var c apiextv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict([]byte(y), &c); err != nil {
		t.Fatal(err)
	}
	apiextv1.SetObjectDefaults_CustomResourceDefinition(&c)
	return &c
}

const goodCRD = `
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
`

func TestValidateCRD(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(string) string
		want   string // a substring of the errors; "" means valid
	}{
		{"a valid CRD passes", func(s string) string { return s }, ""},
		{"the name must be plural.group", func(s string) string {
			return strings.Replace(s, "name: widgets.example.com", "name: w.example.com", 1)
		},
			`metadata.name: Invalid value: "w.example.com": must be spec.names.plural+"."+spec.group`},
		{"CEL rules are refused", func(s string) string {
			return strings.Replace(s, "            type: object\n            properties:", "            type: object\n            x-kubernetes-validations: [{rule: 'self.size > 0'}]\n            properties:", 1)
		}, "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations: Forbidden: minik does not evaluate CEL validation rules"},
		{"a non-structural schema is refused", func(s string) string {
			return strings.Replace(s, "size: {type: integer}", "size: {}", 1)
		}, "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[size].type: Required value: must not be empty for specified object fields"},
		{"a schema is required", func(s string) string {
			return s[:strings.Index(s, "    schema:")]
		}, "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"},
		{"exactly one storage version", func(s string) string { return strings.Replace(s, "storage: true", "storage: false", 1) },
			"must have exactly one version marked as storage version"},
		{"conversion webhooks are not supported", func(s string) string {
			return strings.Replace(s, "  scope: Namespaced", "  scope: Namespaced\n  conversion: {strategy: Webhook}", 1)
		}, `spec.conversion.strategy: Unsupported value: "Webhook": supported values: "None"`},
		{"a scope must be Cluster or Namespaced", func(s string) string { return strings.Replace(s, "scope: Namespaced", "scope: Global", 1) },
			`spec.scope: Unsupported value: "Global"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := Validate(crdFrom(t, tc.change(goodCRD)), nil)
			got := errs.ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("unexpected errors: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Fatalf("errors %v, want %q", got, tc.want)
			}
		})
	}
}

func TestStatusAcceptsNamesUnlessTaken(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := crdFrom(t, strings.Replace(goodCRD, "kind: Widget}", "kind: Widget, shortNames: [wd]}", 1))
	st := Status(c, NewGroupNames(), now)
	if st.AcceptedNames.Plural != "widgets" || !conditionIs(&st, apiextv1.Established, apiextv1.ConditionTrue) ||
		!conditionIs(&st, apiextv1.NamesAccepted, apiextv1.ConditionTrue) || !reflect.DeepEqual(st.StoredVersions, []string{"v1"}) {
		t.Fatalf("status: %+v", st)
	}
	for _, tc := range []struct {
		name   string
		taken  apiextv1.CustomResourceDefinitionNames
		reason string
	}{
		{"a taken plural", apiextv1.CustomResourceDefinitionNames{Plural: "widgets"}, "PluralConflict"},
		{"a taken short name", apiextv1.CustomResourceDefinitionNames{Plural: "others", ShortNames: []string{"wd"}}, "ShortNamesConflict"},
		{"a taken kind", apiextv1.CustomResourceDefinitionNames{Plural: "others", Kind: "Widget"}, "KindConflict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			taken := NewGroupNames()
			taken.Add(tc.taken)
			st := Status(c, taken, now)
			if st.AcceptedNames.Plural != "" || conditionIs(&st, apiextv1.Established, apiextv1.ConditionTrue) {
				t.Fatalf("names accepted despite a conflict: %+v", st)
			}
			for _, cond := range st.Conditions {
				if cond.Type == apiextv1.NamesAccepted && cond.Reason != tc.reason {
					t.Errorf("reason %q, want %q", cond.Reason, tc.reason)
				}
			}
		})
	}
}

func TestPathsAndCells(t *testing.T) {
	obj := object(t, "  cronSpec: '* *'\n  replicas: 2\n  tags: [a, b]\nstatus: {ready: true, conds: [{type: Ready}]}")
	for _, tc := range []struct {
		path string
		want any
	}{
		{".spec.replicas", int64(2)},
		{"{.spec.tags[1]}", "b"},
		{".status.conds[0].type", "Ready"},
		{".spec.missing", nil},
	} {
		got, _ := Lookup(obj, tc.path)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Lookup(%s) = %v, want %v", tc.path, got, tc.want)
		}
	}
	if _, err := parsePath(".items[?(@.x)]"); err == nil {
		t.Error("a filter parsed")
	}
	v := &Version{Columns: []apiextv1.CustomResourceColumnDefinition{
		{Name: "Replicas", Type: "integer", JSONPath: ".spec.replicas"},
		{Name: "Ready", Type: "boolean", JSONPath: ".status.ready"},
		{Name: "Mode", Type: "string", JSONPath: ".spec.mode"},
	}}
	cells := v.Cells(obj, time.Now(), func(time.Time, time.Time) string { return "1s" })
	if want := []any{"a", int64(2), true, nil}; !reflect.DeepEqual(cells, want) {
		t.Errorf("cells %v, want %v", cells, want)
	}
	if n := len((&Version{}).TableColumns()); n != 2 {
		t.Errorf("default columns: %d, want NAME and AGE", n)
	}
}
