package apiserver

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik/apiserver/crd"
	"minik/apiserver/fieldmanager"
	"minik/apiserver/openapi"
	"minik/apiserver/registry"
	"minik/apiserver/storage"
)

// CustomResourceDefinitions, as kube-apiserver's apiextensions server:
//
//	CRD watch cache ──follow──▶ crdManager.crds ──kick──▶ loop:
//	   names and conditions (crd.Status) ─▶ status write (NamesAccepted, Established)
//	   deleted CRD ─▶ Terminating, delete every object, drop the cleanup finalizer
//	   established CRDs ─▶ crd.Compile ─▶ one storage.Store per CRD (its own watch
//	       cache), one resourceHandler per served version ─▶ customAPI (swapped
//	       atomically: routing and discovery read it without locks) ─▶ OpenAPI rebuilt
//
// Custom objects then take the same generic create/update/patch/delete
// and watch paths as built-in ones, as *unstructured.Unstructured.

// customAPI is what the CRDs make the apiserver serve. It is immutable:
// every change builds a new one.
type customAPI struct {
	handlers map[string]*resourceHandler // by "group/version/plural"
	groups   []groupVersions
}

// crdServing is one established CRD being served.
type crdServing struct {
	def      *crd.Definition
	rv       string // the CRD's resourceVersion it was compiled from
	store    *storage.Store
	cancel   context.CancelFunc
	handlers map[string]*resourceHandler
}

// crdManager keeps the served custom resources in step with the CRDs.
type crdManager struct {
	srv   *Server
	store *storage.Store // the CRDs'

	mu   sync.Mutex
	crds map[string]*apiextv1.CustomResourceDefinition // by name, from the watch
	kick chan struct{}

	serving map[string]*crdServing // by CRD name; only the loop touches it
	current atomic.Pointer[customAPI]
	// openapi is the document handler with the custom kinds in it.
	openapi  atomic.Pointer[http.Handler]
	builtins []openapi.Resource
	// resources are the OpenAPI resources, built-in and custom, that the
	// documents describe now (see openAPIResources).
	resources atomic.Pointer[[]openapi.Resource]
	// fieldKinds are the custom kinds registered for managedFields and
	// server-side apply (only the loop touches it).
	fieldKinds map[schema.GroupVersionKind]bool
}

func newCRDManager(s *Server, store *storage.Store, builtins []openapi.Resource, initial http.Handler) *crdManager {
	m := &crdManager{srv: s, store: store, crds: map[string]*apiextv1.CustomResourceDefinition{},
		kick: make(chan struct{}, 1), serving: map[string]*crdServing{}, builtins: builtins}
	m.current.Store(&customAPI{handlers: map[string]*resourceHandler{}})
	m.resources.Store(&builtins)
	m.openapi.Store(&initial)
	return m
}

// serveOpenAPI serves the latest documents.
func (m *crdManager) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	(*m.openapi.Load()).ServeHTTP(w, r)
}

// view: the CRD watch feeds the map and kicks the loop.
func (m *crdManager) reset(items []runtime.Object, _ int64) {
	m.mu.Lock()
	m.crds = map[string]*apiextv1.CustomResourceDefinition{}
	for _, o := range items {
		c := o.(*apiextv1.CustomResourceDefinition)
		m.crds[c.Name] = c
	}
	m.mu.Unlock()
	m.wake()
}

func (m *crdManager) apply(ev *storage.Event) {
	c := ev.Object.(*apiextv1.CustomResourceDefinition)
	m.mu.Lock()
	if ev.Type == "DELETED" {
		delete(m.crds, c.Name)
	} else {
		m.crds[c.Name] = c
	}
	m.mu.Unlock()
	m.wake()
}

func (m *crdManager) unsync() {}

func (m *crdManager) wake() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// start follows the CRDs and serves the established ones before it
// returns, so a restarted apiserver serves its custom resources at once.
func (m *crdManager) start(ctx context.Context) error {
	if err := follow(ctx, "customresourcedefinitions", m.store, m); err != nil {
		return err
	}
	<-m.kick
	again := m.sync(ctx)
	go m.loop(ctx, again)
	return nil
}

func (m *crdManager) loop(ctx context.Context, again bool) {
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	for {
		if again {
			retry.Reset(time.Second)
		}
		select {
		case <-ctx.Done():
			return
		case <-m.kick:
		case <-retry.C:
		}
		again = m.sync(ctx)
	}
}

// sync brings statuses, cleanups and the served set up to date. It
// reports whether work is left (a cleanup waiting for objects to go, a
// failed write) to try again in a second.
func (m *crdManager) sync(ctx context.Context) (again bool) {
	m.mu.Lock()
	crds := slices.Collect(maps.Values(m.crds))
	m.mu.Unlock()
	// Older CRDs keep their names when a newer one asks for the same.
	sort.Slice(crds, func(i, j int) bool {
		a, b := crds[i].CreationTimestamp, crds[j].CreationTimestamp
		return a.Before(&b) || a.Equal(&b) && crds[i].Name < crds[j].Name
	})
	for i, c := range crds {
		if c.DeletionTimestamp != nil {
			continue
		}
		updated, err := m.writeStatus(ctx, c, m.takenNames(crds, c))
		if err != nil {
			slog.Warn("updating CustomResourceDefinition status", "crd", c.Name, "err", err)
			again = true
			continue
		}
		crds[i] = updated
	}
	m.serve(ctx, crds)
	for _, c := range crds {
		if c.DeletionTimestamp != nil && slices.Contains(c.Finalizers, apiextv1.CustomResourceCleanupFinalizer) {
			if done, err := m.cleanup(ctx, c); err != nil || !done {
				if err != nil {
					slog.Warn("removing the objects of a deleted CustomResourceDefinition", "crd", c.Name, "err", err)
				}
				again = true
			}
		}
	}
	return again
}

// takenNames are the names of c's group held by older CRDs and by
// built-in resources.
func (m *crdManager) takenNames(crds []*apiextv1.CustomResourceDefinition, c *apiextv1.CustomResourceDefinition) crd.GroupNames {
	taken := crd.NewGroupNames()
	for _, o := range crds {
		if o.Name != c.Name && o.Spec.Group == c.Spec.Group {
			taken.Add(o.Status.AcceptedNames)
		}
	}
	for _, r := range registry.All() {
		if r.Group == c.Spec.Group {
			taken.Add(apiextv1.CustomResourceDefinitionNames{Plural: r.Resource, Singular: r.Singular, ShortNames: r.ShortNames,
				Kind: r.Kind, ListKind: r.Kind + "List"})
		}
	}
	return taken
}

// writeStatus stores the names and conditions crd.Status computes, if
// they changed, and returns the CRD as stored.
func (m *crdManager) writeStatus(ctx context.Context, c *apiextv1.CustomResourceDefinition, taken crd.GroupNames) (*apiextv1.CustomResourceDefinition, error) {
	want := crd.Status(c, taken, metav1.Now())
	if equalStatus(&want, &c.Status) {
		return c, nil
	}
	obj, _, err := m.store.GuaranteedUpdate(ctx, "", c.Name, func(cur runtime.Object) (runtime.Object, error) {
		cc := cur.(*apiextv1.CustomResourceDefinition)
		if cc.UID != c.UID || cc.DeletionTimestamp != nil {
			return nil, storage.ErrNoChange
		}
		cc.Status = crd.Status(cc, taken, metav1.Now())
		return cc, nil
	})
	if apierrors.IsNotFound(err) {
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	return obj.(*apiextv1.CustomResourceDefinition), nil
}

func equalStatus(a, b *apiextv1.CustomResourceDefinitionStatus) bool {
	x, y := a.DeepCopy(), b.DeepCopy()
	for _, st := range []*apiextv1.CustomResourceDefinitionStatus{x, y} {
		for i := range st.Conditions {
			st.Conditions[i].LastTransitionTime = metav1.Time{}
		}
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}

// serve compiles the established CRDs and swaps in the new custom API.
func (m *crdManager) serve(ctx context.Context, crds []*apiextv1.CustomResourceDefinition) {
	next := map[string]*crdServing{}
	changed := false
	for _, c := range crds {
		old := m.serving[c.Name]
		if old != nil && old.rv == c.ResourceVersion {
			next[c.Name] = old
			continue
		}
		def, err := crd.Compile(c)
		if err != nil {
			slog.Error("CustomResourceDefinition cannot be served", "crd", c.Name, "err", err)
		}
		if def == nil || len(def.Versions) == 0 {
			continue
		}
		sv := &crdServing{def: def, rv: c.ResourceVersion}
		if old != nil && old.def.UID == def.UID {
			sv.store, sv.cancel = old.store, old.cancel
		} else {
			if old != nil {
				old.cancel()
			}
			storageRes := &registry.Resource{Group: def.Group, Resource: def.Names.Plural, Version: def.StorageVersion, Kind: def.Names.Kind}
			sv.store = storage.NewStore(m.srv.cfg.Etcd, storageRes.KeyPrefix(), storageRes.GroupResource(),
				storageRes.GroupVersion().WithKind(def.Names.Kind), newUnstructured, m.srv.cfg.WatchCacheSize)
			sctx, cancel := context.WithCancel(ctx)
			if err := sv.store.Start(sctx); err != nil {
				cancel()
				slog.Error("starting the watch cache of a custom resource", "crd", c.Name, "err", err)
				continue
			}
			sv.cancel = cancel
		}
		sv.handlers = m.handlersFor(sv)
		next[c.Name] = sv
		changed = true
	}
	for name, old := range m.serving {
		if next[name] == nil { // deleted, or no longer established
			changed = true
			old.cancel()
		}
	}
	if !changed {
		return
	}
	m.serving = next
	api := &customAPI{handlers: map[string]*resourceHandler{}}
	var docs []openapi.Resource
	names := slices.Sorted(maps.Keys(next))
	for _, name := range names {
		sv := next[name]
		for _, v := range sv.def.Versions { // discovery order
			h := sv.handlers[sv.def.Group+"/"+v.Name+"/"+sv.def.Names.Plural]
			api.handlers[h.res.Group+"/"+h.res.Version+"/"+h.res.Resource] = h
			api.groups = addGroupVersion(api.groups, h.res)
			docs = append(docs, openapi.Resource{Group: h.res.Group, Version: h.res.Version, Kind: h.res.Kind,
				Resource: h.res.Resource, Namespaced: h.res.Namespaced, Verbs: h.res.ServedVerbs(),
				Subresources: h.res.Subresources, Schema: v.OpenAPI})
		}
	}
	all := append(slices.Clone(m.builtins), docs...)
	// The field managers first: a kind's first apply may come as soon as
	// its handler is served.
	stale := m.registerFieldKinds(all, next)
	m.current.Store(api)
	m.resources.Store(&all)
	h := openapi.NewHandler(all)
	m.openapi.Store(&h)
	for _, gvk := range stale {
		m.srv.fields.Unregister(gvk)
	}
}

// registerFieldKinds gives every served custom kind its managedFields
// and server-side apply: one type converter from the OpenAPI of all
// kinds (a custom object's metadata is the built-in ObjectMeta), built
// again when the CRDs change. It returns the kinds no longer served, for
// the caller to unregister once their handlers are gone.
func (m *crdManager) registerFieldKinds(all []openapi.Resource, serving map[string]*crdServing) []schema.GroupVersionKind {
	if m.srv.fields == nil {
		return nil
	}
	models, err := openapi.Models(all)
	var tc managedfields.TypeConverter
	if err == nil {
		tc, err = managedfields.NewTypeConverter(models, false)
	}
	if err != nil {
		slog.Error("custom resources keep no managedFields: building their type converter failed", "err", err)
	}
	want := map[schema.GroupVersionKind]bool{}
	for _, sv := range serving {
		for _, v := range sv.def.Versions {
			gvk := schema.GroupVersionKind{Group: sv.def.Group, Version: v.Name, Kind: sv.def.Names.Kind}
			if tc == nil {
				continue
			}
			want[gvk] = true
			fields := []string{"apiVersion", "kind", "metadata"}
			if props, ok := v.OpenAPI["properties"].(map[string]any); ok {
				for name := range props {
					if !slices.Contains(fields, name) {
						fields = append(fields, name)
					}
				}
			}
			m.srv.fields.Register(fieldmanager.Kind{GVK: gvk, New: newUnstructured, Converter: tc, HasStatus: v.Status, Fields: fields})
		}
	}
	var stale []schema.GroupVersionKind
	for gvk := range m.fieldKinds {
		if !want[gvk] {
			stale = append(stale, gvk)
		}
	}
	m.fieldKinds = want
	return stale
}

func newUnstructured() runtime.Object { return &unstructured.Unstructured{Object: map[string]any{}} }

// handlersFor makes the handler of each served version of a CRD. All
// share the CRD's store; objects are stored in the storage version and
// every version reads them with its own apiVersion (conversion None).
func (m *crdManager) handlersFor(sv *crdServing) map[string]*resourceHandler {
	d := sv.def
	out := map[string]*resourceHandler{}
	storageAPIVersion := schema.GroupVersion{Group: d.Group, Version: d.StorageVersion}.String()
	storageVersion := d.Versions[0]
	for _, v := range d.Versions {
		if v.Name == d.StorageVersion {
			storageVersion = v
		}
	}
	for _, v := range d.Versions {
		gv := schema.GroupVersion{Group: d.Group, Version: v.Name}
		kind, listKind := gv.WithKind(d.Names.Kind), gv.WithKind(d.Names.ListKind)
		res := &registry.Resource{Group: d.Group, Version: v.Name, Kind: d.Names.Kind, Resource: d.Names.Plural,
			Singular: d.Names.Singular, Namespaced: d.Namespaced, ShortNames: d.Names.ShortNames, Categories: d.Names.Categories,
			New: func() runtime.Object {
				u := &unstructured.Unstructured{Object: map[string]any{}}
				u.SetGroupVersionKind(kind)
				return u
			},
			NewList: func() runtime.Object {
				l := &unstructured.UnstructuredList{Object: map[string]any{}}
				l.SetGroupVersionKind(listKind)
				return l
			},
			HasStatus: v.Status, Custom: v}
		if v.Status {
			res.Subresources = append(res.Subresources, "status")
		}
		if v.Scale != nil {
			res.Subresources = append(res.Subresources, "scale")
		}
		if v.Deprecated {
			res.Warning = v.DeprecationWarning
			if res.Warning == "" {
				res.Warning = fmt.Sprintf("%s %s is deprecated", gv, d.Names.Kind)
			}
		}
		apiVersion := gv.String()
		out[d.Group+"/"+v.Name+"/"+d.Names.Plural] = &resourceHandler{res: res, store: sv.store, srv: m.srv, crd: d,
			watchEvents: m.srv.metrics.watchCounter(res),
			conv: &conversion{
				toStorage: func(o runtime.Object) (runtime.Object, error) { return withAPIVersion(o, storageAPIVersion), nil },
				fromStorage: func(o runtime.Object) (runtime.Object, error) {
					return withAPIVersion(defaultedOnRead(storageVersion, o), apiVersion), nil
				},
			}}
	}
	return out
}

// defaultedOnRead applies the storage version's current defaults to a
// stored custom object (a copy, when any applies).
func defaultedOnRead(v *crd.Version, obj runtime.Object) runtime.Object {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj
	}
	if m, copied := v.DefaultedOnRead(u.Object); copied {
		return &unstructured.Unstructured{Object: m}
	}
	return obj
}

// withAPIVersion returns obj with apiVersion set, copying the top level
// of the object (shared watch-cache objects are never changed).
func withAPIVersion(obj runtime.Object, apiVersion string) runtime.Object {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GetAPIVersion() == apiVersion {
		return obj
	}
	c := maps.Clone(u.Object)
	c["apiVersion"] = apiVersion
	return &unstructured.Unstructured{Object: c}
}

// cleanup is upstream's customresourcecleanup finalizer: it marks the CRD
// Terminating, deletes every object of it (each may wait for its own
// finalizers) and, once none is left, removes the finalizer so the CRD
// goes. It reports whether the CRD is done.
func (m *crdManager) cleanup(ctx context.Context, c *apiextv1.CustomResourceDefinition) (bool, error) {
	if _, _, err := m.store.GuaranteedUpdate(ctx, "", c.Name, func(cur runtime.Object) (runtime.Object, error) {
		cc := cur.(*apiextv1.CustomResourceDefinition)
		crd.Terminating(&cc.Status, nil, metav1.Now())
		return cc, nil
	}); err != nil {
		return false, err
	}
	sv := m.serving[c.Name]
	if sv != nil {
		list, err := sv.store.List(ctx, storage.ListOptions{})
		if err != nil {
			return false, err
		}
		if len(list.Items) > 0 {
			var h *resourceHandler
			for _, x := range sv.handlers {
				h = x
				break
			}
			for _, o := range list.Items {
				om, _ := meta.Accessor(o)
				if om.GetDeletionTimestamp() != nil {
					continue
				}
				if _, _, err := h.deleteObject(ctx, om.GetNamespace(), om.GetName(), &metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return false, err
				}
			}
			if list, err = sv.store.List(ctx, storage.ListOptions{}); err != nil || len(list.Items) > 0 {
				return false, err
			}
		}
	}
	_, _, err := m.store.GuaranteedUpdate(ctx, "", c.Name, func(cur runtime.Object) (runtime.Object, error) {
		cc := cur.(*apiextv1.CustomResourceDefinition)
		if cc.UID != c.UID {
			return nil, storage.ErrNoChange
		}
		cc.Finalizers = slices.DeleteFunc(cc.Finalizers, func(f string) bool { return f == apiextv1.CustomResourceCleanupFinalizer })
		return cc, nil
	})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	return err == nil, err
}

// openAPIResources are the resources the OpenAPI documents describe
// now, custom ones included (with their CRD version's schema); build
// schemas from them with openapi.Schemas. It changes when a CRD does.
func (s *Server) openAPIResources() []openapi.Resource {
	return *s.crds.resources.Load()
}

// customHandler returns the handler of a custom resource, if served.
func (s *Server) customHandler(key string) (*resourceHandler, bool) {
	if s.crds == nil {
		return nil, false
	}
	h, ok := s.crds.current.Load().handlers[key]
	return h, ok
}

// customGroups are the custom groups for discovery.
func (s *Server) customGroups() []groupVersions {
	if s.crds == nil {
		return nil
	}
	return s.crds.current.Load().groups
}

// customStores are the stores of the served custom resources.
func (s *Server) customStores() []*storage.Store {
	if s.crds == nil {
		return nil
	}
	seen := map[*storage.Store]bool{}
	var out []*storage.Store
	for _, h := range s.crds.current.Load().handlers {
		if !seen[h.store] {
			seen[h.store] = true
			out = append(out, h.store)
		}
	}
	return out
}

// admitCRD defaults and validates a CustomResourceDefinition (old is nil
// on create); a new CRD gets the cleanup finalizer and an empty status.
func admitCRD(c, old *apiextv1.CustomResourceDefinition) error {
	apiextv1.SetObjectDefaults_CustomResourceDefinition(c)
	if old == nil {
		if !slices.Contains(c.Finalizers, apiextv1.CustomResourceCleanupFinalizer) {
			c.Finalizers = append(c.Finalizers, apiextv1.CustomResourceCleanupFinalizer)
		}
		c.Status = apiextv1.CustomResourceDefinitionStatus{StoredVersions: []string{}, Conditions: []apiextv1.CustomResourceDefinitionCondition{}}
	}
	if errs := crd.Validate(c, old); len(errs) > 0 {
		return apierrors.NewInvalid(apiextv1.Kind("CustomResourceDefinition"), c.Name, errs)
	}
	return nil
}

// admitCustomObject applies a CRD version's schema to a custom object on
// create and update: defaults, then validation. On create (old nil) the
// status of a kind with a status subresource is dropped and generation
// starts at 1, as upstream's custom resource strategy does.
func (h *resourceHandler) admitCustomObject(obj, old runtime.Object, sub string) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || h.res.Custom == nil {
		return nil
	}
	v := h.res.Custom
	if old == nil {
		if h.crd != nil && h.crd.Terminating {
			return apierrors.NewMethodNotSupported(h.res.GroupResource(), "create")
		}
		if v.Status {
			delete(u.Object, "status")
		}
		u.SetGeneration(1)
	}
	v.Default(u.Object)
	var errs field.ErrorList
	if kind := u.GetKind(); kind != h.res.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), kind, "must be "+h.res.Kind))
	}
	errs = append(errs, v.Validate(u.Object)...)
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: h.res.Group, Kind: h.res.Kind}, u.GetName(), errs)
	}
	return nil
}

// carryOverCustom is carryOver's spec/status split for custom objects:
// with a status subresource, the main resource keeps the stored status
// and /status keeps everything else; generation moves when anything but
// metadata (and status, with the subresource) changed.
func carryOverCustom(h *resourceHandler, sub string, obj, old runtime.Object) {
	u, o := obj.(*unstructured.Unstructured), old.(*unstructured.Unstructured)
	if h.res.Custom.Status {
		if sub == "status" {
			keep := runtime.DeepCopyJSON(o.Object)
			if st, ok := u.Object["status"]; ok {
				keep["status"] = st
			} else {
				delete(keep, "status")
			}
			md, _ := keep["metadata"].(map[string]any)
			if md != nil {
				md["resourceVersion"] = u.GetResourceVersion()
			}
			u.Object = keep
			return
		}
		if st, ok := o.Object["status"]; ok {
			u.Object["status"] = runtime.DeepCopyJSONValue(st)
		} else {
			delete(u.Object, "status")
		}
	}
	if sub == "" || sub == "scale" {
		if !equalExcept(u.Object, o.Object, "metadata", "status", h.res.Custom.Status) {
			u.SetGeneration(o.GetGeneration() + 1)
		}
	}
}

// equalExcept compares two objects without metadata (and without status
// when skipStatus).
func equalExcept(a, b map[string]any, metadata, status string, skipStatus bool) bool {
	strip := func(m map[string]any) map[string]any {
		c := maps.Clone(m)
		delete(c, metadata)
		if skipStatus {
			delete(c, status)
		}
		return c
	}
	return fmt.Sprint(strip(a)) == fmt.Sprint(strip(b))
}

// strategicPatchUnsupported is upstream's answer to a strategic merge
// patch of a custom object: such objects have no patch strategies.
func strategicPatchUnsupported() error {
	var types []string
	for _, t := range patchTypes {
		if t != strategicMergePatchType {
			types = append(types, t)
		}
	}
	return statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		"the body of the request was in an unknown format - accepted media types include: "+strings.Join(types, ", "))
}
