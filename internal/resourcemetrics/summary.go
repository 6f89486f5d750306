// Package resourcemetrics holds what the resource metrics pipeline
// shares: the kubelet's stats summary (the subset of the kubelet's
// /stats/summary API that `kubectl top` and the HPA need), the
// metrics.k8s.io/v1beta1 objects the apiserver serves, and the Sampler
// that turns cumulative CPU counters into rates.
package resourcemetrics

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Summary is the kubelet's /stats/summary answer (stats/v1alpha1 names).
type Summary struct {
	Node NodeStats  `json:"node"`
	Pods []PodStats `json:"pods"`
}

// NodeStats is the node's usage as a whole.
type NodeStats struct {
	NodeName  string       `json:"nodeName"`
	StartTime metav1.Time  `json:"startTime"`
	CPU       *CPUStats    `json:"cpu,omitempty"`
	Memory    *MemoryStats `json:"memory,omitempty"`
}

// PodReference names a pod.
type PodReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
}

// PodStats is one pod's usage: the sum of its containers' and each one's.
type PodStats struct {
	PodRef     PodReference     `json:"podRef"`
	StartTime  metav1.Time      `json:"startTime"`
	Containers []ContainerStats `json:"containers"`
	CPU        *CPUStats        `json:"cpu,omitempty"`
	Memory     *MemoryStats     `json:"memory,omitempty"`
}

// ContainerStats is one running container's usage.
type ContainerStats struct {
	Name      string       `json:"name"`
	StartTime metav1.Time  `json:"startTime"`
	CPU       *CPUStats    `json:"cpu,omitempty"`
	Memory    *MemoryStats `json:"memory,omitempty"`
}

// CPUStats: UsageCoreNanoSeconds is cumulative (core-nanoseconds since
// start); UsageNanoCores is the rate over the kubelet's last window, absent
// until it has two readings.
type CPUStats struct {
	Time                 metav1.Time `json:"time"`
	UsageNanoCores       *uint64     `json:"usageNanoCores,omitempty"`
	UsageCoreNanoSeconds *uint64     `json:"usageCoreNanoSeconds,omitempty"`
}

// MemoryStats in bytes; the working set (usage less inactive file pages)
// is what eviction and `kubectl top` use.
type MemoryStats struct {
	Time            metav1.Time `json:"time"`
	AvailableBytes  *uint64     `json:"availableBytes,omitempty"`
	UsageBytes      *uint64     `json:"usageBytes,omitempty"`
	WorkingSetBytes *uint64     `json:"workingSetBytes,omitempty"`
}
