// Package nodeunschedulable rejects cordoned nodes (spec.unschedulable),
// unless the pod tolerates the node.kubernetes.io/unschedulable taint.
package nodeunschedulable

import (
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"minik/scheduler/framework"
)

const (
	// Name is the plugin's name in the registry.
	Name = "NodeUnschedulable"
	// ErrReasonUnschedulable is the rejection reason for a cordoned node.
	ErrReasonUnschedulable = "node(s) were unschedulable"
)

// NodeUnschedulable is a filter plugin.
type NodeUnschedulable struct{}

var _ framework.FilterPlugin = &NodeUnschedulable{}

// New returns the plugin.
func New() *NodeUnschedulable { return &NodeUnschedulable{} }

// Name implements framework.Plugin.
func (*NodeUnschedulable) Name() string { return Name }

// Filter implements framework.FilterPlugin.
func (*NodeUnschedulable) Filter(_ *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	if !ni.Node().Spec.Unschedulable {
		return nil
	}
	taint := corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	if corev1helpers.TolerationsTolerateTaint(logr.Discard(), pod.Spec.Tolerations, &taint, false) {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUnschedulable)
}
