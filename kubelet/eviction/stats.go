package eviction

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// Summary is what the eviction manager decides from: the node's signals
// and each pod's usage (Kubernetes' Summary API, reduced to what eviction
// reads).
type Summary struct {
	Node NodeStats
	// Pods by UID; a pod without an entry has no stats, and is ranked
	// first, as in the kubelet.
	Pods map[types.UID]PodStats
}

// NodeStats are the node-wide signals. Zero capacities mean "not
// observed": no threshold on that signal is met.
type NodeStats struct {
	// MemoryCapacityBytes is the node's memory; MemoryWorkingSetBytes its
	// usage less inactive file pages.
	MemoryCapacityBytes, MemoryWorkingSetBytes int64
	// NodeFs* describe the kubelet's root dir filesystem.
	NodeFsCapacityBytes, NodeFsAvailableBytes int64
	NodeFsInodes, NodeFsInodesFree            int64
	// MaxPID is the node's task limit, RunningProcesses the tasks running.
	MaxPID, RunningProcesses int64
}

// PodStats is one pod's usage.
type PodStats struct {
	Containers []ContainerStats
	// VolumeBytes and VolumeInodes are used by the pod's local volumes
	// (emptyDir on disk).
	VolumeBytes, VolumeInodes int64
	// Processes is the number of tasks in the pod's containers.
	Processes int64
}

// ContainerStats is one container's usage.
type ContainerStats struct {
	Name string
	// MemoryWorkingSetBytes is the container's memory usage less inactive
	// file pages (cAdvisor's working set).
	MemoryWorkingSetBytes int64
	// RootfsBytes and RootfsInodes are its writable layer; LogsBytes and
	// LogsInodes its log files.
	RootfsBytes, RootfsInodes int64
	LogsBytes, LogsInodes     int64
}

// memory is the pod's working set.
func (p PodStats) memory() int64 {
	var n int64
	for _, c := range p.Containers {
		n += c.MemoryWorkingSetBytes
	}
	return n
}

// ephemeralStorage is what the kubelet counts against nodefs when there
// is no dedicated image filesystem: writable layers, logs and local volumes.
func (p PodStats) ephemeralStorage() int64 {
	n := p.VolumeBytes
	for _, c := range p.Containers {
		n += c.RootfsBytes + c.LogsBytes
	}
	return n
}

func (p PodStats) inodes() int64 {
	n := p.VolumeInodes
	for _, c := range p.Containers {
		n += c.RootfsInodes + c.LogsInodes
	}
	return n
}

// observation is one signal's available amount and capacity.
type observation struct {
	available, capacity resource.Quantity
}

// observe derives the signals from the node's stats, as the kubelet's
// makeSignalObservations does.
func observe(n NodeStats) map[Signal]observation {
	obs := map[Signal]observation{}
	bytes := func(v int64) resource.Quantity { return *resource.NewQuantity(v, resource.BinarySI) }
	count := func(v int64) resource.Quantity { return *resource.NewQuantity(v, resource.DecimalSI) }
	if n.MemoryCapacityBytes > 0 {
		obs[SignalMemoryAvailable] = observation{bytes(n.MemoryCapacityBytes - n.MemoryWorkingSetBytes), bytes(n.MemoryCapacityBytes)}
	}
	if n.NodeFsCapacityBytes > 0 {
		obs[SignalNodeFsAvailable] = observation{bytes(n.NodeFsAvailableBytes), bytes(n.NodeFsCapacityBytes)}
	}
	if n.NodeFsInodes > 0 {
		obs[SignalNodeFsInodesFree] = observation{count(n.NodeFsInodesFree), count(n.NodeFsInodes)}
	}
	if n.MaxPID > 0 {
		obs[SignalPIDAvailable] = observation{count(n.MaxPID - n.RunningProcesses), count(n.MaxPID)}
	}
	return obs
}
