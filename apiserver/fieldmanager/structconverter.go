package fieldmanager

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// structConverter types built-in objects (Go structs) without
// structured-merge-diff's validation walk, which was most of the field
// tracking of an update (a sixth of the apiserver's CPU in the scheduler's
// Preemption race, where every preemption patches two pods' status).
//
// The walk checks each scalar against its schema type and that each
// associative list item has its keys. A Go struct holds only values of
// the types its own schema was generated from, and the field manager
// allows duplicate keys anyway; an item without its keys is still
// reported, by the walks that follow (Compare, ToFieldSet), which build
// the same path elements. Unstructured objects (custom resources, an
// apply's patch) are validated as before.
type structConverter struct {
	managedfields.TypeConverter
	types sync.Map // GroupVersionKind → typeOf, learnt from a first, validated conversion
}

type typeOf struct {
	schema  *schema.Schema
	typeRef schema.TypeRef
}

func newStructConverter(tc managedfields.TypeConverter) *structConverter {
	return &structConverter{TypeConverter: tc}
}

func (c *structConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return c.TypeConverter.ObjectToTyped(obj, opts...)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	t, ok := c.types.Load(gvk)
	if !ok {
		tv, err := c.TypeConverter.ObjectToTyped(obj, opts...)
		if err != nil {
			return nil, err
		}
		c.types.Store(gvk, typeOf{tv.Schema(), tv.TypeRef()})
		return tv, nil
	}
	v, err := value.NewValueReflect(obj)
	if err != nil {
		return nil, fmt.Errorf("error creating struct value reflector: %w", err)
	}
	known := t.(typeOf)
	return typed.AsTypedUnvalidated(v, known.schema, known.typeRef), nil
}
