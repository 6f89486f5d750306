package resourcemetrics

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// GroupVersion is the resource metrics API's.
const GroupVersion = "metrics.k8s.io/v1beta1"

// NodeMetrics is metrics.k8s.io/v1beta1 NodeMetrics: a node's usage
// (cpu in cores, memory working set in bytes) over Window ending at
// Timestamp.
type NodeMetrics struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Timestamp         metav1.Time         `json:"timestamp"`
	Window            metav1.Duration     `json:"window"`
	Usage             corev1.ResourceList `json:"usage"`
}

// NodeMetricsList is a list of NodeMetrics.
type NodeMetricsList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeMetrics `json:"items"`
}

// PodMetrics is metrics.k8s.io/v1beta1 PodMetrics: each container's usage.
type PodMetrics struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Timestamp         metav1.Time        `json:"timestamp"`
	Window            metav1.Duration    `json:"window"`
	Containers        []ContainerMetrics `json:"containers"`
}

// ContainerMetrics is one container's usage.
type ContainerMetrics struct {
	Name  string              `json:"name"`
	Usage corev1.ResourceList `json:"usage"`
}

// PodMetricsList is a list of PodMetrics.
type PodMetricsList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodMetrics `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (m *NodeMetrics) DeepCopyObject() runtime.Object {
	out := *m
	m.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Usage = m.Usage.DeepCopy()
	return &out
}

// DeepCopyObject implements runtime.Object.
func (m *NodeMetricsList) DeepCopyObject() runtime.Object {
	out := *m
	out.Items = make([]NodeMetrics, len(m.Items))
	for i := range m.Items {
		out.Items[i] = *m.Items[i].DeepCopyObject().(*NodeMetrics)
	}
	return &out
}

// DeepCopyObject implements runtime.Object.
func (m *PodMetrics) DeepCopyObject() runtime.Object {
	out := *m
	m.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Containers = make([]ContainerMetrics, len(m.Containers))
	for i, c := range m.Containers {
		out.Containers[i] = ContainerMetrics{Name: c.Name, Usage: c.Usage.DeepCopy()}
	}
	return &out
}

// DeepCopyObject implements runtime.Object.
func (m *PodMetricsList) DeepCopyObject() runtime.Object {
	out := *m
	out.Items = make([]PodMetrics, len(m.Items))
	for i := range m.Items {
		out.Items[i] = *m.Items[i].DeepCopyObject().(*PodMetrics)
	}
	return &out
}
