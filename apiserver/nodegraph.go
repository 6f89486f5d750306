package apiserver

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"minik/apiserver/storage"
	"minik/internal/podrefs"
)

// nodeGraph is the node authorizer's knowledge of which objects each node
// needs: the pods bound to it and what those pods reference (secrets,
// config maps, persistent volume claims, service accounts), as
// Kubernetes' node authorizer keeps a graph from its informers. It is fed
// by the pods' watch cache.
type nodeGraph struct {
	mu      sync.RWMutex
	pods    map[objectRef]podEdges       // each bound pod: its node and what it uses
	uses    map[objectRef]map[string]int // object → node → how many of its pods use it
	rev     int64                        // every pod change up to rev is in the graph
	synced  bool
	changed chan struct{} // closed and replaced on every change of rev
}

// objectRef names an object a node may read because of its pods.
type objectRef struct {
	kind      string // "pods", "secrets", "configmaps", "persistentvolumeclaims", "serviceaccounts"
	namespace string
	name      string
}

type podEdges struct {
	node     string
	refs     []objectRef
	uid      types.UID
	deleting bool // has a deletionTimestamp
}

func newNodeGraph() *nodeGraph {
	return &nodeGraph{pods: map[objectRef]podEdges{}, uses: map[objectRef]map[string]int{}, changed: make(chan struct{})}
}

// related reports whether node may read the object: the pod is bound to
// it, or one of its pods uses the object.
func (g *nodeGraph) related(node string, ref objectRef) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if ref.kind == "pods" {
		e, ok := g.pods[ref]
		return ok && e.node == node
	}
	return g.uses[ref][node] > 0
}

// boundPod returns the UID of a pod bound to a node and whether it is
// being deleted; ok is false for a pod the graph does not hold (unbound,
// gone, or not seen yet).
func (g *nodeGraph) boundPod(namespace, name string) (uid types.UID, deleting, ok bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	e, ok := g.pods[objectRef{kind: "pods", namespace: namespace, name: name}]
	return e.uid, e.deleting, ok
}

// waitFor waits until the graph holds every pod change up to rev, or the
// timeout: a kubelet that saw a pod through its watch may ask for the
// pod's secret before the graph took the same event in.
func (g *nodeGraph) waitFor(ctx context.Context, rev int64, timeout time.Duration) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		g.mu.RLock()
		done, ch := g.synced && g.rev >= rev, g.changed
		g.mu.RUnlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (g *nodeGraph) reset(items []runtime.Object, rev int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pods, g.uses = map[objectRef]podEdges{}, map[objectRef]map[string]int{}
	for _, obj := range items {
		g.setPod(obj.(*corev1.Pod), false)
	}
	g.rev, g.synced = rev, true
	g.notify()
}

func (g *nodeGraph) apply(ev *storage.Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ev.Rev <= g.rev {
		return
	}
	g.setPod(ev.Object.(*corev1.Pod), ev.Type == watch.Deleted)
	g.rev = ev.Rev
	g.notify()
}

func (g *nodeGraph) unsync() {
	g.mu.Lock()
	g.synced = false
	g.mu.Unlock()
}

func (g *nodeGraph) notify() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// setPod replaces the edges of one pod (mu held).
func (g *nodeGraph) setPod(pod *corev1.Pod, deleted bool) {
	key := objectRef{kind: "pods", namespace: pod.Namespace, name: pod.Name}
	if old, ok := g.pods[key]; ok {
		for _, r := range old.refs {
			if g.uses[r][old.node]--; g.uses[r][old.node] <= 0 {
				delete(g.uses[r], old.node)
				if len(g.uses[r]) == 0 {
					delete(g.uses, r)
				}
			}
		}
		delete(g.pods, key)
	}
	if deleted || pod.Spec.NodeName == "" {
		return
	}
	e := podEdges{node: pod.Spec.NodeName, refs: podReferences(pod), uid: pod.UID, deleting: pod.DeletionTimestamp != nil}
	g.pods[key] = e
	for _, r := range e.refs {
		if g.uses[r] == nil {
			g.uses[r] = map[string]int{}
		}
		g.uses[r][e.node]++
	}
}

// podReferences is podrefs.Of as the graph's references.
func podReferences(pod *corev1.Pod) []objectRef {
	refs := podrefs.Of(pod)
	out := make([]objectRef, len(refs))
	for i, r := range refs {
		out[i] = objectRef{kind: r.Resource, namespace: pod.Namespace, name: r.Name}
	}
	return out
}
