package fieldmanager

import (
	"fmt"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// stripped are the fields no manager owns (upstream's stripMetaManager).
var stripped = fieldpath.NewSet(
	fieldpath.MakePathOrDie("apiVersion"),
	fieldpath.MakePathOrDie("kind"),
	fieldpath.MakePathOrDie("metadata"),
	fieldpath.MakePathOrDie("metadata", "name"),
	fieldpath.MakePathOrDie("metadata", "namespace"),
	fieldpath.MakePathOrDie("metadata", "creationTimestamp"),
	fieldpath.MakePathOrDie("metadata", "selfLink"),
	fieldpath.MakePathOrDie("metadata", "uid"),
	fieldpath.MakePathOrDie("metadata", "clusterName"),
	fieldpath.MakePathOrDie("metadata", "generation"),
	fieldpath.MakePathOrDie("metadata", "managedFields"),
	fieldpath.MakePathOrDie("metadata", "resourceVersion"),
)

// createEntries computes the managedFields of a new object that carries
// none, as the engine's Update from an empty object would, without its
// bookkeeping: no managers to decode, merge, cap or re-encode, and the
// empty object typed once per kind. The result is one Update entry whose
// fields are what the object adds to an empty one, less the system
// metadata and the fields the subresource resets; none when that is
// empty. fieldmanager_test.go checks it against the engine's.
func (k *kind) createEntries(obj runtime.Object, manager, subresource string) ([]metav1.ManagedFieldsEntry, error) {
	if k.emptyTyped == nil {
		return nil, fmt.Errorf("no typed empty %v", k.GVK)
	}
	setGVK(obj, k.GVK)
	var key []byte
	if subresource == "" {
		v := reflect.ValueOf(obj)
		key = shapeKey(make([]byte, 0, 512), v, infoOf(v.Type()), false)
		if raw, ok := k.shapes.get(key); ok {
			return k.entry(raw, manager, subresource), nil
		}
	}
	newTyped, err := k.tc.ObjectToTyped(obj, typed.AllowDuplicates)
	if err != nil {
		return nil, err
	}
	cmp, err := k.emptyTyped.Compare(newTyped)
	if err != nil {
		return nil, err
	}
	set := cmp.Modified.Union(cmp.Added).Difference(stripped)
	reset := k.createReset
	if subresource != "" {
		reset = k.resetFields(subresource)
	}
	if reset != nil {
		set = set.RecursiveDifference(reset)
	}
	var raw []byte
	if !set.Empty() {
		if raw, err = set.ToJSON(); err != nil {
			return nil, err
		}
	}
	if key != nil {
		k.shapes.put(key, raw)
	}
	return k.entry(raw, manager, subresource), nil
}

// entry returns the managedFields of a create whose fields are raw
// (shared by the objects of one shape: nothing writes into FieldsV1.Raw).
func (k *kind) entry(raw []byte, manager, subresource string) []metav1.ManagedFieldsEntry {
	if raw == nil {
		return nil
	}
	if manager == "" {
		manager = "unknown" // as the engine names it
	}
	return []metav1.ManagedFieldsEntry{{
		Manager:     manager,
		Operation:   metav1.ManagedFieldsOperationUpdate,
		APIVersion:  k.GVK.GroupVersion().String(),
		Time:        &metav1.Time{Time: time.Now().UTC()},
		FieldsType:  "FieldsV1",
		FieldsV1:    &metav1.FieldsV1{Raw: raw},
		Subresource: subresource,
	}}
}
