// Package cache is the scheduler's view of the cluster: nodes, the pods
// bound to them and the pods it has just chosen a node for (assumed pods),
// plus an incremental snapshot that each scheduling cycle reads.
//
//	informers ──AddNode/UpdatePod/...──▶ Cache (locked, one NodeInfo per node,
//	                                      most recently changed first)
//	scheduler ──AssumePodInfo──────────▶ Cache   (counts at once, before the bind returns)
//	cycle     ──UpdateSnapshot─────────▶ Snapshot (copies only NodeInfos changed
//	                                      since the last cycle, by generation)
package cache

import (
	"fmt"
	"maps"
	"sync"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"minik/scheduler/framework"
)

// nodeItem is a NodeInfo in the cache's list, which is ordered by most
// recent change so that UpdateSnapshot stops at the first unchanged one.
type nodeItem struct {
	info       *framework.NodeInfo
	prev, next *nodeItem
}

type podState struct {
	pod     *corev1.Pod
	assumed bool
}

type imageState struct {
	size  int64
	nodes sets.Set[string]
}

// Cache is safe for concurrent use.
type Cache struct {
	mu    sync.Mutex
	nodes map[string]*nodeItem
	head  *nodeItem
	// nodeSetGen changes when a node is added or removed, so that the
	// snapshot rebuilds its node list.
	nodeSetGen int64
	pods       map[types.UID]*podState
	images     map[string]*imageState
	namespaces map[string]labels.Set
	nsGen      int64
	pdbs       map[string]*policyv1.PodDisruptionBudget // by namespace/name
	pdbGen     int64
	services   map[string]*corev1.Service // with a selector, by namespace/name
	svcGen     int64
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{
		nodes:      map[string]*nodeItem{},
		pods:       map[types.UID]*podState{},
		images:     map[string]*imageState{},
		namespaces: map[string]labels.Set{},
		pdbs:       map[string]*policyv1.PodDisruptionBudget{},
		services:   map[string]*corev1.Service{},
	}
}

func (c *Cache) moveToHead(it *nodeItem) {
	if c.head == it {
		return
	}
	if it.prev != nil {
		it.prev.next = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	}
	it.prev, it.next = nil, c.head
	if c.head != nil {
		c.head.prev = it
	}
	c.head = it
}

func (c *Cache) unlink(it *nodeItem) {
	if it.prev != nil {
		it.prev.next = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	}
	if c.head == it {
		c.head = it.next
	}
	it.prev, it.next = nil, nil
}

// item returns the node's entry, creating one (without a Node) if needed.
func (c *Cache) item(name string) *nodeItem {
	it, ok := c.nodes[name]
	if !ok {
		it = &nodeItem{info: framework.NewNodeInfo()}
		c.nodes[name] = it
	}
	return it
}

// AddNode adds or replaces a node.
func (c *Cache) AddNode(node *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it := c.item(node.Name)
	old := it.info.Node()
	if old == nil {
		c.nodeSetGen = framework.NextGeneration()
	}
	imagesChanged := old == nil && len(node.Status.Images) > 0 ||
		old != nil && !equality.Semantic.DeepEqual(old.Status.Images, node.Status.Images)
	if imagesChanged && old != nil {
		c.removeImages(old)
	}
	if imagesChanged {
		c.addImages(node)
	}
	it.info.SetNode(node)
	if imagesChanged {
		c.refreshImageStates()
	}
	c.moveToHead(it)
}

// UpdateNode replaces a node.
func (c *Cache) UpdateNode(_, node *corev1.Node) { c.AddNode(node) }

// RemoveNode forgets a node. Its pods stay counted until they are deleted.
func (c *Cache) RemoveNode(node *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.nodes[node.Name]
	if !ok {
		return
	}
	if len(node.Status.Images) > 0 {
		c.removeImages(node)
		c.refreshImageStates()
	}
	c.nodeSetGen = framework.NextGeneration()
	if len(it.info.Pods) > 0 {
		// Keep the pods' totals, without a node.
		ni := framework.NewNodeInfo()
		for _, pi := range it.info.Pods {
			ni.AddPodInfo(pi)
		}
		it.info = ni
		c.moveToHead(it)
		return
	}
	c.unlink(it)
	delete(c.nodes, node.Name)
}

// NormalizeImageName returns the canonical name of an image:
// "nginx" is "docker.io/library/nginx:latest".
func NormalizeImageName(name string) string {
	normalized.Lock()
	canonical, ok := normalized.names[name]
	normalized.Unlock()
	if ok {
		return canonical
	}
	canonical = name
	if named, err := reference.ParseNormalizedNamed(name); err == nil {
		canonical = reference.TagNameOnly(named).String()
	}
	normalized.Lock()
	if len(normalized.names) >= maxNormalized {
		normalized.names = nil // start over rather than keep every name ever seen
	}
	if normalized.names == nil {
		normalized.names = map[string]string{}
	}
	normalized.names[name] = canonical
	normalized.Unlock()
	return canonical
}

// normalized remembers NormalizeImageName's answers: a cluster has few
// distinct images, and parsing a name runs a regexp, in every cycle's
// ImageLocality PreScore and for every image of every node update.
var normalized struct {
	sync.Mutex
	names map[string]string
}

const maxNormalized = 4096

func (c *Cache) addImages(node *corev1.Node) {
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			name = NormalizeImageName(name)
			st, ok := c.images[name]
			if !ok {
				st = &imageState{size: img.SizeBytes, nodes: sets.New[string]()}
				c.images[name] = st
			}
			st.nodes.Insert(node.Name)
		}
	}
}

func (c *Cache) removeImages(node *corev1.Node) {
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			name = NormalizeImageName(name)
			if st, ok := c.images[name]; ok {
				st.nodes.Delete(node.Name)
				if st.nodes.Len() == 0 {
					delete(c.images, name)
				}
			}
		}
	}
}

// refreshImageStates recomputes the image summaries of nodes whose
// images' spread changed. Nodes rarely change their image lists, so this
// is cheap in practice; a node without images only loses the summaries it
// had (its list just became empty).
func (c *Cache) refreshImageStates() {
	for _, it := range c.nodes {
		n := it.info.Node()
		if n == nil || len(n.Status.Images) == 0 {
			if len(it.info.ImageStates) > 0 {
				it.info.ImageStates = nil
				it.info.Generation = framework.NextGeneration()
				c.moveToHead(it)
			}
			continue
		}
		states := map[string]*framework.ImageStateSummary{}
		changed := false
		for _, img := range n.Status.Images {
			for _, in := range img.Names {
				in = NormalizeImageName(in)
				st := c.images[in]
				if st == nil {
					continue
				}
				sum := &framework.ImageStateSummary{Size: st.size, NumNodes: st.nodes.Len()}
				states[in] = sum
				if old := it.info.ImageStates[in]; old == nil || *old != *sum {
					changed = true
				}
			}
		}
		if changed || len(states) != len(it.info.ImageStates) {
			it.info.ImageStates = states
			it.info.Generation = framework.NextGeneration()
			c.moveToHead(it)
		}
	}
}

// AssumePodInfo counts pi's pod (whose spec.nodeName is the chosen node)
// on its node now, before the binding is written. pi is the queue's
// PodInfo with only its pod replaced, so requests and affinity terms are
// not computed again.
func (c *Cache) AssumePodInfo(pi *framework.PodInfo) error {
	pod := pi.Pod
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pods[pod.UID]; ok {
		return fmt.Errorf("cache: pod %s/%s is already in the cache", pod.Namespace, pod.Name)
	}
	c.addPodInfo(pi)
	c.pods[pod.UID] = &podState{pod: pod, assumed: true}
	return nil
}

// ForgetPod undoes AssumePodInfo after a failed bind.
func (c *Cache) ForgetPod(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.pods[pod.UID]; ok && ps.assumed {
		c.removePod(ps.pod)
		delete(c.pods, pod.UID)
	}
}

// IsAssumedPod reports whether pod is assumed and not yet confirmed by
// the informer.
func (c *Cache) IsAssumedPod(pod *corev1.Pod) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.pods[pod.UID]
	return ok && ps.assumed
}

// AddPod adds a pod bound to a node, as the informer sees it; it confirms
// the pod if it was assumed.
func (c *Cache) AddPod(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.pods[pod.UID]; ok {
		// Assumed (or seen): replace with the informer's version.
		c.removePod(ps.pod)
	}
	c.addPod(pod)
	c.pods[pod.UID] = &podState{pod: pod}
}

// UpdatePod replaces a bound pod.
func (c *Cache) UpdatePod(_, pod *corev1.Pod) { c.AddPod(pod) }

// HasPod reports whether the pod with uid is in the cache (bound or
// assumed).
func (c *Cache) HasPod(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pods[uid]
	return ok
}

// NodeInfo returns a copy of the named node's NodeInfo as it is now; nil
// if the cache has no such node.
func (c *Cache) NodeInfo(name string) *framework.NodeInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.nodes[name]
	if !ok || it.info.Node() == nil {
		return nil
	}
	return it.info.Clone()
}

// RemovePod forgets a pod.
func (c *Cache) RemovePod(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.pods[pod.UID]; ok {
		c.removePod(ps.pod)
		delete(c.pods, pod.UID)
	}
}

func (c *Cache) addPod(pod *corev1.Pod) { c.addPodInfo(framework.NewPodInfo(pod)) }

func (c *Cache) addPodInfo(pi *framework.PodInfo) {
	it := c.item(pi.Pod.Spec.NodeName)
	it.info.AddPodInfo(pi)
	c.moveToHead(it)
}

func (c *Cache) removePod(pod *corev1.Pod) {
	it, ok := c.nodes[pod.Spec.NodeName]
	if !ok {
		return
	}
	it.info.RemovePod(pod)
	if it.info.Node() == nil && len(it.info.Pods) == 0 {
		c.unlink(it)
		delete(c.nodes, pod.Spec.NodeName)
		return
	}
	c.moveToHead(it)
}

// SetNamespace records a namespace's labels (nil deletes it).
func (c *Cache) SetNamespace(name string, l map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l == nil {
		delete(c.namespaces, name)
	} else {
		c.namespaces[name] = labels.Set(l)
	}
	c.nsGen = framework.NextGeneration()
}

// SetPDB records a PodDisruptionBudget; RemovePDB forgets it.
func (c *Cache) SetPDB(pdb *policyv1.PodDisruptionBudget) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pdbs[pdb.Namespace+"/"+pdb.Name] = pdb
	c.pdbGen = framework.NextGeneration()
}

// RemovePDB forgets a PodDisruptionBudget.
func (c *Cache) RemovePDB(pdb *policyv1.PodDisruptionBudget) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pdbs, pdb.Namespace+"/"+pdb.Name)
	c.pdbGen = framework.NextGeneration()
}

// SetService records a Service for the default spreading; a Service
// without selector selects no pod and is forgotten.
func (c *Cache) SetService(svc *corev1.Service) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := svc.Namespace + "/" + svc.Name
	if svc.Spec.Selector == nil {
		if _, ok := c.services[key]; !ok {
			return
		}
		delete(c.services, key)
	} else {
		if old, ok := c.services[key]; ok && maps.Equal(old.Spec.Selector, svc.Spec.Selector) {
			c.services[key] = svc
			return // the selector is all the snapshot holds
		}
		c.services[key] = svc
	}
	c.svcGen = framework.NextGeneration()
}

// RemoveService forgets a Service.
func (c *Cache) RemoveService(svc *corev1.Service) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := svc.Namespace + "/" + svc.Name
	if _, ok := c.services[key]; ok {
		delete(c.services, key)
		c.svcGen = framework.NextGeneration()
	}
}

// NodeCount returns the number of nodes with a Node object.
func (c *Cache) NodeCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, it := range c.nodes {
		if it.info.Node() != nil {
			n++
		}
	}
	return n
}
