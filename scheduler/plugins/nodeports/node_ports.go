// Package nodeports rejects nodes where a host port the pod asks for is
// taken, by protocol and host IP (0.0.0.0 conflicts with every IP).
package nodeports

import (
	corev1 "k8s.io/api/core/v1"

	"minik/scheduler/framework"
)

const (
	// Name is the plugin's name in the registry.
	Name = "NodePorts"
	// ErrReason is the rejection reason.
	ErrReason = "node(s) didn't have free ports for the requested pod ports"
)

// Keys of this plugin's cycle state.
var (
	stateKey = framework.NewStateKey("PreFilter" + Name)
)

// NodePorts is a filter plugin.
type NodePorts struct{}

var (
	_ framework.PreFilterPlugin = &NodePorts{}
	_ framework.FilterPlugin    = &NodePorts{}
)

// New returns the plugin.
func New() *NodePorts { return &NodePorts{} }

// Name implements framework.Plugin.
func (*NodePorts) Name() string { return Name }

// PreFilter collects the pod's host ports; a pod without any skips Filter.
func (*NodePorts) PreFilter(state *framework.CycleState, pod *corev1.Pod, _ framework.SharedLister) *framework.Status {
	ports := hostPorts(pod)
	if len(ports) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(stateKey, ports)
	return nil
}

// Filter implements framework.FilterPlugin.
func (*NodePorts) Filter(state *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	ports, err := framework.ReadAs[[]corev1.ContainerPort](state, stateKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	if conflict(ports, ni) != nil {
		return framework.NewStatus(framework.Unschedulable, ErrReason)
	}
	return nil
}

// Conflict returns the first host port pod asks for that is taken on the
// node, nil if all are free. The kubelet admits by it too.
func Conflict(pod *corev1.Pod, ni *framework.NodeInfo) *corev1.ContainerPort {
	return conflict(hostPorts(pod), ni)
}

func hostPorts(pod *corev1.Pod) []corev1.ContainerPort {
	var ports []corev1.ContainerPort
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				ports = append(ports, p)
			}
		}
	}
	return ports
}

func conflict(ports []corev1.ContainerPort, ni *framework.NodeInfo) *corev1.ContainerPort {
	for i, p := range ports {
		if ni.UsedPorts.CheckConflict(p.HostIP, string(p.Protocol), p.HostPort) {
			return &ports[i]
		}
	}
	return nil
}
