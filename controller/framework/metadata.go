package framework

import (
	"context"
	"log/slog"
	"sync"
	"time"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik/client"
	"minik/client/informer"
)

// DiscoveryPeriod is how often MetadataResources reads discovery again,
// for kinds that come or go other than by a CRD (upstream's garbage
// collector reads it every 30s).
const DiscoveryPeriod = 30 * time.Second

// MetadataConfig says which kinds a MetadataResources follows, and whom
// it tells.
type MetadataConfig struct {
	// Shared are the resources the caller reads from the shared
	// informers: never followed again here.
	Shared []*Resource
	// Skip are other group resources never followed (the garbage
	// collector's: events).
	Skip []schema.GroupResource
	// Verbs are the verbs a discovered resource must take to be followed
	// (the garbage collector's: list, watch, delete).
	Verbs []string
	// Period is how often discovery is read again. Default DiscoveryPeriod.
	Period time.Duration
	// OnAdd is called for each kind that becomes followed, before its
	// informer runs (add handlers then), and OnRemove for each kind no
	// longer followed, one at a time under the follower's lock (do not
	// call back into it); OnSynced on a goroutine of its own, once the
	// kind's informer has synced.
	OnAdd, OnSynced, OnRemove func(*Resource)
}

// MetadataResources keeps one metadata-only informer
// (PartialObjectMetadata, indexed by owner) per kind that the shared
// informers do not hold: the custom resource of every established CRD,
// followed as the CRDs change, and every other resource discovery lists
// with the wanted verbs, read at Run and every Period. The controllers
// that treat every kind alike (the garbage collector) thus reach every
// kind, as upstream's garbage collector follows discovery. A kind is
// followed once, by group and resource, in one version (Followed); the
// CRDs themselves through the typed informer that follows them.
type MetadataResources struct {
	c    *client.Client
	log  *slog.Logger
	cfg  MetadataConfig
	skip map[schema.GroupResource]bool
	crds *informer.Informer[apiextv1.CustomResourceDefinition]
	// crdResource is crds as a followed kind (OnAdd at construction).
	crdResource *Resource

	mu  sync.Mutex
	ctx context.Context // Run's; nil before: informers are made, not started
	// discovered is discovery's last answer.
	discovered []APIResource
	running    map[schema.GroupResource]*metadataInformer
}

type metadataInformer struct {
	want   CustomResource
	inf    *informer.Informer[metav1.PartialObjectMetadata]
	res    *Resource
	cancel context.CancelFunc
}

// NewMetadataResources returns a follower of the kinds cfg picks.
func NewMetadataResources(c *client.Client, log *slog.Logger, cfg MetadataConfig) *MetadataResources {
	if cfg.Period <= 0 {
		cfg.Period = DiscoveryPeriod
	}
	skip := map[schema.GroupResource]bool{}
	for _, gr := range cfg.Skip {
		skip[gr] = true
	}
	for _, r := range cfg.Shared {
		skip[r.API.GroupResource()] = true
	}
	m := &MetadataResources{c: c, log: log, cfg: cfg, skip: skip, running: map[schema.GroupResource]*metadataInformer{},
		crds: informer.New(client.For[apiextv1.CustomResourceDefinition](c, CRDs), informer.Config{Logger: log})}
	// The CRD informer is a followed kind like any other, so that CRDs
	// are not watched a second time by a metadata informer.
	addOwnerIndexes(m.crds)
	m.crdResource = NewResource(m.crds, CRDs, "CustomResourceDefinition")
	skip[CRDs.GroupResource()] = true
	cfg.OnAdd(m.crdResource)
	m.crds.AddHandler(informer.Handler[apiextv1.CustomResourceDefinition]{
		OnAdd:    func(*apiextv1.CustomResourceDefinition) { m.sync() },
		OnUpdate: func(_, _ *apiextv1.CustomResourceDefinition) { m.sync() },
		OnDelete: m.crdGone,
	})
	return m
}

// Run follows the kinds until ctx ends: the CRDs as they change, and
// discovery once they have synced and then every Period. A failed
// discovery keeps what the last one found.
func (m *MetadataResources) Run(ctx context.Context) error {
	m.mu.Lock()
	m.ctx = ctx
	m.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-m.crds.Synced(): // a custom kind is then known as one
			go m.cfg.OnSynced(m.crdResource)
		case <-ctx.Done():
			return
		}
		t := time.NewTicker(m.cfg.Period)
		defer t.Stop()
		for {
			if err := m.Refresh(ctx); err != nil && ctx.Err() == nil {
				m.log.Warn("discovery failed; following the kinds found before", "err", err)
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	})
	err := m.crds.Run(ctx)
	wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	for gr, mi := range m.running {
		mi.cancel()
		delete(m.running, gr)
	}
	return err
}

// Refresh reads discovery now and follows what it lists.
func (m *MetadataResources) Refresh(ctx context.Context) error {
	rs, err := DiscoverResources(ctx, m.c)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.discovered = rs
	m.mu.Unlock()
	m.sync()
	return nil
}

// Informer returns the informer of a followed kind.
func (m *MetadataResources) Informer(gr schema.GroupResource) (*informer.Informer[metav1.PartialObjectMetadata], bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mi, ok := m.running[gr]
	if !ok {
		return nil, false
	}
	return mi.inf, true
}

// crdGone drops a deleted CRD's resource from discovery's last answer
// too: the apiserver no longer serves it, and following it until the
// next discovery would only fail.
func (m *MetadataResources) crdGone(c *apiextv1.CustomResourceDefinition) {
	gr := schema.GroupResource{Group: c.Spec.Group, Resource: c.Spec.Names.Plural}
	m.mu.Lock()
	kept := m.discovered[:0:0]
	for _, r := range m.discovered {
		if r.API.GroupResource() != gr {
			kept = append(kept, r)
		}
	}
	m.discovered = kept
	m.mu.Unlock()
	m.sync()
}

// Followed is the rule of which kinds a MetadataResources follows, by
// group resource: the served custom resource of each CRD of crds, and
// each resource of discovered that takes verbs and that no CRD of crds
// names (served or not, a CRD's resource follows its CRD); none of skip.
func Followed(crds []*apiextv1.CustomResourceDefinition, discovered []APIResource, skip map[schema.GroupResource]bool,
	verbs []string) map[schema.GroupResource]CustomResource {
	out := map[schema.GroupResource]CustomResource{}
	custom := map[schema.GroupResource]bool{}
	for _, c := range crds {
		custom[schema.GroupResource{Group: c.Spec.Group, Resource: c.Spec.Names.Plural}] = true
		if r, ok := ServedCustomResource(c); ok && !skip[r.API.GroupResource()] {
			out[r.API.GroupResource()] = r
		}
	}
	for _, r := range discovered {
		gr := r.API.GroupResource()
		if skip[gr] || custom[gr] || !r.Has(verbs...) {
			continue
		}
		out[gr] = CustomResource{API: r.API, Kind: r.Kind}
	}
	return out
}

// sync starts an informer for each kind newly followed and stops those
// of the kinds no longer followed (or now followed in another version).
func (m *MetadataResources) sync() {
	m.mu.Lock()
	defer m.mu.Unlock()
	want := Followed(m.crds.Store().List(), m.discovered, m.skip, m.cfg.Verbs)
	for gr, mi := range m.running {
		if r, ok := want[gr]; !ok || r != mi.want {
			mi.cancel()
			delete(m.running, gr)
			m.cfg.OnRemove(mi.res)
		}
	}
	for gr, r := range want {
		if _, ok := m.running[gr]; ok {
			continue
		}
		inf := NewMetadataInformer(m.c, r.API, m.log)
		addOwnerIndexes(inf)
		mi := &metadataInformer{want: r, inf: inf, res: NewResource(inf, r.API, r.Kind), cancel: func() {}}
		m.running[gr] = mi
		// Handlers go on before the informer runs: the callback registers them.
		m.cfg.OnAdd(mi.res)
		if m.ctx == nil {
			continue
		}
		ctx, cancel := context.WithCancel(m.ctx)
		mi.cancel = cancel
		go func() { _ = inf.Run(ctx) }()
		go func() {
			select {
			case <-inf.Synced():
				m.cfg.OnSynced(mi.res)
			case <-ctx.Done():
			}
		}()
	}
}

// NewMetadataInformer makes (without starting) an informer of the
// metadata of res's objects: what a controller needs of a kind it has
// no type for (owners, finalizers, a count). Its cache drops
// managedFields and annotations, which no such reader uses and which
// are most of an object's metadata (kubectl's last-applied-configuration).
func NewMetadataInformer(c *client.Client, res client.Resource, log *slog.Logger) *informer.Informer[metav1.PartialObjectMetadata] {
	inf := informer.New(client.For[metav1.PartialObjectMetadata](c, res), informer.Config{Logger: log})
	inf.SetTransform(func(o *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
		o.ManagedFields, o.Annotations = nil, nil
		return o
	})
	return inf
}
