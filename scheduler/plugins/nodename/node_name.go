// Package nodename rejects every node but the one a pod names in
// spec.nodeName. The scheduler never sees pods with spec.nodeName set, so
// this matters for `minik explain` and for preemption's what-if checks.
package nodename

import (
	corev1 "k8s.io/api/core/v1"

	"minik/scheduler/framework"
)

const (
	// Name is the plugin's name in the registry.
	Name = "NodeName"
	// ErrReason is the rejection reason.
	ErrReason = "node(s) didn't match the requested node name"
)

// NodeName is a filter plugin.
type NodeName struct{}

var _ framework.FilterPlugin = &NodeName{}

// New returns the plugin.
func New() *NodeName { return &NodeName{} }

// Name implements framework.Plugin.
func (*NodeName) Name() string { return Name }

// Filter implements framework.FilterPlugin.
func (*NodeName) Filter(_ *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	if Fits(pod, ni.Node()) {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
}

// Fits reports whether pod may run on node by its spec.nodeName. The
// kubelet admits by it too.
func Fits(pod *corev1.Pod, node *corev1.Node) bool {
	return pod.Spec.NodeName == "" || pod.Spec.NodeName == node.Name
}
