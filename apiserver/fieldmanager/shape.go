package fieldmanager

import (
	"encoding/json"
	"reflect"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A create's managedFields depend only on the shape of the object, not
// on most of its values: which fields are set, the keys of its maps and
// the items of its lists (whose key fields name them). Objects written
// from one template (a controller's pods, a benchmark's) share a shape,
// so createEntries computes the fields once per shape and reuses them.
//
// shapeKey writes a key that is equal for two objects only if their
// fields are equal: every struct field's zero-ness, map keys, pointer
// nil-ness, and in full every value inside a list (list items are keyed
// by their values) and every custom-encoded value (a Quantity "0" is the
// zero Quantity to the merge, not to reflect); a scalar's value outside
// a list only counts as zero or not, which is all a create's fields
// record. Extra distinctions only cost cache misses.

var (
	marshalerType = reflect.TypeFor[json.Marshaler]()
	timeType      = reflect.TypeFor[metav1.Time]()
	microTimeType = reflect.TypeFor[metav1.MicroTime]()
	quantityType  = reflect.TypeFor[resource.Quantity]()
)

// typeInfo is what shapeKey needs of a type, worked out once: its
// fields' and elements' infos are linked, so a walk looks nothing up.
type typeInfo struct {
	time, quantity, marshaler bool
	fields                    []int       // exported fields of a struct
	fieldInfos                []*typeInfo // their infos, in the same order
	elem                      *typeInfo   // of a pointer, slice, array or map
}

var (
	infoMu sync.Mutex
	infos  = map[reflect.Type]*typeInfo{}
)

// infoOf returns t's info, building it (and its fields') on first use.
func infoOf(t reflect.Type) *typeInfo {
	infoMu.Lock()
	defer infoMu.Unlock()
	return buildInfo(t)
}

func buildInfo(t reflect.Type) *typeInfo {
	if ti, ok := infos[t]; ok {
		return ti // possibly still being built: a recursive type
	}
	ti := &typeInfo{time: t == timeType || t == microTimeType, quantity: t == quantityType}
	infos[t] = ti
	ti.marshaler = !ti.time && !ti.quantity && t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface &&
		(t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType))
	switch t.Kind() {
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).IsExported() {
				ti.fields = append(ti.fields, i)
				ti.fieldInfos = append(ti.fieldInfos, buildInfo(t.Field(i).Type))
			}
		}
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		ti.elem = buildInfo(t.Elem())
	}
	return ti
}

func shapeKey(b []byte, v reflect.Value, ti *typeInfo, inList bool) []byte {
	switch {
	case ti.time:
		return appendBool(b, v.IsZero())
	case ti.quantity:
		q := v.Interface().(resource.Quantity) // map values are not addressable
		return append(strconv.AppendQuote(b, q.String()), ';')
	case ti.marshaler:
		// IntOrString, RawExtension, FieldsV1, Duration.
		var data []byte
		if v.CanAddr() {
			data, _ = json.Marshal(v.Addr().Interface())
		} else {
			data, _ = json.Marshal(v.Interface())
		}
		b = strconv.AppendInt(b, int64(len(data)), 10)
		return append(append(b, ':'), data...)
	}
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return append(b, 'n')
		}
		e := v.Elem()
		return shapeKey(append(b, 'i'), e, infoOf(e.Type()), inList)
	case reflect.Pointer:
		if v.IsNil() {
			return append(b, 'n')
		}
		return shapeKey(append(b, 'p'), v.Elem(), ti.elem, inList)
	case reflect.Struct:
		b = append(b, '{')
		for j, i := range ti.fields {
			b = shapeKey(b, v.Field(i), ti.fieldInfos[j], inList)
		}
		return append(b, '}')
	case reflect.Map:
		if v.IsNil() {
			return append(b, 'n')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(v.Len()), 10)
		iter := v.MapRange()
		keys := make([]string, 0, v.Len())
		vals := make([]reflect.Value, 0, v.Len())
		for iter.Next() {
			keys = append(keys, iter.Key().String())
			vals = append(vals, iter.Value())
		}
		for _, i := range sortedOrder(keys) {
			b = strconv.AppendQuote(b, keys[i])
			b = shapeKey(b, vals[i], ti.elem, inList)
		}
		return append(b, ']')
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return append(b, 'n')
		}
		b = append(b, '(')
		b = strconv.AppendInt(b, int64(v.Len()), 10)
		for i := 0; i < v.Len(); i++ {
			b = shapeKey(b, v.Index(i), ti.elem, true)
		}
		return append(b, ')')
	case reflect.String:
		if inList {
			return strconv.AppendQuote(b, v.String())
		}
		return appendBool(b, v.Len() == 0)
	default: // bool, numbers
		if inList {
			data, _ := json.Marshal(v.Interface())
			return append(append(b, '='), data...)
		}
		return appendBool(b, v.IsZero())
	}
}

func appendBool(b []byte, zero bool) []byte {
	if zero {
		return append(b, '0')
	}
	return append(b, '1')
}

// sortedOrder returns the indexes of keys in sorted order (maps iterate
// at random; a shape must not).
func sortedOrder(keys []string) []int {
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	for i := 1; i < len(order); i++ { // insertion sort: maps here are small
		for j := i; j > 0 && keys[order[j]] < keys[order[j-1]]; j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	return order
}

// shapeCache maps shape keys to the FieldsV1 of a create, per kind.
type shapeCache struct {
	mu     sync.RWMutex
	fields map[string][]byte
}

// maxShapes bounds a kind's cache; a full cache starts again empty.
const maxShapes = 512

func (c *shapeCache) get(key []byte) ([]byte, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	raw, ok := c.fields[string(key)]
	return raw, ok
}

func (c *shapeCache) put(key, raw []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fields == nil || len(c.fields) >= maxShapes {
		c.fields = map[string][]byte{}
	}
	c.fields[string(key)] = raw
}
