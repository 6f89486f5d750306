package apiserver

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik/apiserver/storage"
	"minik/internal/volumeutil"
)

// volumeGraph is the part of the node authorizer's graph that comes from
// PersistentVolumes: the claim each volume is bound to (a node may read
// the volume of a claim its pods use, as upstream's pvc → pv edge) and the
// node of each local-path volume (that node's kubelet creates and removes
// the volume's directory, so it may read and delete the object).
type volumeGraph struct {
	mu    sync.RWMutex
	claim map[string]objectRef // volume → the claim in its claimRef
	local map[string]string    // local-path volume → its node
}

func newVolumeGraph() *volumeGraph {
	return &volumeGraph{claim: map[string]objectRef{}, local: map[string]string{}}
}

func (g *volumeGraph) reset(items []runtime.Object, _ int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.claim, g.local = map[string]objectRef{}, map[string]string{}
	for _, o := range items {
		g.set(o.(*corev1.PersistentVolume), false)
	}
}

func (g *volumeGraph) apply(ev *storage.Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.set(ev.Object.(*corev1.PersistentVolume), ev.Type == watch.Deleted)
}

func (g *volumeGraph) unsync() {}

func (g *volumeGraph) set(pv *corev1.PersistentVolume, deleted bool) {
	delete(g.claim, pv.Name)
	delete(g.local, pv.Name)
	if deleted {
		return
	}
	if ref := pv.Spec.ClaimRef; ref != nil && ref.Name != "" {
		g.claim[pv.Name] = objectRef{kind: "persistentvolumeclaims", namespace: ref.Namespace, name: ref.Name}
	}
	if node := volumeutil.LocalPathNode(pv); node != "" {
		g.local[pv.Name] = node
	}
}

// claimOf returns the claim a volume is bound to.
func (g *volumeGraph) claimOf(pv string) (objectRef, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	r, ok := g.claim[pv]
	return r, ok
}

// localNode returns the node of a local-path volume, or "".
func (g *volumeGraph) localNode(pv string) string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.local[pv]
}

// byIDOf returns the store of a core resource.
func byIDOf(s *Server, resource string) *storage.Store {
	return s.handlers["/v1/"+resource].store
}
