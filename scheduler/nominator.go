package scheduler

import (
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"minik/scheduler/framework"
)

// nominator remembers the pods that preempted others and are waiting for
// their node (status.nominatedNodeName), so that pods of lower priority
// do not take the room being made for them. Each pod's PodInfo is made
// once, when it is nominated: filters add it to every node they check.
type nominator struct {
	// mu is read-locked by the filters, once per node they check, from
	// every filtering goroutine at once.
	mu     sync.RWMutex
	byNode map[string][]*framework.PodInfo
	nodeOf map[types.UID]string
	// count mirrors len(nodeOf), so that the common case (no nomination)
	// costs filters no lock.
	count atomic.Int64
}

func newNominator() *nominator {
	return &nominator{byNode: map[string][]*framework.PodInfo{}, nodeOf: map[types.UID]string{}}
}

// add nominates pod to node (replacing an earlier nomination).
func (n *nominator) add(pod *corev1.Pod, node string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deleteLocked(pod.UID)
	if node == "" {
		return
	}
	n.nodeOf[pod.UID] = node
	n.byNode[node] = append(n.byNode[node], framework.NewPodInfo(pod))
	n.count.Store(int64(len(n.nodeOf)))
}

// delete forgets pod's nomination.
func (n *nominator) delete(pod *corev1.Pod) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deleteLocked(pod.UID)
}

func (n *nominator) deleteLocked(uid types.UID) {
	node, ok := n.nodeOf[uid]
	if !ok {
		return
	}
	delete(n.nodeOf, uid)
	n.count.Store(int64(len(n.nodeOf)))
	pods := n.byNode[node]
	for i, p := range pods {
		if p.Pod.UID == uid {
			pods = append(pods[:i:i], pods[i+1:]...)
			break
		}
	}
	if len(pods) == 0 {
		delete(n.byNode, node)
	} else {
		n.byNode[node] = pods
	}
}

// podsFor returns the pods nominated to node that are at least as
// important as pod (other than pod itself).
func (n *nominator) podsFor(node string, pod *corev1.Pod) []*framework.PodInfo {
	if n.count.Load() == 0 {
		return nil // the common case, on every node a filter checks: no closure made
	}
	prio := corev1helpers.PodPriority(pod)
	return n.podsOn(node, func(p *corev1.Pod) bool { return p.UID != pod.UID && corev1helpers.PodPriority(p) >= prio })
}

// lowerPriorityOn returns the pods nominated to node that are less
// important than pod: once pod preempts there, room for them is no longer
// promised.
func (n *nominator) lowerPriorityOn(node string, pod *corev1.Pod) []*framework.PodInfo {
	prio := corev1helpers.PodPriority(pod)
	return n.podsOn(node, func(p *corev1.Pod) bool { return corev1helpers.PodPriority(p) < prio })
}

// podsOn returns the pods nominated to node that keep accepts.
func (n *nominator) podsOn(node string, keep func(*corev1.Pod) bool) []*framework.PodInfo {
	if n.count.Load() == 0 {
		return nil
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	pods := n.byNode[node]
	for i, p := range pods {
		if keep(p.Pod) {
			continue
		}
		// Some are left out: a slice of its own. (Else the node's own is
		// returned: add and delete never write into one they handed out.)
		out := slices.Clone(pods[:i])
		for _, p := range pods[i+1:] {
			if keep(p.Pod) {
				out = append(out, p)
			}
		}
		return out
	}
	return pods
}
