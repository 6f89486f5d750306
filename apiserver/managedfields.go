package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"minik/apiserver/defaults"
	"minik/apiserver/fieldmanager"
	"minik/apiserver/openapi"
	"minik/apiserver/registry"
)

// apiserverManager names the apiserver's own writes (bootstrap objects,
// the kubernetes Service), as kube-apiserver's loopback client is named.
const apiserverManager = "kube-apiserver"

// newFieldManager registers every served kind (stored, or a view of a
// stored one) with a field manager whose type converter is built from
// the OpenAPI schemas minik serves.
func newFieldManager(resources []openapi.Resource, kinds []*registry.Resource) *fieldmanager.Manager {
	fm := fieldmanager.New(func() (managedfields.TypeConverter, error) {
		models, err := openapi.Models(resources)
		if err != nil {
			return nil, err
		}
		return managedfields.NewTypeConverter(models, false)
	})
	for _, res := range kinds {
		fm.Register(fieldmanager.Kind{GVK: res.GroupVersion().WithKind(res.Kind), New: res.New,
			Default: defaults.Object, HasStatus: res.HasStatus})
	}
	return fm
}

// fieldsGVK is the kind whose managedFields this handler keeps: the
// stored kind (a view such as events.k8s.io Events writes core Events).
func (h *resourceHandler) fieldsGVK() schema.GroupVersionKind {
	if h.storedRes != nil {
		return h.storedRes.GroupVersion().WithKind(h.storedRes.Kind)
	}
	return h.res.GroupVersion().WithKind(h.res.Kind)
}

// trackWrite is the one place that records a create, update or patch
// (and their status and scale forms) in obj's managedFields; live is the
// stored object, nil on create. A server-side apply has already done so.
func (h *resourceHandler) trackWrite(ri *requestInfo, live, obj runtime.Object) runtime.Object {
	if ri.applied {
		return obj
	}
	manager := ri.fieldManager
	if manager == "" {
		manager = apiserverManager
	}
	return h.srv.fields.Update(h.fieldsGVK(), ri.subresource, live, obj, manager)
}

// writeOptions reads and checks the fieldManager and force options of a
// create, update or patch into ri, as upstream's Validate*Options.
func writeOptions(r *http.Request, ri *requestInfo, patchType string) error {
	q := r.URL.Query()
	manager := q.Get("fieldManager")
	var errs field.ErrorList
	kind := optionsKind[ri.verb]
	switch ri.verb {
	case "patch":
		opts := &metav1.PatchOptions{FieldManager: manager}
		if f := q.Get("force"); f != "" {
			force := f == "true" || f == "1"
			opts.Force = &force
		}
		errs = metav1validation.ValidatePatchOptions(opts, types.PatchType(patchType))
		ri.force = opts.Force != nil && *opts.Force
	default:
		errs = metav1validation.ValidateFieldManager(manager, field.NewPath("fieldManager"))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
	}
	ri.fieldManager = fieldmanager.ManagerName(manager, r.UserAgent())
	return nil
}

// decodeApply reads an apply configuration (YAML or JSON) as upstream's
// apply patcher does; under fieldValidation Strict or Warn duplicate
// fields fail or warn.
func decodeApply(w http.ResponseWriter, data []byte, mode string) (map[string]any, error) {
	patch := map[string]any{}
	if err := utilyaml.Unmarshal(data, &patch); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	if mode == fieldValidationStrict || mode == fieldValidationWarn {
		if err := utilyaml.UnmarshalStrict(data, &map[string]any{}); err != nil {
			if mode == fieldValidationStrict {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding YAML: %v", err))
			}
			w.Header().Add("Warning", fmt.Sprintf("299 - %q", err.Error()))
		}
	}
	return patch, nil
}

// applyTo merges the apply configuration into current (nil: the object
// does not exist yet) and checks that it names the object of the URL.
func (h *resourceHandler) applyTo(ri *requestInfo, current runtime.Object, patch map[string]any) (runtime.Object, error) {
	// The configuration is of the served kind (an events.k8s.io Event),
	// merged into the object as served.
	obj, err := h.srv.fields.Apply(h.res.GroupVersion().WithKind(h.res.Kind), ri.subresource, current, deepCopyJSON(patch), ri.fieldManager, ri.force)
	if se := (*apierrors.StatusError)(nil); errors.As(err, &se) && se.ErrStatus.Details != nil && se.ErrStatus.Details.Name == "" {
		// The engine's conflict names no object; minik's Status always does.
		se.ErrStatus.Details.Name, se.ErrStatus.Details.Group, se.ErrStatus.Details.Kind = ri.name, h.res.Group, h.res.Resource
	}
	if err != nil {
		return nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if m.GetName() != ri.name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), ri.name))
	}
	if h.res.Namespaced && m.GetNamespace() != ri.namespace {
		if m.GetNamespace() != "" || current != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the namespace of the object (%s) does not match the namespace on the request (%s)", m.GetNamespace(), ri.namespace))
		}
		m.SetNamespace(ri.namespace)
	}
	return obj, nil
}

// applyCreate creates the object a server-side apply names when it does
// not exist yet (upstream's apply patcher creates, other patches 404).
func (h *resourceHandler) applyCreate(ctx context.Context, ri *requestInfo, patch map[string]any, dryRun bool) (runtime.Object, error) {
	if ri.subresource != "" {
		return nil, apierrors.NewNotFound(h.res.GroupResource(), ri.name)
	}
	obj, err := h.applyTo(ri, nil, patch)
	if err != nil {
		return nil, err
	}
	return h.createObject(ctx, ri, obj, dryRun) // which converts to the stored kind
}

// deepCopyJSON copies a decoded apply configuration: the engine may keep
// parts of it in its result, and a retried update applies it again.
func deepCopyJSON(m map[string]any) map[string]any {
	return runtime.DeepCopyJSON(m)
}

// serverSideApply answers PATCH with application/apply-patch+yaml: the
// configuration is merged into the stored object, or creates it (201).
func (h *resourceHandler) serverSideApply(ctx context.Context, w http.ResponseWriter, r *http.Request, ri *requestInfo, data []byte, mode string) {
	patch, err := decodeApply(w, data, mode)
	if err != nil {
		writeError(w, r, err)
		return
	}
	ri.applied = true
	dryRun := isDryRun(r)
	for attempt := 0; ; attempt++ {
		updated, err := h.updateObject(ctx, ri, dryRun, func(current runtime.Object) (runtime.Object, error) {
			view, err := h.out(current)
			if err != nil {
				return nil, err
			}
			obj, err := h.applyTo(ri, view, patch)
			if err != nil {
				return nil, err
			}
			return h.in(obj)
		})
		if apierrors.IsNotFound(err) && attempt == 0 {
			created, err := h.applyCreate(ctx, ri, patch, dryRun)
			if apierrors.IsAlreadyExists(err) {
				continue // created meanwhile: apply to it
			}
			if err != nil {
				writeError(w, r, err)
				return
			}
			h.srv.writeMaybeTable(w, r, h, http.StatusCreated, created)
			return
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		h.srv.writeMaybeTable(w, r, h, http.StatusOK, updated)
		return
	}
}
