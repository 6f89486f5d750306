package garbagecollector

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"minik/client"
	"minik/controller/framework"
)

// Name is the controller's name in logs and flags.
const Name = "garbagecollector"

// Controller is the garbage collector.
type Controller struct {
	c     *client.Client
	log   *slog.Logger
	queue *framework.Queue

	// mu guards the resources: those of the followed kinds come and go
	// with their CRDs and with discovery.
	mu        sync.RWMutex
	resources []*framework.Resource
	byGVK     map[schema.GroupKind]*framework.Resource
	byName    map[string]*framework.Resource
	followed  *framework.MetadataResources

	// sink performs the plans' actions (apiSink; a FakeSink in tests).
	sink framework.Sink[Action]
}

// ignored are the kinds never collected, as upstream's
// GetDeletableResources ignores them: events, in both their groups.
var ignored = []schema.GroupResource{{Resource: "events"}, {Group: "events.k8s.io", Resource: "events"}}

// deletable are the verbs of a kind the collector follows: it lists and
// watches the kind, and deletes its objects.
var deletable = []string{"list", "watch", "delete"}

// New wires the collector to every resource of inf, and through
// metadata-only informers to every other kind the apiserver serves that
// it can list, watch and delete (custom resources as their CRDs are
// established; the others as discovery lists them).
func New(c *client.Client, inf *framework.Informers, log *slog.Logger) *Controller {
	gc := &Controller{c: c, log: log.With("controller", Name), queue: framework.NewQueue(framework.QueueConfig{Name: Name}),
		byGVK: map[schema.GroupKind]*framework.Resource{}, byName: map[string]*framework.Resource{}}
	gc.sink = apiSink{gc}
	shared := inf.Resources()
	for _, r := range shared {
		gc.addResource(r)
	}
	gc.followed = framework.NewMetadataResources(c, gc.log, framework.MetadataConfig{Shared: shared, Skip: ignored, Verbs: deletable,
		OnAdd: gc.addResource, OnSynced: gc.judgeOwnedBy, OnRemove: gc.removeResource})
	return gc
}

// addResource starts collecting r's objects (before its informer runs).
func (gc *Controller) addResource(r *framework.Resource) {
	gc.mu.Lock()
	gc.resources = append(gc.resources, r)
	gc.byGVK[r.GVK.GroupKind()] = r
	gc.byName[r.API.GroupResource().String()] = r
	gc.mu.Unlock()
	r.AddHandler(func(old, obj metav1.Object) { gc.observe(r, old, obj) }, func(obj metav1.Object) { gc.observeDelete(r, obj) })
}

// judgeOwnedBy queues the objects owned by r's kind once r's informer
// has synced: they were judged while the kind was unknown (their owner
// then counted as solid), and an owner deleted before the informer
// started sends no delete event.
func (gc *Controller) judgeOwnedBy(r *framework.Resource) {
	gk := r.GVK.GroupKind()
	for _, o := range gc.snapshot() {
		if o == r || o.List == nil {
			continue
		}
		for _, obj := range o.List() {
			for _, ref := range obj.GetOwnerReferences() {
				if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && gv.Group == gk.Group && ref.Kind == gk.Kind {
					gc.queue.Add(itemKey(o, obj))
					break
				}
			}
		}
	}
}

// removeResource forgets a kind no longer followed (its CRD went, or
// discovery no longer lists it).
func (gc *Controller) removeResource(r *framework.Resource) {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	gc.resources = slices.DeleteFunc(gc.resources, func(x *framework.Resource) bool { return x == r })
	if gc.byGVK[r.GVK.GroupKind()] == r {
		delete(gc.byGVK, r.GVK.GroupKind())
	}
	if gc.byName[r.API.GroupResource().String()] == r {
		delete(gc.byName, r.API.GroupResource().String())
	}
}

// snapshot returns the resources collected now.
func (gc *Controller) snapshot() []*framework.Resource {
	gc.mu.RLock()
	defer gc.mu.RUnlock()
	return slices.Clone(gc.resources)
}

// key is "resource.group|namespace|name".
func itemKey(r *framework.Resource, obj metav1.Object) string {
	return r.API.GroupResource().String() + "|" + obj.GetNamespace() + "|" + obj.GetName()
}

func (gc *Controller) observe(r *framework.Resource, old, obj metav1.Object) {
	if old != nil && !gcRelevantChange(old, obj) {
		return // a status update or a Lease renewal: nothing the collector decides on changed
	}
	fins := obj.GetFinalizers()
	deletingWithGC := obj.GetDeletionTimestamp() != nil &&
		(slices.Contains(fins, metav1.FinalizerOrphanDependents) || slices.Contains(fins, metav1.FinalizerDeleteDependents))
	if len(obj.GetOwnerReferences()) > 0 || deletingWithGC {
		gc.queue.Add(itemKey(r, obj))
	}
}

// gcRelevantChange reports an update that may change the collector's
// decision about obj: its owner references, or its deletion (timestamp
// or finalizers). As upstream's graph builder, other updates queue
// nothing: an owner's own change reaches its dependents through its sync.
func gcRelevantChange(old, obj metav1.Object) bool {
	return !equality.Semantic.DeepEqual(old.GetOwnerReferences(), obj.GetOwnerReferences()) ||
		(old.GetDeletionTimestamp() == nil) != (obj.GetDeletionTimestamp() == nil) ||
		!slices.Equal(old.GetFinalizers(), obj.GetFinalizers())
}

// observeDelete queues the dependents of a deleted object (now perhaps
// dangling) and its owners (perhaps waiting for it).
func (gc *Controller) observeDelete(_ *framework.Resource, obj metav1.Object) {
	for _, d := range gc.dependents(obj.GetUID()) {
		gc.queue.Add(d.key)
	}
	for _, ref := range obj.GetOwnerReferences() {
		r := gc.resourceFor(ref)
		if r == nil {
			continue
		}
		ns := obj.GetNamespace()
		if !r.API.Namespaced {
			ns = ""
		}
		gc.queue.Add(r.API.GroupResource().String() + "|" + ns + "|" + ref.Name)
	}
}

type dependent struct {
	obj metav1.Object
	key string
}

func (gc *Controller) dependents(uid types.UID) []dependent {
	var out []dependent
	for _, r := range gc.snapshot() {
		for _, o := range r.ByIndex(framework.OwnerUIDIndex, string(uid)) {
			out = append(out, dependent{o, itemKey(r, o)})
		}
	}
	return out
}

func (gc *Controller) resourceFor(ref metav1.OwnerReference) *framework.Resource {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil
	}
	gc.mu.RLock()
	defer gc.mu.RUnlock()
	return gc.byGVK[schema.GroupKind{Group: gv.Group, Kind: ref.Kind}]
}

// Run processes the queue with workers goroutines until ctx ends.
func (gc *Controller) Run(ctx context.Context, workers int) {
	go func() {
		if err := gc.followed.Run(ctx); err != nil && ctx.Err() == nil {
			gc.log.Warn("following the served kinds stopped", "err", err)
		}
	}()
	framework.RunWorkers(ctx, gc.queue, workers, gc.sync, func(key string, err error) {
		gc.log.Warn("sync failed", "item", key, "err", err)
	})
}

func (gc *Controller) sync(ctx context.Context, key string) (framework.Result, error) {
	parts := strings.SplitN(key, "|", 3)
	if len(parts) != 3 {
		return framework.Result{}, nil
	}
	gc.mu.RLock()
	r := gc.byName[parts[0]]
	gc.mu.RUnlock()
	if r == nil {
		return framework.Result{}, nil
	}
	obj, ok := r.Get(parts[1], parts[2])
	if !ok {
		return framework.Result{}, nil
	}
	item := Item{Object: obj}
	for _, d := range gc.dependents(obj.GetUID()) {
		item.Dependents = append(item.Dependents, d.obj)
	}
	if obj.GetDeletionTimestamp() == nil {
		owners, dangling, err := gc.ownerStates(ctx, obj)
		if err != nil {
			return framework.Result{}, err
		}
		if dangling {
			// The cache may lag a write that already dropped that owner
			// (our own orphaning patch, just before the owner went): judge
			// the object as it is now, as upstream's attemptToDeleteItem does.
			live, err := gc.readLive(ctx, r, obj)
			if err != nil || live == nil {
				return framework.Result{}, err
			}
			if live.GetResourceVersion() != obj.GetResourceVersion() {
				if owners, _, err = gc.ownerStates(ctx, live); err != nil {
					return framework.Result{}, err
				}
				item.Object = live
			}
		}
		item.Owners = owners
	}
	return framework.Result{}, framework.Execute(ctx, gc.sink, Plan(item).Actions)
}

// ownerStates classifies each owner of obj, and reports whether any is
// dangling.
func (gc *Controller) ownerStates(ctx context.Context, obj metav1.Object) (map[types.UID]OwnerState, bool, error) {
	owners, dangling := map[types.UID]OwnerState{}, false
	for _, ref := range obj.GetOwnerReferences() {
		st, err := gc.ownerState(ctx, obj.GetNamespace(), ref)
		if err != nil {
			return nil, false, err
		}
		owners[ref.UID] = st
		dangling = dangling || st == OwnerDangling
	}
	return owners, dangling, nil
}

// readLive reads obj's metadata from the apiserver: nil when it is gone or
// replaced by a new object of that name (whose own event queues it).
func (gc *Controller) readLive(ctx context.Context, r *framework.Resource, obj metav1.Object) (*metav1.PartialObjectMetadata, error) {
	live, err := gc.getMetadata(ctx, r, obj.GetNamespace(), obj.GetName())
	if err != nil || live == nil || live.UID != obj.GetUID() {
		return nil, err
	}
	return live, nil
}

// getMetadata reads an object's metadata from the apiserver: nil when it
// does not exist.
func (gc *Controller) getMetadata(ctx context.Context, r *framework.Resource, ns, name string) (*metav1.PartialObjectMetadata, error) {
	var live metav1.PartialObjectMetadata
	err := gc.c.Do(ctx, "GET", r.API.Path(ns, name), nil, nil, &live)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return &live, nil
}

// ownerState classifies one owner, reading the API when the cache does
// not have it: an owner created a moment ago may not be cached yet.
func (gc *Controller) ownerState(ctx context.Context, ns string, ref metav1.OwnerReference) (OwnerState, error) {
	r := gc.resourceFor(ref)
	if r == nil {
		return OwnerSolid, nil // a kind we do not know: never collect
	}
	if !r.API.Namespaced {
		ns = ""
	}
	classify := func(o metav1.Object) OwnerState {
		if o.GetUID() != ref.UID {
			return OwnerDangling
		}
		if o.GetDeletionTimestamp() != nil && slices.Contains(o.GetFinalizers(), metav1.FinalizerDeleteDependents) {
			return OwnerWaiting
		}
		return OwnerSolid
	}
	if o, ok := r.Get(ns, ref.Name); ok && o.GetUID() == ref.UID {
		return classify(o), nil
	}
	live, err := gc.getMetadata(ctx, r, ns, ref.Name)
	switch {
	case err != nil:
		return OwnerSolid, err
	case live == nil:
		return OwnerDangling, nil
	}
	return classify(live), nil
}

// apiSink performs an action through the apiserver (Enqueue: on the
// collector's own queue).
type apiSink struct{ gc *Controller }

func (s apiSink) Do(ctx context.Context, a Action) error {
	gc := s.gc
	r := gc.resourceOf(a.Target)
	if a.Type == Enqueue {
		if r != nil {
			gc.queue.Add(itemKey(r, a.Target))
		}
		return nil
	}
	if r == nil {
		return nil
	}
	path := r.API.Path(a.Target.GetNamespace(), a.Target.GetName())
	var err error
	switch a.Type {
	case Delete:
		uid := a.Target.GetUID()
		policy := a.Policy
		gc.log.Info("deleting", "resource", r.API.Resource, "namespace", a.Target.GetNamespace(), "name", a.Target.GetName(), "propagation", policy)
		err = gc.c.Do(ctx, "DELETE", path, nil, &metav1.DeleteOptions{
			TypeMeta:          metav1.TypeMeta{Kind: "DeleteOptions", APIVersion: "v1"},
			Preconditions:     &metav1.Preconditions{UID: &uid},
			PropagationPolicy: &policy,
		}, nil)
	case RemoveOwnerRefs, UnblockOwnerRefs:
		err = gc.patchOwnerRefs(ctx, r, a)
	case RemoveFinalizer:
		err = gc.patchFinalizers(ctx, r, a)
	}
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) && a.Type == Delete {
		return nil // gone already, or replaced by a new object of that name
	}
	return err
}

// resourceOf finds the resource of a cached object by looking it up.
func (gc *Controller) resourceOf(obj metav1.Object) *framework.Resource {
	for _, r := range gc.snapshot() {
		if o, ok := r.Get(obj.GetNamespace(), obj.GetName()); ok && o.GetUID() == obj.GetUID() {
			return r
		}
	}
	return nil
}

// patchOwnerRefs rewrites ownerReferences with a JSON patch guarded by a
// test of the current list, so a concurrent change makes it fail and retry.
func (gc *Controller) patchOwnerRefs(ctx context.Context, r *framework.Resource, a Action) error {
	old := a.Target.GetOwnerReferences()
	var refs []metav1.OwnerReference
	f := false
	for _, ref := range old {
		hit := slices.Contains(a.OwnerUIDs, ref.UID)
		switch {
		case hit && a.Type == RemoveOwnerRefs:
			continue
		case hit && a.Type == UnblockOwnerRefs:
			ref.BlockOwnerDeletion = &f
		}
		refs = append(refs, ref)
	}
	ops := []map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": a.Target.GetUID()},
		{"op": "test", "path": "/metadata/ownerReferences", "value": old},
	}
	if len(refs) == 0 {
		ops = append(ops, map[string]any{"op": "remove", "path": "/metadata/ownerReferences"})
	} else {
		ops = append(ops, map[string]any{"op": "replace", "path": "/metadata/ownerReferences", "value": refs})
	}
	return gc.patch(ctx, r, a.Target, ops)
}

func (gc *Controller) patchFinalizers(ctx context.Context, r *framework.Resource, a Action) error {
	old := a.Target.GetFinalizers()
	kept := slices.DeleteFunc(slices.Clone(old), func(f string) bool { return f == a.Finalizer })
	ops := []map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": a.Target.GetUID()},
		{"op": "test", "path": "/metadata/finalizers", "value": old},
		{"op": "replace", "path": "/metadata/finalizers", "value": kept},
	}
	gc.log.Info("removing finalizer", "resource", r.API.Resource, "namespace", a.Target.GetNamespace(), "name", a.Target.GetName(), "finalizer", a.Finalizer)
	return gc.patch(ctx, r, a.Target, ops)
}

func (gc *Controller) patch(ctx context.Context, r *framework.Resource, obj metav1.Object, ops []map[string]any) error {
	data, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	t := client.For[metav1.PartialObjectMetadata](gc.c, r.API)
	_, err = t.Patch(ctx, obj.GetNamespace(), obj.GetName(), types.JSONPatchType, data, metav1.PatchOptions{})
	return err
}
