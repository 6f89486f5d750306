package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik/apiserver/crd"
	"minik/apiserver/defaults"
	"minik/apiserver/registry"
	"minik/apiserver/storage"
)

// resourceHandler serves the REST verbs of one resource.
type resourceHandler struct {
	res   *registry.Resource
	store *storage.Store
	srv   *Server
	// conv converts between this resource's type and its storage's type
	// when they differ (events.k8s.io Events are stored as core Events,
	// custom objects in their CRD's storage version); storedRes is then
	// the stored resource (for built-ins).
	conv      *conversion
	storedRes *registry.Resource
	// crd is the definition of a custom resource (nil for built-ins).
	crd *crd.Definition
	// watchEvents counts the events written to this resource's watchers.
	watchEvents prometheus.Counter
}

// conversion maps objects of a view type to and from the stored type.
type conversion struct {
	toStorage   func(runtime.Object) (runtime.Object, error)
	fromStorage func(runtime.Object) (runtime.Object, error)
}

func (h *resourceHandler) out(obj runtime.Object) (runtime.Object, error) {
	if h.conv == nil {
		return obj, nil
	}
	return h.conv.fromStorage(obj)
}

func (h *resourceHandler) in(obj runtime.Object) (runtime.Object, error) {
	if h.conv == nil {
		return obj, nil
	}
	return h.conv.toStorage(obj)
}

// get answers GET on one object.
func (h *resourceHandler) get(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	obj, err := h.store.ServeGet(r.Context(), ri.namespace, ri.name, r.URL.Query().Get("resourceVersion"))
	if err == nil {
		obj, err = h.out(obj)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	h.srv.writeMaybeTable(w, r, h, http.StatusOK, obj)
}

// list answers GET on a collection (or hands over to watch).
func (h *resourceHandler) list(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	q := r.URL.Query()
	if q.Get("watch") == "1" || q.Get("watch") == "true" {
		h.watch(w, r, ri)
		return
	}
	pred, err := newPredicate(h.res, ri.namespace, q.Get("labelSelector"), q.Get("fieldSelector"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	var limit int64
	if l := q.Get("limit"); l != "" {
		if limit, err = strconv.ParseInt(l, 10, 64); err != nil || limit < 0 {
			writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid limit %q", l)))
			return
		}
	}
	opts := storage.ListOptions{Namespace: ri.namespace, ResourceVersion: q.Get("resourceVersion"),
		ResourceVersionMatch: metav1.ResourceVersionMatch(q.Get("resourceVersionMatch")),
		Limit:                limit, Continue: q.Get("continue")}
	if err := validateListOptions(opts); err != nil {
		writeError(w, r, err)
		return
	}
	if !pred.labels.Empty() || !pred.fields.Empty() {
		// (The namespace is the key prefix the store reads: a list
		// without selectors keeps its remainingItemCount.)
		opts.Match = pred.Matches
	}
	page, err := h.store.ServeList(r.Context(), opts)
	if err != nil {
		writeError(w, r, err)
		return
	}
	h.writeList(w, r, page)
}

// validateListOptions checks resourceVersion, resourceVersionMatch and
// continue together with apimachinery's rules (422 on ListOptions, as
// upstream).
func validateListOptions(opts storage.ListOptions) error {
	lo := metainternalversion.ListOptions{ResourceVersion: opts.ResourceVersion,
		ResourceVersionMatch: opts.ResourceVersionMatch, Limit: opts.Limit, Continue: opts.Continue}
	if errs := metainternalversionvalidation.ValidateListOptions(&lo, false); len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	return nil
}

// create answers POST on a collection.
func (h *resourceHandler) create(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	obj, err := decodeRequest(w, r, h.res)
	if err == nil {
		err = writeOptions(r, ri, "")
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	created, err := h.createObject(withWarnings(r.Context(), w), ri, obj, isDryRun(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	h.srv.writeMaybeTable(w, r, h, http.StatusCreated, created)
}

// createObject fills the system fields, admits and stores a new object.
func (h *resourceHandler) createObject(ctx context.Context, ri *requestInfo, obj runtime.Object, dryRun bool) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if h.res.Namespaced {
		if m.GetNamespace() == "" {
			m.SetNamespace(ri.namespace)
		} else if ri.namespace != "" && m.GetNamespace() != ri.namespace {
			return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	} else {
		m.SetNamespace("")
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(m.GetGenerateName() + utilrand.String(5))
	}
	if m.GetResourceVersion() != "" {
		return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	m.SetUID(uuidType(uuid.NewString()))
	m.SetCreationTimestamp(metav1.Now())
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetSelfLink("")
	if h.res.KeepsGeneration() {
		m.SetGeneration(1)
	}
	obj, err = h.in(obj)
	if err != nil {
		return nil, err
	}
	// The writer owns what it sent and its defaults (upstream defaults
	// while decoding), not what admission adds (a ServiceAccount's token
	// volume): managedFields are made here, before admission.
	defaults.Object(obj)
	obj = h.trackWrite(ri, nil, obj)
	if !h.store.HasCompanions() {
		return h.createOnce(ctx, ri, obj, dryRun, m)
	}
	// The object owns companion keys (a Service's cluster IP and node
	// ports): a key taken by a concurrent write is refused if the client
	// asked for it, and otherwise picked again.
	requested := obj.DeepCopyObject()
	for attempt := 1; ; attempt++ {
		created, err := h.createOnce(ctx, ri, obj, dryRun, m)
		if !errors.Is(err, storage.ErrTaken) {
			return created, err
		}
		if err := h.srv.companionTaken(requested, err, attempt); err != nil {
			return nil, err
		}
		obj = requested.DeepCopyObject()
	}
}

// createOnce admits and stores a new object whose system fields are set.
func (h *resourceHandler) createOnce(ctx context.Context, ri *requestInfo, obj runtime.Object, dryRun bool, m metav1.Object) (runtime.Object, error) {
	if !dryRun && h.res.Namespaced {
		// The fast path: admission reads the namespace (and priority
		// classes) from caches, and the write commits only if what it
		// read is still current. Anything else is decided again below on
		// fresh reads, as if the cache did not exist.
		fresh := obj.DeepCopyObject()
		reads := &admissionReads{srv: h.srv, cached: true}
		err := h.srv.admitCreate(ctx, h, obj, reads)
		if err == nil {
			stored, err := h.store.Create(ctx, obj, reads.guards...)
			if !errors.Is(err, storage.ErrGuardFailed) {
				return h.created(stored, err, m)
			}
		}
		if _, fromWebhook := errors.AsType[*webhookRefusal](err); fromWebhook {
			return nil, err // the webhooks' answer does not depend on the caches
		}
		obj = fresh
	}
	// Fresh reads. The only guards here are the usage a create charges to
	// ResourceQuotas: when a quota changed meanwhile, admit again.
	requested := obj.DeepCopyObject()
	for attempt := 1; ; attempt++ {
		reads := &admissionReads{srv: h.srv}
		if err := h.srv.admitCreate(ctx, h, obj, reads); err != nil {
			return nil, err
		}
		if dryRun {
			return h.out(obj)
		}
		stored, err := h.store.Create(ctx, obj, reads.guards...)
		if !errors.Is(err, storage.ErrGuardFailed) {
			return h.created(stored, err, m)
		}
		if _, getErr := h.store.Get(ctx, m.GetNamespace(), m.GetName()); getErr == nil {
			return nil, apierrors.NewAlreadyExists(h.res.GroupResource(), m.GetName())
		}
		if attempt == maxQuotaAttempts {
			return nil, quotaConflict()
		}
		obj = requested.DeepCopyObject()
	}
}

// maxQuotaAttempts bounds how often a create is admitted again after
// losing a race for a quota (each lost race is another create's win).
const maxQuotaAttempts = 100

// quotaConflict answers a write that lost the race for a quota
// maxQuotaAttempts times: 409, as upstream's quota admission answers
// when it cannot write the quota's usage.
func quotaConflict() error {
	return apierrors.NewConflict(schema.GroupResource{Resource: "resourcequotas"}, "",
		fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
}

// created finishes createObject with the store's answer.
func (h *resourceHandler) created(stored runtime.Object, err error, m metav1.Object) (runtime.Object, error) {
	if err != nil {
		if apierrors.IsAlreadyExists(err) && m.GetGenerateName() != "" {
			return nil, apierrors.NewServerTimeoutForKind(h.res.GroupVersion().WithKind(h.res.Kind).GroupKind(), "POST", 0)
		}
		return nil, err
	}
	return h.out(stored)
}

// update answers PUT on an object or its status.
func (h *resourceHandler) update(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	obj, err := decodeRequest(w, r, h.res)
	if err == nil {
		err = writeOptions(r, ri, "")
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	if obj, err = h.in(obj); err != nil {
		writeError(w, r, err)
		return
	}
	m, _ := meta.Accessor(obj)
	if m.GetName() != ri.name {
		writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), ri.name)))
		return
	}
	if h.res.Namespaced && m.GetNamespace() != "" && m.GetNamespace() != ri.namespace {
		writeError(w, r, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request"))
		return
	}
	updated, err := h.updateObject(withWarnings(r.Context(), w), ri, isDryRun(r), func(current runtime.Object) (runtime.Object, error) {
		return obj.DeepCopyObject(), nil
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	h.srv.writeMaybeTable(w, r, h, http.StatusOK, updated)
}

// updateObject runs a read-modify-write on one object: next computes the
// requested object from the current one; system fields are then carried
// over, the status split applied, and the result admitted and stored.
func (h *resourceHandler) updateObject(ctx context.Context, ri *requestInfo, dryRun bool, next func(current runtime.Object) (runtime.Object, error)) (runtime.Object, error) {
	for attempt := 1; ; attempt++ {
		var requested runtime.Object
		updated, err := h.updateOnce(ctx, ri, dryRun, next, &requested)
		if !errors.Is(err, storage.ErrTaken) {
			return updated, err
		}
		// A companion key the update adds was taken meanwhile (see createObject).
		if err := h.srv.companionTaken(requested, err, attempt); err != nil {
			return nil, err
		}
	}
}

// updateOnce is one read-modify-write of updateObject; it leaves the
// object the client asked for (before admission) in requested.
func (h *resourceHandler) updateOnce(ctx context.Context, ri *requestInfo, dryRun bool, next func(current runtime.Object) (runtime.Object, error), requested *runtime.Object) (runtime.Object, error) {
	var dryResult runtime.Object
	stored, _, err := h.store.GuardedUpdate(ctx, ri.namespace, ri.name, func(current runtime.Object) (runtime.Object, []storage.Guard, error) {
		oldCopy := current.DeepCopyObject()
		obj, err := next(current)
		if err != nil {
			return nil, nil, err
		}
		if h.store.HasCompanions() {
			*requested = obj.DeepCopyObject()
		}
		if err := h.carryOver(ri.subresource, obj, oldCopy); err != nil {
			return nil, nil, err
		}
		reads := &admissionReads{srv: h.srv}
		if err := h.srv.admitUpdate(ctx, h, ri.subresource, obj, oldCopy, reads); err != nil {
			return nil, nil, err
		}
		obj = h.trackWrite(ri, oldCopy, obj)
		if dryRun {
			dryResult = obj
			return nil, nil, storage.ErrNoChange
		}
		return obj, reads.guards, nil
	})
	if errors.Is(err, storage.ErrGuardFailed) {
		return nil, quotaConflict()
	}
	if err != nil {
		return nil, err
	}
	if dryResult != nil {
		stored = dryResult
	}
	return h.out(stored)
}

// carryOver keeps what a client may not change through an update: the
// system metadata, and the status (main resource) or everything but the
// status (status subresource). It checks the optimistic-concurrency
// precondition and bumps generation when the spec changed.
func (h *resourceHandler) carryOver(sub string, obj, old runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	om, _ := meta.Accessor(old)
	if rv := m.GetResourceVersion(); rv != "" && rv != om.GetResourceVersion() {
		return apierrors.NewConflict(h.res.GroupResource(), om.GetName(),
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	// An update that names the version it read may change the metadata
	// through /status too (a patch always names it).
	conditional := m.GetResourceVersion() != ""
	if uid := m.GetUID(); uid != "" && uid != om.GetUID() {
		return apierrors.NewConflict(h.res.GroupResource(), om.GetName(),
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, om.GetUID()))
	}
	if m.GetResourceVersion() == "" {
		m.SetResourceVersion(om.GetResourceVersion()) // an unconditional update
	}
	m.SetName(om.GetName())
	m.SetNamespace(om.GetNamespace())
	m.SetUID(om.GetUID())
	m.SetCreationTimestamp(om.GetCreationTimestamp())
	m.SetDeletionTimestamp(om.GetDeletionTimestamp())
	m.SetDeletionGracePeriodSeconds(om.GetDeletionGracePeriodSeconds())
	m.SetGeneration(om.GetGeneration())
	m.SetSelfLink("")
	if om.GetDeletionTimestamp() != nil && len(m.GetFinalizers()) > len(om.GetFinalizers()) {
		for _, f := range m.GetFinalizers() {
			if !contains(om.GetFinalizers(), f) {
				return apierrors.NewForbidden(h.res.GroupResource(), om.GetName(),
					fmt.Errorf("no new finalizers can be added if the object is being deleted, found new finalizers %q", f))
			}
		}
	}
	if sub == "ephemeralcontainers" {
		// Only the ephemeral containers move (kubectl debug).
		keep := old.DeepCopyObject().(*corev1.Pod)
		keep.Spec.EphemeralContainers = obj.(*corev1.Pod).Spec.EphemeralContainers
		keep.ResourceVersion = m.GetResourceVersion()
		copyInto(obj, keep)
		return nil
	}
	if h.res.Custom != nil {
		carryOverCustom(h, sub, obj, old)
		return nil
	}
	if !h.res.HasStatus {
		if h.res.SpecGeneration && specChanged(obj, old) {
			m.SetGeneration(om.GetGeneration() + 1)
		}
		return nil
	}
	switch sub {
	case "status":
		// The status moves, and so does the metadata, as upstream's status
		// strategies keep it (its system fields were kept above); the spec
		// stays as stored. An unconditional update keeps the stored
		// metadata: minik's kubelet sends only the pod's identity and
		// status.
		status, err := fieldOf(obj, "Status")
		if err != nil {
			return err
		}
		keep := old.DeepCopyObject()
		if err := setFieldOf(keep, "Status", status); err != nil {
			return err
		}
		km, _ := meta.Accessor(keep)
		if conditional {
			objectMeta, err := fieldOf(obj, "ObjectMeta")
			if err != nil {
				return err
			}
			if err := setFieldOf(keep, "ObjectMeta", objectMeta); err != nil {
				return err
			}
			keepOnStatusUpdate(keep, old)
		}
		km.SetResourceVersion(m.GetResourceVersion())
		km.SetManagedFields(m.GetManagedFields()) // a status apply's; trackWrite ignores a request's
		copyInto(obj, keep)
	default: // the main resource, or /scale which changes the spec
		status, err := fieldOf(old, "Status")
		if err != nil {
			return err
		}
		if err := setFieldOf(obj, "Status", status); err != nil {
			return err
		}
		if !h.res.NoGeneration && specChanged(obj, old) {
			m.SetGeneration(om.GetGeneration() + 1)
		}
	}
	return nil
}

// keepOnStatusUpdate restores the metadata a kind's upstream status
// strategy does not let a /status update change: a Deployment's labels,
// a Pod's owner references.
func keepOnStatusUpdate(obj, old runtime.Object) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		o.Labels = old.(*appsv1.Deployment).Labels
	case *corev1.Pod:
		o.OwnerReferences = old.(*corev1.Pod).OwnerReferences
	}
}

// patch answers PATCH on an object or its status.
func (h *resourceHandler) patch(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	mode, err := fieldValidation(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	data, patchType, err := readBody(r, append(patchTypes, applyPatchType)...)
	if err == nil && patchType == strategicMergePatchType && h.res.Custom != nil {
		err = strategicPatchUnsupported()
	}
	if err == nil {
		err = writeOptions(r, ri, patchType)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	ctx := withWarnings(r.Context(), w)
	if patchType == applyPatchType {
		h.serverSideApply(ctx, w, r, ri, data, mode)
		return
	}
	updated, err := h.updateObject(ctx, ri, isDryRun(r), func(current runtime.Object) (runtime.Object, error) {
		view, err := h.out(current)
		if err != nil {
			return nil, err
		}
		obj, err := h.applyPatchTo(view, patchType, data, mode, w)
		if err != nil {
			return nil, err
		}
		// As kube-apiserver: a patch may not rename or move the object
		// (this also refuses a strategic "$patch: delete" of the whole
		// object, which leaves it without a name).
		m, _ := meta.Accessor(obj)
		if m.GetName() != ri.name {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), ri.name))
		}
		if h.res.Namespaced && m.GetNamespace() != ri.namespace {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the namespace of the object (%s) does not match the namespace on the request (%s)", m.GetNamespace(), ri.namespace))
		}
		return h.in(obj)
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	h.srv.writeMaybeTable(w, r, h, http.StatusOK, updated)
}

// applyPatchTo returns view with the patch applied, decoded from the
// patched JSON as a request body is. A patch of the status alone is
// applied to it alone (asStatusPatch); should that fail, the whole
// object's patch runs, so that errors read the same either way.
func (h *resourceHandler) applyPatchTo(view runtime.Object, patchType string, data []byte, mode string, w http.ResponseWriter) (runtime.Object, error) {
	if sp, ok := asStatusPatch(patchType, view, data); ok {
		if err := h.applyStatusPatch(view, sp, patchType, mode, w); err == nil {
			return view, nil
		}
	}
	patched, err := applyPatch(patchType, view, data)
	if err != nil {
		return nil, err
	}
	obj, err := decodeInto(h.res, patched, "application/json", mode, w)
	if err != nil {
		return nil, patchError(patched, err)
	}
	return obj, nil
}

// applyStatusPatch applies sp to view's status in place.
func (h *resourceHandler) applyStatusPatch(view runtime.Object, sp statusPatch, patchType, mode string, w http.ResponseWriter) error {
	doc, err := sp.patchedDocument(patchType)
	if err != nil {
		return err
	}
	decoded, err := decodeInto(h.res, doc, "application/json", mode, w)
	if err != nil {
		return err
	}
	sp.set(decoded)
	view.GetObjectKind().SetGroupVersionKind(decoded.GetObjectKind().GroupVersionKind())
	return nil
}

// validateDryRun refuses dryRun values other than All, as Kubernetes
// does (422 on the request's options kind), instead of writing anyway.
func validateDryRun(values []string, optionsKind string) error {
	if errs := metav1validation.ValidateDryRun(field.NewPath("dryRun"), values); len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: optionsKind}, "", errs)
	}
	return nil
}

// optionsKind names the options type of a mutating verb.
var optionsKind = map[string]string{"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions",
	"delete": "DeleteOptions", "deletecollection": "DeleteOptions"}

// isDryRun reports whether the request asks for dryRun=All (other values
// were refused by validateDryRun before the verb ran).
func isDryRun(r *http.Request) bool {
	for _, v := range r.URL.Query()["dryRun"] {
		if v == "All" {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// specChanged compares two objects without their metadata and status.
func specChanged(a, b runtime.Object) bool {
	return string(specJSON(a)) != string(specJSON(b))
}

func specJSON(obj runtime.Object) []byte {
	var m map[string]json.RawMessage
	data, _ := json.Marshal(obj)
	_ = json.Unmarshal(data, &m)
	delete(m, "metadata")
	delete(m, "status")
	out, _ := json.Marshal(m)
	return out
}
