package apiserver

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik/apiserver/registry"
	"minik/apiserver/storage"
)

// predicate decides whether an object belongs to a list or watch.
type predicate struct {
	namespace string
	labels    labels.Selector
	fields    fields.Selector
	res       *registry.Resource
}

// newPredicate parses labelSelector and fieldSelector, answering 400 for
// bad syntax or a field the resource cannot select on.
func newPredicate(res *registry.Resource, namespace, labelSel, fieldSel string) (*predicate, error) {
	p := &predicate{namespace: namespace, labels: labels.Everything(), fields: fields.Everything(), res: res}
	var err error
	if labelSel != "" {
		if p.labels, err = labels.Parse(labelSel); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
		}
	}
	if fieldSel != "" {
		if p.fields, err = fields.ParseSelector(fieldSel); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
		}
		supported := map[string]bool{"metadata.name": true, "metadata.namespace": true}
		if res.Fields != nil {
			for k := range res.Fields(res.New()) {
				supported[k] = true
			}
		}
		for _, req := range p.fields.Requirements() {
			if !supported[req.Field] {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
			}
		}
	}
	return p, nil
}

// everything reports whether the predicate selects every object.
func (p *predicate) everything() bool {
	return p.namespace == "" && p.labels.Empty() && p.fields.Empty()
}

// Matches reports whether obj is selected.
func (p *predicate) Matches(obj runtime.Object) bool {
	if p.fields.Empty() {
		return p.matches(obj, nil)
	}
	return p.matches(obj, p.fieldSet(obj))
}

// matches reports whether obj, whose selectable fields are set (unused
// when the predicate has no field selector), is selected.
func (p *predicate) matches(obj runtime.Object, set fields.Set) bool {
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	if p.namespace != "" && m.GetNamespace() != p.namespace {
		return false
	}
	if !p.labels.Empty() && !p.labels.Matches(labels.Set(m.GetLabels())) {
		return false
	}
	return p.fields.Empty() || p.fields.Matches(set)
}

// fieldSet returns the values obj has for every field a selector of this
// resource may name. It depends only on the resource, so watch events
// share one result among all watchers (storage.Event.FieldSets).
func (p *predicate) fieldSet(obj runtime.Object) fields.Set {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	set := fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}
	if p.res.Fields != nil {
		for k, v := range p.res.Fields(obj) {
			set[k] = v
		}
	}
	return set
}

// watchFilter turns the predicate into the watch cache's filter. As in
// Kubernetes, an object that starts matching is ADDED for this watcher and
// one that stops matching is DELETED.
func (p *predicate) watchFilter() storage.Filter {
	if p.everything() {
		return func(ev *storage.Event) (watch.EventType, bool) { return ev.Type, true }
	}
	return func(ev *storage.Event) (watch.EventType, bool) {
		var cur, prevSet fields.Set
		if !p.fields.Empty() {
			cur, prevSet = ev.FieldSets(p.fieldSet)
		}
		now := p.matches(ev.Object, cur)
		if ev.Type != watch.Modified {
			return ev.Type, now
		}
		prev := ev.Prev()
		before := prev != nil && p.matches(prev, prevSet)
		switch {
		case now && before:
			return watch.Modified, true
		case now:
			return watch.Added, true
		case before:
			return watch.Deleted, true
		}
		return "", false
	}
}

// fieldsAnd narrows a field selector with key=value.
func fieldsAnd(sel fields.Selector, key, value string) fields.Selector {
	return fields.AndSelectors(sel, fields.OneTermEqualSelector(key, value))
}
