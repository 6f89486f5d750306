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

// typeInfo is what shapeKey needs of a type, worked out once.
type typeInfo struct {
	time, quantity, marshaler bool
	fields          []int // exported fields of a struct
}

var typeInfos sync.Map // reflect.Type → *typeInfo

func infoOf(t reflect.Type) *typeInfo {
	if ti, ok := typeInfos.Load(t); ok {
		return ti.(*typeInfo)
	}
	ti := &typeInfo{time: t == timeType || t == microTimeType, quantity: t == quantityType}
	ti.marshaler = !ti.time && t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface &&
		(t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType))
	if t.Kind() == reflect.Struct {
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).IsExported() {
				ti.fields = append(ti.fields, i)
			}
		}
	}
	typeInfos.Store(t, ti)
	return ti
}

func shapeKey(b []byte, v reflect.Value, inList bool) []byte {
	t := v.Type()
	ti := infoOf(t)
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
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return append(b, 'n')
		}
		return shapeKey(append(b, 'p'), v.Elem(), inList)
	case reflect.Struct:
		b = append(b, '{')
		for _, i := range ti.fields {
			b = shapeKey(b, v.Field(i), inList)
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
		order := sortedOrder(keys)
		for _, i := range order {
			b = strconv.AppendQuote(b, keys[i])
			b = shapeKey(b, vals[i], inList)
		}
		return append(b, ']')
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && v.IsNil() {
			return append(b, 'n')
		}
		b = append(b, '(')
		b = strconv.AppendInt(b, int64(v.Len()), 10)
		for i := 0; i < v.Len(); i++ {
			b = shapeKey(b, v.Index(i), true)
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
