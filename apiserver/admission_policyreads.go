package apiserver

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik/apiserver/storage"
)

// policyReads holds what the LimitRanger and ResourceQuota plugins read:
// the LimitRange and ResourceQuota stores and their admission caches.
type policyReads struct {
	limitRanges, quotas         *storage.Store
	limitRangeCache, quotaCache *objectCache
}

func newPolicyReads(byID map[string]*storage.Store) *policyReads {
	p := &policyReads{limitRanges: byID["limitranges"], quotas: byID["resourcequotas"]}
	p.limitRangeCache = newObjectCache("limitranges", p.limitRanges)
	p.quotaCache = newObjectCache("resourcequotas", p.quotas)
	return p
}

func (p *policyReads) start(ctx context.Context) error {
	if err := p.limitRangeCache.start(ctx); err != nil {
		return err
	}
	return p.quotaCache.start(ctx)
}

// inNamespace returns the cached objects of one namespace, sorted by
// name, and the revision the cache is complete up to; ok is false when
// the cache is not synced.
func (c *objectCache) inNamespace(namespace string) (objs []runtime.Object, rev int64, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.synced {
		return nil, 0, false
	}
	for _, o := range c.objs {
		if m, ok := o.obj.(interface{ GetNamespace() string }); ok && m.GetNamespace() == namespace {
			objs = append(objs, o.obj)
		}
	}
	sort.Slice(objs, func(i, j int) bool {
		return objs[i].(interface{ GetName() string }).GetName() < objs[j].(interface{ GetName() string }).GetName()
	})
	return objs, c.rev, true
}

// listNamespace reads the objects of one namespace from the cache, with a
// guard that none was added or changed since, or else from etcd.
func (r *admissionReads) listNamespace(ctx context.Context, store *storage.Store, cache *objectCache, namespace string) ([]runtime.Object, error) {
	if r.cached {
		if objs, rev, ok := cache.inNamespace(namespace); ok {
			r.guards = append(r.guards, storage.Guard{Key: store.Key(namespace, ""), Prefix: true, ModRevision: rev})
			return objs, nil
		}
	}
	list, err := store.List(ctx, storage.ListOptions{Namespace: namespace})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// limitRanges reads the LimitRanges of a namespace, by name.
func (r *admissionReads) limitRanges(ctx context.Context, namespace string) ([]*corev1.LimitRange, error) {
	p := r.srv.policy
	objs, err := r.listNamespace(ctx, p.limitRanges, p.limitRangeCache, namespace)
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.LimitRange, len(objs))
	for i, o := range objs {
		out[i] = o.(*corev1.LimitRange)
	}
	return out, nil
}

// resourceQuotas reads the ResourceQuotas of a namespace, by name. The
// objects are shared: copy before changing.
func (r *admissionReads) resourceQuotas(ctx context.Context, namespace string) ([]*corev1.ResourceQuota, error) {
	p := r.srv.policy
	objs, err := r.listNamespace(ctx, p.quotas, p.quotaCache, namespace)
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.ResourceQuota, len(objs))
	for i, o := range objs {
		out[i] = o.(*corev1.ResourceQuota)
	}
	return out, nil
}
