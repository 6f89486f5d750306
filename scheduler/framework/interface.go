// Package framework defines the scheduling framework: the extension points
// (PreFilter, Filter, PostFilter, PreScore, Score, Bind), the data plugins
// work on (NodeInfo, PodInfo, a read-only Snapshot) and the Framework that
// runs a profile of plugins over them.
//
// Every plugin but the binder is pure: it reads the pod, the snapshot and
// the cycle state, and returns a Status. It makes no API call and never
// sleeps, so it can be tested with a table and no cluster.
package framework

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// MaxNodeScore is the best score a Score plugin gives a node (after
// normalization); MinNodeScore the worst.
const (
	MaxNodeScore int64 = 100
	MinNodeScore int64 = 0
)

// Plugin is the common part of every plugin.
type Plugin interface {
	Name() string
}

// SharedLister is the read-only view of the cluster a cycle works on: the
// snapshot.
type SharedLister interface {
	// List returns every node with a Node object, in a stable order.
	List() []*NodeInfo
	// Get returns the NodeInfo of a node, or nil.
	Get(name string) *NodeInfo
	// HavePodsWithAffinityList returns the nodes that run pods with pod
	// (anti-)affinity terms.
	HavePodsWithAffinityList() []*NodeInfo
	// HavePodsWithRequiredAntiAffinityList returns the nodes that run pods
	// with required anti-affinity terms.
	HavePodsWithRequiredAntiAffinityList() []*NodeInfo
	// NamespaceLabels returns the labels of a namespace (for
	// namespaceSelector in affinity terms).
	NamespaceLabels(ns string) labels.Set
	// PodDisruptionBudgets returns every PodDisruptionBudget (preemption
	// prefers victims that do not break one).
	PodDisruptionBudgets() []*policyv1.PodDisruptionBudget
	// Services returns the Services of a namespace that have a selector
	// (the default spreading counts the pods of a pod's Services).
	Services(namespace string) []*corev1.Service
	// Storage reads claims, volumes and classes (the volume plugins).
	Storage() StorageLister
}

// PreFilterPlugin computes, once per pod, what its Filter needs for every
// node, and stores it in the CycleState. Returning Skip turns its Filter
// off for this pod; a rejection rejects the pod on every node.
type PreFilterPlugin interface {
	Plugin
	PreFilter(state *CycleState, pod *corev1.Pod, snap SharedLister) *Status
}

// FilterPlugin says whether a pod may run on a node. A rejection carries
// the reason as a constant string.
type FilterPlugin interface {
	Plugin
	Filter(state *CycleState, pod *corev1.Pod, node *NodeInfo) *Status
}

// PreScorePlugin computes, once per pod, what its Score needs, given the
// feasible nodes. Returning Skip turns its Score off for this pod.
type PreScorePlugin interface {
	Plugin
	PreScore(state *CycleState, pod *corev1.Pod, nodes []*NodeInfo, snap SharedLister) *Status
}

// ScorePlugin ranks a feasible node. Its raw score may be on any scale;
// NormalizeScore then maps the scores of all nodes to 0..MaxNodeScore.
type ScorePlugin interface {
	Plugin
	Score(state *CycleState, pod *corev1.Pod, node *NodeInfo) (int64, *Status)
	// NormalizeScore rescales scores in place; plugins whose raw scores
	// are already 0..100 leave them.
	NormalizeScore(state *CycleState, pod *corev1.Pod, scores []NodeScore) *Status
}

// PostFilterPlugin runs when a pod fits no node. Preemption is one: it
// proposes a node and the victims to delete there. It does not act; the
// scheduler performs the result.
type PostFilterPlugin interface {
	Plugin
	PostFilter(state *CycleState, pod *corev1.Pod, fwk *Framework, snap SharedLister, statuses NodeToStatus) (*PostFilterResult, *Status)
}

// PostFilterResult is what a PostFilter proposes.
type PostFilterResult struct {
	NominatedNodeName string
	Victims           []*corev1.Pod
}

// BindPlugin records the decision in the API. It is the one extension
// point that does IO.
type BindPlugin interface {
	Plugin
	Bind(ctx context.Context, pod *corev1.Pod, nodeName string) *Status
}

// NodeScore is a node's score from one plugin, or the total.
type NodeScore struct {
	Name  string
	Score int64
}

// NodeToStatus is the verdict of the filters for each rejected node.
type NodeToStatus map[string]*Status

// StateKey names a slot of a CycleState. Each plugin makes its keys once,
// with NewStateKey, so that reading state in Filter and Score (once per
// node) is an index, not a map lookup.
type StateKey int

var (
	stateKeyMu    sync.Mutex
	stateKeyNames []string
)

// NewStateKey returns a new key; name appears in errors.
func NewStateKey(name string) StateKey {
	stateKeyMu.Lock()
	defer stateKeyMu.Unlock()
	stateKeyNames = append(stateKeyNames, name)
	return StateKey(len(stateKeyNames) - 1)
}

func (k StateKey) String() string {
	stateKeyMu.Lock()
	defer stateKeyMu.Unlock()
	return stateKeyNames[k]
}

// CycleState is scratch space for one pod's scheduling cycle: PreFilter
// and PreScore write, Filter and Score read. Writes happen on the
// scheduling goroutine before the parallel Filter and Score calls start,
// so the reads need no lock; plugins must not write from Filter or Score.
type CycleState struct {
	data []any // by StateKey
	// skipFilter and skipScore name plugins that returned Skip.
	skipFilter map[string]bool
	skipScore  map[string]bool
	// filters are the Filter plugins to run this cycle (those not skipped),
	// computed once after PreFilter; nil until then.
	filters []FilterPlugin
	// podInfo is the cycle's pod as the queue computed it, if known.
	podInfo *PodInfo
}

// SetPodInfo gives the cycle the PodInfo the queue made for its pod, so
// that plugins need not compute it again (affinity terms parse selectors).
func (c *CycleState) SetPodInfo(pi *PodInfo) { c.podInfo = pi }

// PodInfoOf returns the PodInfo of pod: the cycle's own when pod is the
// cycle's pod, else a new one.
func (c *CycleState) PodInfoOf(pod *corev1.Pod) *PodInfo {
	if c.podInfo != nil && c.podInfo.Pod == pod {
		return c.podInfo
	}
	return NewPodInfo(pod)
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{skipFilter: map[string]bool{}, skipScore: map[string]bool{}}
}

// Write stores v under key. Call it only from PreFilter or PreScore.
func (c *CycleState) Write(key StateKey, v any) {
	for int(key) >= len(c.data) {
		c.data = append(c.data, nil)
	}
	c.data[key] = v
}

// Read returns what was stored under key.
func (c *CycleState) Read(key StateKey) (any, error) {
	if int(key) >= len(c.data) || c.data[key] == nil {
		return nil, fmt.Errorf("cycle state: %v not found", key)
	}
	return c.data[key], nil
}

// ReadAs returns what was stored under key as a T.
func ReadAs[T any](c *CycleState, key StateKey) (T, error) {
	var zero T
	v, err := c.Read(key)
	if err != nil {
		return zero, err
	}
	t, ok := v.(T)
	if !ok {
		return zero, fmt.Errorf("cycle state: %v holds %T, not %T", key, v, zero)
	}
	return t, nil
}

// FilterSkipped reports whether plugin's PreFilter returned Skip in this
// cycle.
func (c *CycleState) FilterSkipped(plugin string) bool { return c.skipFilter[plugin] }
