package framework

import (
	"maps"
	"slices"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

var generation atomic.Int64

// NextGeneration returns a number larger than every one returned before;
// the cache stamps each changed NodeInfo with it, so the snapshot knows
// which nodes to copy.
func NextGeneration() int64 { return generation.Add(1) }

// NodeInfo is a node with the pods on it and their totals: the unit every
// Filter and Score plugin works on.
type NodeInfo struct {
	node *corev1.Node

	Pods                         []*PodInfo
	PodsWithAffinity             []*PodInfo // pods with any pod (anti-)affinity
	PodsWithRequiredAntiAffinity []*PodInfo

	Allocatable      Resource
	Requested        Resource // sum of the pods' real requests
	NonZeroRequested Resource // sum with default requests, for scoring
	UsedPorts        HostPortInfo
	// ImageStates is keyed by normalized image name (docker.io/library/x:tag).
	ImageStates map[string]*ImageStateSummary
	// controllerPods counts the pods of each controller (by UID) that are
	// not being deleted, so that default topology spreading counts a
	// ReplicaSet's pods on a node without walking them.
	controllerPods map[types.UID]int

	// Generation changes on every change of the NodeInfo.
	Generation int64

	// nominated is WithNominated's last copy of this node, reused while
	// neither the node (Generation) nor the pods added change.
	nominated *nominatedView
}

// nominatedView is a NodeInfo with nominated pods added.
type nominatedView struct {
	generation int64
	pods       []*PodInfo
	node       *NodeInfo
}

// NewNodeInfo returns a NodeInfo holding pods, without a node yet.
func NewNodeInfo(pods ...*corev1.Pod) *NodeInfo {
	ni := &NodeInfo{UsedPorts: HostPortInfo{}, ImageStates: map[string]*ImageStateSummary{}, Generation: NextGeneration()}
	for _, p := range pods {
		ni.AddPod(p)
	}
	return ni
}

// Node returns the node, or nil if only its pods are known so far.
func (n *NodeInfo) Node() *corev1.Node {
	if n == nil {
		return nil
	}
	return n.node
}

// SetNode sets the node object and its allocatable resources.
func (n *NodeInfo) SetNode(node *corev1.Node) {
	n.node = node
	alloc := node.Status.Allocatable
	if len(alloc) == 0 {
		alloc = node.Status.Capacity
	}
	n.Allocatable = NewResource(alloc)
	if _, ok := alloc[corev1.ResourcePods]; !ok {
		n.Allocatable.AllowedPodNumber = DefaultMaxPods
	}
	n.Generation = NextGeneration()
}

// AddPod adds a pod to the node's totals.
func (n *NodeInfo) AddPod(pod *corev1.Pod) { n.AddPodInfo(NewPodInfo(pod)) }

// AddPodInfo adds a pod whose PodInfo is already computed.
func (n *NodeInfo) AddPodInfo(pi *PodInfo) {
	n.Pods = append(n.Pods, pi)
	if hasAffinity(pi) {
		n.PodsWithAffinity = append(n.PodsWithAffinity, pi)
	}
	if len(pi.RequiredAntiAffinityTerms) > 0 {
		n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, pi)
	}
	n.update(pi, 1)
}

// RemovePod removes the pod with pod's UID; it reports whether it was there.
func (n *NodeInfo) RemovePod(pod *corev1.Pod) bool {
	uid := pod.UID
	for i, pi := range n.Pods {
		if pi.Pod.UID != uid {
			continue
		}
		n.Pods = removeAt(n.Pods, i)
		n.PodsWithAffinity = removeUID(n.PodsWithAffinity, uid)
		n.PodsWithRequiredAntiAffinity = removeUID(n.PodsWithRequiredAntiAffinity, uid)
		n.update(pi, -1)
		return true
	}
	return false
}

// ControllerPods returns how many of the node's pods, not being deleted,
// belong to the controller with this UID.
func (n *NodeInfo) ControllerPods(uid types.UID) int { return n.controllerPods[uid] }

func (n *NodeInfo) update(pi *PodInfo, sign int64) {
	if pi.ControllerUID != "" && pi.Pod.DeletionTimestamp == nil {
		if n.controllerPods == nil {
			n.controllerPods = map[types.UID]int{}
		}
		n.controllerPods[pi.ControllerUID] += int(sign)
		if n.controllerPods[pi.ControllerUID] == 0 {
			delete(n.controllerPods, pi.ControllerUID)
		}
	}
	n.Requested.AddResource(pi.Requests, sign)
	n.NonZeroRequested.AddResource(pi.NonZeroRequests, sign)
	// By index: a Container is about a kilobyte, and this runs for every
	// pod a preemption dry run takes away and gives back.
	containers := pi.Pod.Spec.Containers
	for i := range containers {
		for _, p := range containers[i].Ports {
			if sign > 0 {
				if n.UsedPorts == nil && p.HostPort > 0 {
					n.UsedPorts = HostPortInfo{} // a clone without ports has none
				}
				n.UsedPorts.Add(p.HostIP, string(p.Protocol), p.HostPort)
			} else {
				n.UsedPorts.Remove(p.HostIP, string(p.Protocol), p.HostPort)
			}
		}
	}
	n.Generation = NextGeneration()
}

func hasAffinity(pi *PodInfo) bool {
	return len(pi.RequiredAffinityTerms)+len(pi.RequiredAntiAffinityTerms)+
		len(pi.PreferredAffinityTerms)+len(pi.PreferredAntiAffinityTerms) > 0
}

// removeAt removes element i into a new slice,
// so that clones sharing the old backing array are not disturbed.
func removeAt(s []*PodInfo, i int) []*PodInfo {
	out := make([]*PodInfo, 0, len(s)-1)
	out = append(out, s[:i]...)
	return append(out, s[i+1:]...)
}

func removeUID(s []*PodInfo, uid types.UID) []*PodInfo {
	for i, pi := range s {
		if pi.Pod.UID == uid {
			return removeAt(s, i)
		}
	}
	return s
}

// CloneWithout returns a copy of n without the pods drop selects, and
// those pods: Clone then RemovePod for each, in one pass.
func (n *NodeInfo) CloneWithout(drop func(*PodInfo) bool) (*NodeInfo, []*PodInfo) {
	c := n.Clone()
	var dropped []*PodInfo
	kept := c.Pods[:0] // c's own copy: filtering it in place disturbs no one
	for _, pi := range c.Pods {
		if drop(pi) {
			dropped = append(dropped, pi)
			c.update(pi, -1)
		} else {
			kept = append(kept, pi)
		}
	}
	clear(c.Pods[len(kept):])
	c.Pods = kept
	if len(dropped) > 0 {
		c.PodsWithAffinity = slices.DeleteFunc(c.PodsWithAffinity, drop)
		c.PodsWithRequiredAntiAffinity = slices.DeleteFunc(c.PodsWithRequiredAntiAffinity, drop)
	}
	return c, dropped
}

// WithNominated returns a copy of n with pods added: the pods nominated
// to it, which filters count as if they ran there. The copy is kept on n
// and returned again while n and pods are the same (the same PodInfos), so
// that a node whose nominations wait through many failed cycles is copied
// once, not once per cycle. The copy is read-only; n must not be filtered
// by two goroutines at once (a cycle filters each node from one).
func (n *NodeInfo) WithNominated(pods []*PodInfo) *NodeInfo {
	if v := n.nominated; v != nil && v.generation == n.Generation && slices.Equal(v.pods, pods) {
		return v.node
	}
	c := n.Clone()
	for _, p := range pods {
		c.AddPodInfo(p)
	}
	n.nominated = &nominatedView{generation: n.Generation, pods: pods, node: c}
	return c
}

// Clone returns a copy that can be changed without changing n. Pods are
// shared, which is fine: they are read-only.
func (n *NodeInfo) Clone() *NodeInfo {
	c := &NodeInfo{
		node:                         n.node,
		Pods:                         append([]*PodInfo(nil), n.Pods...),
		PodsWithAffinity:             append([]*PodInfo(nil), n.PodsWithAffinity...),
		PodsWithRequiredAntiAffinity: append([]*PodInfo(nil), n.PodsWithRequiredAntiAffinity...),
		Allocatable:                  n.Allocatable.Clone(),
		Requested:                    n.Requested.Clone(),
		NonZeroRequested:             n.NonZeroRequested.Clone(),
		UsedPorts:                    n.UsedPorts.clone(),
		ImageStates:                  n.ImageStates,
		controllerPods:               maps.Clone(n.controllerPods),
		Generation:                   n.Generation,
	}
	return c
}
