package framework

import (
	"slices"
	"strings"
	"sync"
	"unique"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Pod (anti-)affinity matches terms against many pods in one scheduling
// cycle, and the pods of one workload share their namespace and labels.
// MatchMemo matches a term once per such group instead of once per pod:
// with a Deployment's anti-affinity over 5,000 nodes, Filter evaluates
// its selector once per cycle, not once per occupied node (each a walk
// through a different pod's label map, mostly cache misses).

// labelsKey names a pod's namespace and labels: equal keys, equal labels.
// Keys and values cannot hold '=' or NUL, so the encoding is unambiguous.
func labelsKey(pod *corev1.Pod) unique.Handle[string] {
	keys := make([]string, 0, len(pod.Labels))
	for k := range pod.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(pod.Namespace)
	for _, k := range keys {
		b.WriteByte(0)
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(pod.Labels[k])
	}
	return unique.Make(b.String())
}

// termKey names everything Matches reads from a term: its namespaces, its
// namespace selector and its selector, each in the selector's own
// parseable form. nothing marks a nil labelSelector (it selects no pod;
// an empty one selects all, and both print as "").
func termKey(t *AffinityTerm, nothing bool) unique.Handle[string] {
	var b strings.Builder
	b.WriteString(strings.Join(sets.List(t.Namespaces), ","))
	b.WriteByte(0)
	if t.NamespaceSelector == nil {
		b.WriteByte(1)
	} else {
		b.WriteString(t.NamespaceSelector.String())
	}
	b.WriteByte(0)
	if nothing {
		b.WriteByte(1)
	} else {
		b.WriteString(t.Selector.String())
	}
	return unique.Make(b.String())
}

type matchKey struct{ term, pod unique.Handle[string] }

// MatchMemo remembers, for one scheduling cycle, whether a term selects
// the pods of one namespace and label set. Namespace labels come from
// the cycle's snapshot, so they cannot change under it. Safe for
// Filter's parallel calls.
type MatchMemo struct {
	nsLabels func(ns string) labels.Set
	mu       sync.RWMutex
	known    map[matchKey]bool
}

// NewMatchMemo returns an empty memo; nsLabels gives a namespace's labels.
func NewMatchMemo(nsLabels func(ns string) labels.Set) *MatchMemo {
	return &MatchMemo{nsLabels: nsLabels, known: make(map[matchKey]bool)}
}

// Matches reports whether t selects p's pod, as t.Matches does.
func (m *MatchMemo) Matches(t *AffinityTerm, p *PodInfo) bool {
	var zero unique.Handle[string]
	if t.key == zero || p.labelsKey == zero { // built by hand, not by NewPodInfo
		return t.Matches(p.Pod, m.namespaceLabels(t, p.Pod))
	}
	k := matchKey{t.key, p.labelsKey}
	m.mu.RLock()
	v, ok := m.known[k]
	m.mu.RUnlock()
	if ok {
		return v
	}
	v = t.Matches(p.Pod, m.namespaceLabels(t, p.Pod))
	m.mu.Lock()
	m.known[k] = v
	m.mu.Unlock()
	return v
}

func (m *MatchMemo) namespaceLabels(t *AffinityTerm, pod *corev1.Pod) labels.Set {
	if t.NamespaceSelector == nil {
		return nil
	}
	return m.nsLabels(pod.Namespace)
}
