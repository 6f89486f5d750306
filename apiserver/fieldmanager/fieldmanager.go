// Package fieldmanager keeps the managedFields of every object the
// apiserver writes and serves server-side apply. The engine is
// kube-apiserver's own: k8s.io/apimachinery/pkg/util/managedfields over
// sigs.k8s.io/structured-merge-diff; this package only supplies what the
// engine needs per kind (a type converter, an empty object, the fields a
// subresource may not touch) and caches the engine's field managers.
package fieldmanager

import (
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// Kind is what the field manager needs to know of one served kind.
type Kind struct {
	GVK schema.GroupVersionKind
	// New returns an empty object of the kind (e.g. &corev1.Pod{}).
	New func() runtime.Object
	// Converter types objects of this kind for structured merge. Nil
	// means the converter built from the apiserver's OpenAPI at start-up;
	// a CustomResourceDefinition registers its own, built from its schema
	// with managedfields.NewTypeConverter.
	Converter managedfields.TypeConverter
	// Default fills in defaults after an apply merge, as upstream's
	// decoder would (nil: none).
	Default func(runtime.Object)
	// HasStatus means spec and status are split: the main resource
	// ignores status, and /status ignores everything else.
	HasStatus bool
	// Fields are the kind's top-level fields, which /status resets; nil
	// means the JSON fields of New's Go type (an unstructured custom
	// resource names its schema's properties).
	Fields []string
}

// Manager holds the registered kinds and their field managers. It is safe
// for concurrent use; kinds may be registered and removed at run time.
type Manager struct {
	builtin func() (managedfields.TypeConverter, error)

	mu    sync.RWMutex
	kinds map[schema.GroupVersionKind]*kind
}

// kind is a registered Kind with its field managers by subresource,
// built on first use.
type kind struct {
	Kind
	mu       sync.Mutex
	managers map[string]*managedfields.FieldManager
	// tc is the kind's type converter and empty the typed value of an
	// empty object, which every create is compared with (create.go).
	tc          managedfields.TypeConverter
	emptyTyped  *typed.TypedValue
	createReset *fieldpath.Set // resetFields(""), kept for createEntries
	shapes      shapeCache     // a create's FieldsV1 by the object's shape
	// fields lists the top-level fields of the kind, from its Go type.
	fields []string
}

// New returns a Manager whose built-in converter comes from builtin,
// which is called once, in the background, from now on: building the
// schemas of every kind takes tens of milliseconds that start-up need
// not wait for.
func New(builtin func() (managedfields.TypeConverter, error)) *Manager {
	var (
		once sync.Once
		tc   managedfields.TypeConverter
		err  error
	)
	get := func() (managedfields.TypeConverter, error) {
		once.Do(func() {
			if tc, err = builtin(); err == nil {
				tc = newStructConverter(tc) // built-in kinds are Go structs
			}
		})
		return tc, err
	}
	go get()
	return &Manager{builtin: get, kinds: map[schema.GroupVersionKind]*kind{}}
}

// Register adds or replaces the kind k.GVK (a CRD's version is registered
// when it is served, and again when its schema changes).
func (m *Manager) Register(k Kind) {
	fields := k.Fields
	if obj := k.New(); obj != nil && fields == nil {
		if t := reflect.TypeOf(obj); t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
			fields = topLevelFields(t.Elem())
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kinds[k.GVK] = &kind{Kind: k, managers: map[string]*managedfields.FieldManager{}, fields: fields}
}

// Unregister removes a kind (a deleted CRD version).
func (m *Manager) Unregister(gvk schema.GroupVersionKind) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.kinds, gvk)
}

// fieldManager returns the engine's field manager of gvk's subresource
// ("" for the main resource, "status", "scale").
func (m *Manager) fieldManager(gvk schema.GroupVersionKind, subresource string) (*managedfields.FieldManager, *kind, error) {
	m.mu.RLock()
	k := m.kinds[gvk]
	m.mu.RUnlock()
	if k == nil {
		return nil, nil, fmt.Errorf("no field manager for %v", gvk)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if fm := k.managers[subresource]; fm != nil {
		return fm, k, nil
	}
	var err0 error
	tc := k.Converter
	if tc == nil {
		var err error
		if tc, err = m.builtin(); err != nil {
			return nil, nil, fmt.Errorf("building the type converter: %w", err)
		}
	}
	var reset map[fieldpath.APIVersion]fieldpath.Filter
	if set := k.resetFields(subresource); set != nil {
		reset = fieldpath.NewExcludeFilterSetMap(map[fieldpath.APIVersion]*fieldpath.Set{
			fieldpath.APIVersion(gvk.GroupVersion().String()): set})
	}
	if k.tc == nil {
		k.tc = tc
		if k.emptyTyped, err0 = tc.ObjectToTyped(k.empty(), typed.AllowDuplicates); err0 != nil {
			return nil, nil, err0
		}
		k.createReset = k.resetFields("")
	}
	objs := &objects{kind: k}
	fm, err := managedfields.NewDefaultFieldManager(tc, objs, objs, objs, gvk, gvk.GroupVersion(), subresource, reset)
	if err != nil {
		return nil, nil, err
	}
	k.managers[subresource] = fm
	return fm, k, nil
}

// resetFields returns the fields a write through subresource may not
// change, as upstream's strategies' GetResetFields: status on the main
// resource, and everything but status on /status.
func (k *kind) resetFields(subresource string) *fieldpath.Set {
	if !k.HasStatus {
		return nil
	}
	switch subresource {
	case "":
		return fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	case "status":
		var paths []fieldpath.Path
		for _, f := range k.fields {
			if f != "status" && f != "apiVersion" && f != "kind" {
				paths = append(paths, fieldpath.MakePathOrDie(f))
			}
		}
		return fieldpath.NewSet(paths...)
	}
	return nil
}

// Update records a create, update or patch by manager: obj is the object
// about to be stored, live the stored one (nil on create). Like
// kube-apiserver's UpdateNoErrors, a failure is logged and obj keeps the
// live object's managedFields, never failing the write. A /status write
// must keep the stored spec (the handlers do, as upstream's status
// strategies): the comparison leaves it out.
func (m *Manager) Update(gvk schema.GroupVersionKind, subresource string, live, obj runtime.Object, manager string) runtime.Object {
	fm, k, err := m.fieldManager(gvk, subresource)
	if err == nil && live == nil {
		if om, ok := obj.(metav1.Object); ok && om.GetManagedFields() == nil {
			// The hot path: a create, which needs no merge (create.go).
			var entries []metav1.ManagedFieldsEntry
			if entries, err = k.createEntries(obj, manager, subresource); err == nil {
				om.SetManagedFields(entries)
				return obj
			}
		}
	}
	if err == nil {
		if live == nil {
			live = k.empty()
		}
		setGVK(live, gvk)
		setGVK(obj, gvk)
		if subresource == "status" && k.HasStatus {
			if liveShadow, objShadow, ok := withoutSpec(live, obj); ok {
				var out runtime.Object
				if out, err = fm.Update(liveShadow, objShadow, manager); err == nil {
					obj.(metav1.Object).SetManagedFields(out.(metav1.Object).GetManagedFields())
					return obj
				}
			}
		}
		var out runtime.Object
		if out, err = fm.Update(live, obj, manager); err == nil {
			return out
		}
	}
	slog.Error("updating managedFields (kept the stored ones)", "kind", gvk, "err", err)
	if om, ok := obj.(metav1.Object); ok {
		if lm, ok := live.(metav1.Object); ok {
			om.SetManagedFields(lm.GetManagedFields())
		} else {
			om.SetManagedFields(nil)
		}
	}
	return obj
}

// Apply merges an apply configuration (the decoded YAML or JSON of an
// application/apply-patch+yaml body) into live (nil when the object does
// not exist yet) on behalf of manager. A conflict is a 409 whose causes
// name the managers and fields, in upstream's words.
func (m *Manager) Apply(gvk schema.GroupVersionKind, subresource string, live runtime.Object, patch map[string]any, manager string, force bool) (runtime.Object, error) {
	fm, k, err := m.fieldManager(gvk, subresource)
	if err != nil {
		return nil, err
	}
	if live == nil {
		live = k.empty()
	}
	setGVK(live, gvk)
	return fm.Apply(live, &unstructured.Unstructured{Object: patch}, manager, force)
}

// withoutSpec returns shallow copies of two Go structs with their Spec
// emptied, for a /status write: the spec is the same on both sides and
// the status field manager ignores it, so comparing it (most of a pod)
// would change nothing but the cost. ok is false for kinds without a
// Spec field and for unstructured objects.
func withoutSpec(live, obj runtime.Object) (liveCopy, objCopy runtime.Object, ok bool) {
	lc, ok := shallowWithoutSpec(live)
	if !ok {
		return nil, nil, false
	}
	oc, ok := shallowWithoutSpec(obj)
	return lc, oc, ok
}

func shallowWithoutSpec(obj runtime.Object) (runtime.Object, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	spec := v.Elem().FieldByName("Spec")
	if !spec.IsValid() || spec.Kind() != reflect.Struct {
		return nil, false
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	c.Elem().FieldByName("Spec").SetZero()
	out, ok := c.Interface().(runtime.Object)
	return out, ok
}

func (k *kind) empty() runtime.Object {
	obj := k.New()
	setGVK(obj, k.GVK)
	return obj
}

func setGVK(obj runtime.Object, gvk schema.GroupVersionKind) {
	if obj.GetObjectKind().GroupVersionKind() != gvk {
		obj.GetObjectKind().SetGroupVersionKind(gvk)
	}
}

// topLevelFields lists the JSON names of a struct's fields (embedded
// structs flattened, as encoding/json does).
func topLevelFields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			out = append(out, topLevelFields(f.Type)...)
		case name != "":
			out = append(out, name)
		}
	}
	return out
}

// objects gives the engine one kind's object creation, conversion and
// defaulting. minik serves one version of each kind, so conversion only
// turns the engine's unstructured results into typed objects, and
// returns typed objects as they are (no copy).
type objects struct{ kind *kind }

var (
	_ runtime.ObjectConvertor = &objects{}
	_ runtime.ObjectDefaulter = &objects{}
	_ runtime.ObjectCreater   = &objects{}
)

func (o *objects) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	if gvk != o.kind.GVK {
		return nil, fmt.Errorf("no kind %v here (field manager of %v)", gvk, o.kind.GVK)
	}
	return o.kind.empty(), nil
}

func (o *objects) Default(obj runtime.Object) {
	if o.kind.Default != nil {
		if _, isUnstructured := obj.(runtime.Unstructured); !isUnstructured {
			o.kind.Default(obj)
		}
	}
}

func (o *objects) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(runtime.Unstructured)
	if !ok {
		return in, nil
	}
	if _, typed := o.kind.New().(runtime.Unstructured); typed {
		return in, nil // a custom resource stays unstructured
	}
	out := o.kind.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), out); err != nil {
		return nil, err
	}
	setGVK(out, o.kind.GVK)
	return out, nil
}

func (o *objects) UnsafeConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	return o.ConvertToVersion(in, gv)
}

func (o *objects) Convert(in, out, context any) error {
	return fmt.Errorf("field manager: no conversion from %T to %T", in, out)
}

func (o *objects) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return "", "", fmt.Errorf("field manager: no field labels")
}

// maxManagerLength is upstream's limit on a field manager's name
// (validation.FieldManagerMaxLength).
const maxManagerLength = 128

// ManagerName names the manager of a write as kube-apiserver does: the
// fieldManager option when given, else the User-Agent up to its first
// "/", printable characters only, at most 128 bytes ("kubectl/v1.32.0
// (linux/amd64) kubernetes/abc" is "kubectl").
func ManagerName(fieldManager, userAgent string) string {
	if fieldManager != "" {
		return fieldManager
	}
	prefix, _, _ := strings.Cut(userAgent, "/")
	var b strings.Builder
	for _, r := range prefix {
		if !unicode.IsPrint(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > maxManagerLength {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}
