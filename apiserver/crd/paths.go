package crd

import (
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// step is one step of a simple JSON path: a field name or a list index.
type step struct {
	field string
	index int // when field is ""
}

// parsePath parses the JSON paths CRDs use for printer columns and scale
// (.spec.replicas, .status.conditions[0].type, optionally in braces).
// Filters and wildcards of full JSONPath are not supported.
func parsePath(p string) ([]step, error) {
	p = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(p), "{"), "}")
	if !strings.HasPrefix(p, ".") {
		return nil, errorf("must be a simple json path starting with .")
	}
	var out []step
	for _, part := range strings.Split(p[1:], ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name == "" && rest == "" {
			return nil, errorf("empty path segment in %q", p)
		}
		if name != "" {
			out = append(out, step{field: name})
		}
		for rest != "" {
			idx, after, ok := strings.Cut(rest, "]")
			n, err := strconv.Atoi(idx)
			if !ok || err != nil || n < 0 {
				return nil, errorf("unsupported json path %q: only .field and [index] are supported", p)
			}
			out = append(out, step{index: n})
			rest = strings.TrimPrefix(after, "[")
			if after != "" && !strings.HasPrefix(after, "[") {
				return nil, errorf("unsupported json path %q", p)
			}
		}
	}
	return out, nil
}

// Lookup returns the value at path in obj, if any.
func Lookup(obj map[string]any, path string) (any, bool) {
	steps, err := parsePath(path)
	if err != nil {
		return nil, false
	}
	var cur any = obj
	for _, s := range steps {
		if s.field != "" {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[s.field]; !ok {
				return nil, false
			}
			continue
		}
		l, ok := cur.([]any)
		if !ok || s.index >= len(l) {
			return nil, false
		}
		cur = l[s.index]
	}
	return cur, true
}

// Set writes value at a path of fields (no indexes), making the objects
// on the way.
func Set(obj map[string]any, path string, value any) bool {
	steps, err := parsePath(path)
	if err != nil || len(steps) == 0 {
		return false
	}
	cur := obj
	for i, s := range steps {
		if s.field == "" {
			return false
		}
		if i == len(steps)-1 {
			cur[s.field] = value
			return true
		}
		next, ok := cur[s.field].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[s.field] = next
		}
		cur = next
	}
	return false
}

// TableColumns are the columns of `kubectl get` for this version: NAME,
// then the additionalPrinterColumns, or AGE when it has none (upstream's
// default).
func (v *Version) TableColumns() []metav1.TableColumnDefinition {
	cols := []metav1.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name",
		Description: "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"}}
	for _, c := range v.columns() {
		cols = append(cols, metav1.TableColumnDefinition{Name: c.Name, Type: c.Type, Format: c.Format, Description: c.Description, Priority: c.Priority})
	}
	return cols
}

func (v *Version) columns() []columnDef {
	if len(v.Columns) == 0 {
		return []columnDef{{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp",
			Description: "CreationTimestamp is a timestamp representing the server time when this object was created."}}
	}
	out := make([]columnDef, len(v.Columns))
	for i, c := range v.Columns {
		out[i] = columnDef{Name: c.Name, Type: c.Type, Format: c.Format, Description: c.Description, Priority: c.Priority, JSONPath: c.JSONPath}
	}
	return out
}

type columnDef struct {
	Name, Type, Format, Description, JSONPath string
	Priority                                  int32
}

// Cells renders one object's row; a value that is missing or of the
// wrong type is an empty cell, as upstream.
func (v *Version) Cells(obj map[string]any, now time.Time, age func(time.Time, time.Time) string) []any {
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	cells := []any{name}
	for _, c := range v.columns() {
		val, ok := Lookup(obj, c.JSONPath)
		if !ok || val == nil {
			cells = append(cells, nil)
			continue
		}
		cells = append(cells, cell(c.Type, val, now, age))
	}
	return cells
}

func cell(typ string, val any, now time.Time, age func(time.Time, time.Time) string) any {
	switch typ {
	case "integer":
		switch n := val.(type) {
		case int64:
			return n
		case float64:
			return int64(n)
		}
	case "number":
		switch n := val.(type) {
		case int64, float64:
			return n
		}
	case "boolean":
		if b, ok := val.(bool); ok {
			return b
		}
	case "date":
		if s, ok := val.(string); ok {
			if t, err := time.Parse(time.RFC3339, s); err == nil {
				return age(t, now)
			}
		}
	case "string":
		switch s := val.(type) {
		case string:
			return s
		case map[string]any, []any:
			return toJSONString(s)
		default:
			return strings.TrimSpace(strings.Trim(toJSONString(s), `"`))
		}
	}
	return nil
}
