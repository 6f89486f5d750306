package informer

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Built-in index names.
const (
	// NamespaceIndex indexes every object by its namespace.
	NamespaceIndex = "namespace"
	// NodeNameIndex indexes pods by spec.nodeName; pods not yet scheduled
	// are under "", which is how a scheduler finds its work.
	NodeNameIndex = "spec.nodeName"
)

// IndexFunc returns the values under which obj is indexed; none is fine.
type IndexFunc[T any] func(obj *T) []string

// Key returns the cache key of an object: "namespace/name", or just "name"
// for cluster-scoped objects, as in client-go.
func Key(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// KeyOf returns the cache key of obj.
func KeyOf[T any](obj *T) string {
	m := meta(obj)
	return Key(m.GetNamespace(), m.GetName())
}

func meta[T any](obj *T) metav1.Object { return any(obj).(metav1.Object) }

func resourceVersion[T any](obj *T) string { return meta(obj).GetResourceVersion() }

// Store is the informer's local cache: objects by key plus any number of
// indexes. It is safe for concurrent use. Objects in it are shared: treat
// them as read-only, and DeepCopy one before changing it.
type Store[T any] struct {
	mu    sync.RWMutex
	items map[string]*T
	// versions, in a keys-only store (Config.KeysOnly), is what it keeps
	// instead of items: each key's resourceVersion.
	versions map[string]string
	indexers map[string]IndexFunc[T]
	// indices maps index name → indexed value → set of keys.
	indices map[string]map[string]map[string]struct{}
}

// newKeysOnlyStore returns a store that keeps each object's key and
// resourceVersion, not the object: Get, List and ByIndex find nothing,
// and what upsert and remove return in place of the old object is a
// stand-in holding only its namespace, name and resourceVersion.
func newKeysOnlyStore[T any]() *Store[T] {
	return &Store[T]{versions: map[string]string{}, indexers: map[string]IndexFunc[T]{}, indices: map[string]map[string]map[string]struct{}{}}
}

// standIn is a keys-only store's stand-in for the object at key.
func standIn[T any](key, resourceVersion string) *T {
	obj := new(T)
	m := meta(obj)
	if ns, name, ok := strings.Cut(key, "/"); ok {
		m.SetNamespace(ns)
		m.SetName(name)
	} else {
		m.SetName(key)
	}
	m.SetResourceVersion(resourceVersion)
	return obj
}

func newStore[T any]() *Store[T] {
	s := &Store[T]{
		items:    map[string]*T{},
		indexers: map[string]IndexFunc[T]{},
		indices:  map[string]map[string]map[string]struct{}{},
	}
	s.addIndex(NamespaceIndex, func(obj *T) []string { return []string{meta(obj).GetNamespace()} })
	if _, ok := any(new(T)).(*corev1.Pod); ok {
		s.addIndex(NodeNameIndex, func(obj *T) []string { return []string{any(obj).(*corev1.Pod).Spec.NodeName} })
	}
	return s
}

// Get returns the object namespace/name ("" namespace for cluster-scoped).
func (s *Store[T]) Get(namespace, name string) (*T, bool) {
	return s.GetByKey(Key(namespace, name))
}

// GetByKey returns the object with key (see Key).
func (s *Store[T]) GetByKey(key string) (*T, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	obj, ok := s.items[key]
	return obj, ok
}

// List returns every object, in no particular order.
func (s *Store[T]) List() []*T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*T, 0, len(s.items))
	for _, obj := range s.items {
		out = append(out, obj)
	}
	return out
}

// Keys returns every key, in no particular order.
func (s *Store[T]) Keys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.versions != nil {
		return slices.Collect(maps.Keys(s.versions))
	}
	return slices.Collect(maps.Keys(s.items))
}

// Len returns the number of objects.
func (s *Store[T]) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.items) + len(s.versions)
}

// ByIndex returns the objects that index name maps to value, in no
// particular order; nil if there is no such index.
func (s *Store[T]) ByIndex(index, value string) []*T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := s.indices[index][value]
	out := make([]*T, 0, len(keys))
	for k := range keys {
		out = append(out, s.items[k])
	}
	return out
}

// addIndex adds an index and fills it from the objects already there.
func (s *Store[T]) addIndex(name string, fn IndexFunc[T]) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.indexers[name]; dup {
		return fmt.Errorf("informer: index %q already exists", name)
	}
	s.indexers[name] = fn
	s.indices[name] = map[string]map[string]struct{}{}
	for key, obj := range s.items {
		s.indexOne(name, fn, key, obj)
	}
	return nil
}

// upsert stores obj and returns the object it replaced, if any.
func (s *Store[T]) upsert(obj *T) (old *T) {
	key := KeyOf(obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.versions != nil {
		if rv, ok := s.versions[key]; ok {
			old = standIn[T](key, rv)
		}
		s.versions[key] = resourceVersion(obj)
		return old
	}
	old = s.items[key]
	if old != nil {
		s.unindex(key, old)
	}
	s.items[key] = obj
	for name, fn := range s.indexers {
		s.indexOne(name, fn, key, obj)
	}
	return old
}

// remove deletes key and returns the object it held, if any.
func (s *Store[T]) remove(key string) (old *T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.versions != nil {
		if rv, ok := s.versions[key]; ok {
			delete(s.versions, key)
			return standIn[T](key, rv)
		}
		return nil
	}
	old = s.items[key]
	if old != nil {
		s.unindex(key, old)
		delete(s.items, key)
	}
	return old
}

func (s *Store[T]) indexOne(name string, fn IndexFunc[T], key string, obj *T) {
	idx := s.indices[name]
	for _, v := range fn(obj) {
		if idx[v] == nil {
			idx[v] = map[string]struct{}{}
		}
		idx[v][key] = struct{}{}
	}
}

func (s *Store[T]) unindex(key string, obj *T) {
	for name, fn := range s.indexers {
		idx := s.indices[name]
		for _, v := range fn(obj) {
			delete(idx[v], key)
			if len(idx[v]) == 0 {
				delete(idx, v)
			}
		}
	}
}
