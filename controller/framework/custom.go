package framework

import (
	"context"
	"log/slog"
	"sort"
	"sync"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	"minik/client"
	"minik/client/informer"
)

// CRDs is the resource of CustomResourceDefinitions.
var CRDs = client.Resource{Group: apiextv1.GroupName, Version: "v1", Resource: "customresourcedefinitions"}

// CustomResources follows the CustomResourceDefinitions and keeps one
// metadata-only informer (PartialObjectMetadata, indexed by owner) per
// established CRD, so that the controllers that treat every kind alike
// (the garbage collector) reach custom objects too, as upstream's
// garbage collector follows discovery. Resources come and go through
// the callbacks, which run on one goroutine.
type CustomResources struct {
	c        *client.Client
	log      *slog.Logger
	onAdd    func(*Resource)
	onSynced func(*Resource)
	onRemove func(*Resource)

	mu      sync.Mutex
	ctx     context.Context
	running map[string]*customInformer // by CRD name
}

type customInformer struct {
	key    string // group/version/resource/scope: a change restarts it
	res    *Resource
	cancel context.CancelFunc
}

// NewCustomResources returns a follower that calls onAdd for each
// custom resource that becomes served (before its informer runs: add
// handlers then), onSynced once its informer has synced, and onRemove
// for each that goes.
func NewCustomResources(c *client.Client, log *slog.Logger, onAdd, onSynced, onRemove func(*Resource)) *CustomResources {
	return &CustomResources{c: c, log: log, onAdd: onAdd, onSynced: onSynced, onRemove: onRemove, running: map[string]*customInformer{}}
}

// Run follows the CRDs until ctx ends.
func (cr *CustomResources) Run(ctx context.Context) error {
	cr.mu.Lock()
	cr.ctx = ctx
	cr.mu.Unlock()
	inf := informer.New(client.For[apiextv1.CustomResourceDefinition](cr.c, CRDs), informer.Config{Logger: cr.log})
	sync := func() { cr.sync(inf.Store().List()) }
	inf.AddHandler(informer.Handler[apiextv1.CustomResourceDefinition]{
		OnAdd:    func(*apiextv1.CustomResourceDefinition) { sync() },
		OnUpdate: func(_, _ *apiextv1.CustomResourceDefinition) { sync() },
		OnDelete: func(*apiextv1.CustomResourceDefinition) { sync() },
	})
	err := inf.Run(ctx)
	cr.mu.Lock()
	defer cr.mu.Unlock()
	for name, ci := range cr.running {
		ci.cancel()
		delete(cr.running, name)
	}
	return err
}

// CustomResource is what a served CRD looks like to the controllers.
type CustomResource struct {
	API  client.Resource
	Kind string
}

// ServedCustomResource picks the version a controller reads an
// established CRD through: its preferred (highest) served version.
func ServedCustomResource(c *apiextv1.CustomResourceDefinition) (CustomResource, bool) {
	if c.DeletionTimestamp != nil && len(c.Finalizers) == 0 || c.Status.AcceptedNames.Plural == "" {
		return CustomResource{}, false
	}
	established := false
	for _, cond := range c.Status.Conditions {
		if cond.Type == apiextv1.Established && cond.Status == apiextv1.ConditionTrue {
			established = true
		}
	}
	var versions []string
	for _, v := range c.Spec.Versions {
		if v.Served {
			versions = append(versions, v.Name)
		}
	}
	if !established || len(versions) == 0 {
		return CustomResource{}, false
	}
	sort.Slice(versions, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(versions[i], versions[j]) > 0 })
	return CustomResource{
		API: client.Resource{Group: c.Spec.Group, Version: versions[0], Resource: c.Status.AcceptedNames.Plural,
			Namespaced: c.Spec.Scope == apiextv1.NamespaceScoped},
		Kind: c.Status.AcceptedNames.Kind,
	}, true
}

func (cr *CustomResources) sync(crds []*apiextv1.CustomResourceDefinition) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	want := map[string]CustomResource{}
	for _, c := range crds {
		if r, ok := ServedCustomResource(c); ok {
			want[c.Name] = r
		}
	}
	for name, ci := range cr.running {
		if r, ok := want[name]; !ok || r.API.String()+"/"+r.Kind != ci.key {
			ci.cancel()
			delete(cr.running, name)
			cr.onRemove(ci.res)
		}
	}
	for name, r := range want {
		if _, ok := cr.running[name]; ok {
			continue
		}
		inf := informer.New(client.For[metav1.PartialObjectMetadata](cr.c, r.API), informer.Config{Logger: cr.log})
		addOwnerIndexes(inf)
		res := NewResource(inf, r.API, r.Kind)
		ctx, cancel := context.WithCancel(cr.ctx)
		ci := &customInformer{key: r.API.String() + "/" + r.Kind, res: res, cancel: cancel}
		cr.running[name] = ci
		// Handlers go on before the informer runs: the callback registers them.
		cr.onAdd(res)
		go func() { _ = inf.Run(ctx) }()
		go func() {
			select {
			case <-inf.Synced():
				cr.onSynced(res)
			case <-ctx.Done():
			}
		}()
	}
}
