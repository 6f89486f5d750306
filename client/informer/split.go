package informer

import (
	"context"
	"sync"
)

// Split shares one informer among many readers that each want one slice
// of its objects (the pods bound to one node, one Node by name) and hands
// each reader a child Informer of its slice. Hollow nodes use it: one pod
// watch for thousands of kubelets in one process, filtered locally by
// spec.nodeName, instead of one watch each, as kubemark's hollow nodes
// would otherwise cost the apiserver.
//
//	parent: LIST + WATCH ─▶ cache ─▶ handlers ─▶ Split: key(obj)
//	                                               │ byKey (in the parent's event order)
//	                       children[key]: cache ─▶ queue ─▶ their handlers
//
// A child does no list or watch of its own: it is synced once the parent
// is, and its handlers see its slice's adds, updates and deletes in the
// parent's order. An object whose key changes (a pod bound to a node:
// "" → NODE) is deleted from the old key's children and added to the new
// key's.
type Split[T any] struct {
	parent *Informer[T]
	key    func(*T) string

	mu sync.Mutex
	// byKey holds the parent's objects by key, then by cache key, as the
	// parent's handlers have seen them: a child made late starts from it,
	// neither ahead of nor behind what it will be fed next.
	byKey    map[string]map[string]*T
	children map[string][]*Informer[T]
}

// NewSplit splits parent's objects by key. Call it before parent.Run,
// since it adds a handler to parent.
func NewSplit[T any](parent *Informer[T], key func(*T) string) *Split[T] {
	s := &Split[T]{parent: parent, key: key, byKey: map[string]map[string]*T{}, children: map[string][]*Informer[T]{}}
	parent.AddHandler(Handler[T]{OnAdd: s.add, OnUpdate: s.update, OnDelete: s.delete})
	return s
}

// Child returns a new informer of the parent's objects under key. It may
// be made before or after the parent runs; run it with Run, which returns
// when ctx ends and then stops feeding it.
func (s *Split[T]) Child(key string) *Informer[T] {
	c := New[T](nil, Config{Logger: s.parent.cfg.Logger})
	c.fed = &feed{parentSynced: s.parent.Synced(), leave: func() { s.remove(key, c) }}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, obj := range s.byKey[key] {
		c.feedUpsert(obj)
	}
	s.children[key] = append(s.children[key], c)
	return c
}

func (s *Split[T]) remove(key string, c *Informer[T]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.children[key]
	for i := range cs {
		if cs[i] == c {
			s.children[key] = append(cs[:i:i], cs[i+1:]...)
			break
		}
	}
	if len(s.children[key]) == 0 {
		delete(s.children, key)
	}
}

func (s *Split[T]) add(obj *T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.upsertLocked(s.key(obj), obj)
}

func (s *Split[T]) update(old, new *T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.key(old); k != s.key(new) {
		s.deleteLocked(k, old)
	}
	s.upsertLocked(s.key(new), new)
}

func (s *Split[T]) delete(obj *T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleteLocked(s.key(obj), obj)
}

func (s *Split[T]) upsertLocked(key string, obj *T) {
	objs := s.byKey[key]
	if objs == nil {
		objs = map[string]*T{}
		s.byKey[key] = objs
	}
	objs[KeyOf(obj)] = obj
	for _, c := range s.children[key] {
		c.feedUpsert(obj)
	}
}

func (s *Split[T]) deleteLocked(key string, obj *T) {
	objs := s.byKey[key]
	delete(objs, KeyOf(obj))
	if len(objs) == 0 {
		delete(s.byKey, key)
	}
	for _, c := range s.children[key] {
		c.feedDelete(obj)
	}
}

// feed is what a child informer of a Split has instead of a source.
type feed struct {
	parentSynced <-chan struct{}
	leave        func() // stops the Split feeding the child
}

// runFed is Run for a child: it hands out what the Split feeds it, synced
// once the parent is, until ctx ends. The parent's handlers feed the child
// synchronously, so when the parent is synced every object of its first
// list is already in the child's queue, before the synced mark.
func (inf *Informer[T]) runFed(ctx context.Context) {
	defer inf.fed.leave()
	select {
	case <-inf.fed.parentSynced:
		inf.queue.push(notification[T]{kind: kindSynced})
	case <-ctx.Done():
		return
	}
	<-ctx.Done()
}

// feedUpsert puts obj into the store and queues an add or, if the store
// had it, an update for the handlers.
func (inf *Informer[T]) feedUpsert(obj *T) {
	if old := inf.store.upsert(obj); old != nil {
		inf.queue.push(notification[T]{kind: kindUpdate, old: old, new: obj})
	} else {
		inf.queue.push(notification[T]{kind: kindAdd, new: obj})
	}
}

// feedDelete removes obj from the store and queues its delete with the
// final state obj, but only for an object the handlers were told about.
func (inf *Informer[T]) feedDelete(obj *T) {
	if old := inf.store.remove(KeyOf(obj)); old != nil {
		inf.queue.push(notification[T]{kind: kindDelete, old: obj})
	}
}
