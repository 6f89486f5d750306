package cache

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"k8s.io/apimachinery/pkg/labels"

	"minik/scheduler/framework"
)

// Snapshot is a consistent, read-only copy of the cache for one scheduling
// cycle. It implements framework.SharedLister.
type Snapshot struct {
	nodeInfoMap  map[string]*framework.NodeInfo
	nodeInfoList []*framework.NodeInfo
	withAffinity []*framework.NodeInfo
	withAnti     []*framework.NodeInfo
	namespaces   map[string]labels.Set
	pdbs         []*policyv1.PodDisruptionBudget
	services     map[string][]*corev1.Service // with a selector, by namespace
	storage      framework.StorageLister

	generation int64 // the highest NodeInfo generation copied
	nodeSetGen int64
	nsGen      int64
	pdbGen     int64
	svcGen     int64
}

var _ framework.SharedLister = &Snapshot{}

// NewEmptySnapshot returns a snapshot to pass to Cache.UpdateSnapshot.
func NewEmptySnapshot() *Snapshot {
	return &Snapshot{nodeInfoMap: map[string]*framework.NodeInfo{}, namespaces: map[string]labels.Set{}}
}

// NewSnapshot builds a snapshot directly from NodeInfos (for tests and
// for `minik explain`).
func NewSnapshot(nodes []*framework.NodeInfo, namespaces map[string]labels.Set) *Snapshot {
	s := NewEmptySnapshot()
	for _, n := range nodes {
		s.nodeInfoMap[n.Node().Name] = n
	}
	s.nodeInfoList = nodes
	s.rebuildAffinityLists()
	if namespaces != nil {
		s.namespaces = namespaces
	}
	return s
}

// List implements framework.SharedLister.
func (s *Snapshot) List() []*framework.NodeInfo { return s.nodeInfoList }

// Get implements framework.SharedLister.
func (s *Snapshot) Get(name string) *framework.NodeInfo {
	ni := s.nodeInfoMap[name]
	if ni == nil || ni.Node() == nil {
		return nil
	}
	return ni
}

// HavePodsWithAffinityList implements framework.SharedLister.
func (s *Snapshot) HavePodsWithAffinityList() []*framework.NodeInfo { return s.withAffinity }

// HavePodsWithRequiredAntiAffinityList implements framework.SharedLister.
func (s *Snapshot) HavePodsWithRequiredAntiAffinityList() []*framework.NodeInfo {
	return s.withAnti
}

// NamespaceLabels implements framework.SharedLister.
func (s *Snapshot) NamespaceLabels(ns string) labels.Set { return s.namespaces[ns] }

// PodDisruptionBudgets implements framework.SharedLister.
func (s *Snapshot) PodDisruptionBudgets() []*policyv1.PodDisruptionBudget { return s.pdbs }

// SetPodDisruptionBudgets replaces the budgets (for tests and explain).
func (s *Snapshot) SetPodDisruptionBudgets(pdbs []*policyv1.PodDisruptionBudget) { s.pdbs = pdbs }

// Services implements framework.SharedLister.
func (s *Snapshot) Services(namespace string) []*corev1.Service { return s.services[namespace] }

// SetServices replaces the Services (for tests and explain); those
// without a selector are left out, as the cache leaves them out.
func (s *Snapshot) SetServices(svcs []*corev1.Service) {
	s.services = map[string][]*corev1.Service{}
	for _, svc := range svcs {
		if svc.Spec.Selector != nil {
			s.services[svc.Namespace] = append(s.services[svc.Namespace], svc)
		}
	}
}

// Storage implements framework.SharedLister; without SetStorage it
// holds nothing.
func (s *Snapshot) Storage() framework.StorageLister {
	if s.storage == nil {
		return framework.NewStaticStorage(nil, nil, nil)
	}
	return s.storage
}

// SetStorage sets where the volume plugins read claims, volumes and
// classes; it is kept across UpdateSnapshot.
func (s *Snapshot) SetStorage(l framework.StorageLister) { s.storage = l }

// NumNodes returns the number of nodes.
func (s *Snapshot) NumNodes() int { return len(s.nodeInfoList) }

func (s *Snapshot) rebuildAffinityLists() {
	s.withAffinity, s.withAnti = s.withAffinity[:0], s.withAnti[:0]
	for _, n := range s.nodeInfoList {
		if len(n.PodsWithAffinity) > 0 {
			s.withAffinity = append(s.withAffinity, n)
		}
		if len(n.PodsWithRequiredAntiAffinity) > 0 {
			s.withAnti = append(s.withAnti, n)
		}
	}
}

// UpdateSnapshot brings snap up to date with the cache. It copies only the
// NodeInfos that changed since snap was last updated: the cache keeps them
// most recently changed first, so the walk stops at the first one snap
// already has. The node list is rebuilt only when nodes came or went.
func (c *Cache) UpdateSnapshot(snap *Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rebuildList := c.nodeSetGen > snap.nodeSetGen
	rebuildAffinity := false
	top := snap.generation
	for it := c.head; it != nil && it.info.Generation > snap.generation; it = it.next {
		top = max(top, it.info.Generation)
		clone := it.info.Clone()
		name := ""
		if n := clone.Node(); n != nil {
			name = n.Name
		} else {
			continue // pods on an unknown node: not schedulable, not listed
		}
		if existing, ok := snap.nodeInfoMap[name]; ok {
			if len(existing.PodsWithAffinity) != len(clone.PodsWithAffinity) ||
				len(existing.PodsWithRequiredAntiAffinity) != len(clone.PodsWithRequiredAntiAffinity) {
				rebuildAffinity = true
			}
			*existing = *clone // the list holds the same pointer
		} else {
			snap.nodeInfoMap[name] = clone
			rebuildList = true
		}
	}
	snap.generation = top
	if rebuildList {
		snap.nodeSetGen = c.nodeSetGen
		for name := range snap.nodeInfoMap {
			if it, ok := c.nodes[name]; !ok || it.info.Node() == nil {
				delete(snap.nodeInfoMap, name)
			}
		}
		// Sorted by name, so the order (and seeded tie-breaking) is
		// reproducible.
		list := make([]*framework.NodeInfo, 0, len(snap.nodeInfoMap))
		for _, ni := range snap.nodeInfoMap {
			list = append(list, ni)
		}
		slices.SortFunc(list, func(a, b *framework.NodeInfo) int { return strings.Compare(a.Node().Name, b.Node().Name) })
		snap.nodeInfoList = list
		rebuildAffinity = true
	}
	if rebuildAffinity {
		snap.rebuildAffinityLists()
	}
	if c.pdbGen > snap.pdbGen {
		snap.pdbGen = c.pdbGen
		snap.pdbs = make([]*policyv1.PodDisruptionBudget, 0, len(c.pdbs))
		for _, p := range c.pdbs {
			snap.pdbs = append(snap.pdbs, p)
		}
	}
	if c.svcGen > snap.svcGen {
		snap.svcGen = c.svcGen
		snap.services = make(map[string][]*corev1.Service, len(snap.services))
		for _, svc := range c.services {
			snap.services[svc.Namespace] = append(snap.services[svc.Namespace], svc)
		}
		for _, l := range snap.services {
			slices.SortFunc(l, func(a, b *corev1.Service) int { return strings.Compare(a.Name, b.Name) })
		}
	}
	if c.nsGen > snap.nsGen {
		snap.nsGen = c.nsGen
		snap.namespaces = make(map[string]labels.Set, len(c.namespaces))
		for k, v := range c.namespaces {
			snap.namespaces[k] = v
		}
	}
}
