package apiserver

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// fieldOf returns a copy of a top-level struct field (e.g. "Status") of
// a typed object; the generic handlers use it for the spec/status split.
func fieldOf(obj runtime.Object, name string) (reflect.Value, error) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, fmt.Errorf("%T is not a pointer to a struct", obj)
	}
	f := v.Elem().FieldByName(name)
	if !f.IsValid() {
		return reflect.Value{}, fmt.Errorf("%T has no field %s", obj, name)
	}
	return f, nil
}

// setFieldOf sets a top-level struct field of a typed object.
func setFieldOf(obj runtime.Object, name string, val reflect.Value) error {
	f, err := fieldOf(obj, name)
	if err != nil {
		return err
	}
	f.Set(val)
	return nil
}

// copyInto overwrites dst with src; both are pointers to the same type.
func copyInto(dst, src runtime.Object) {
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src).Elem())
}

func uuidType(s string) types.UID { return types.UID(s) }
