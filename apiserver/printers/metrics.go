package printers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/internal/resourcemetrics"
)

// The columns metrics-server prints for `kubectl get nodes.metrics.k8s.io`
// and `pods.metrics.k8s.io`.
var resourceMetricsColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "CPU", Type: "string", Description: "CPU usage"},
	{Name: "Memory", Type: "string", Description: "Memory usage"},
	{Name: "Window", Type: "string", Description: "CPU usage window size"},
}

func nodeMetricsRow(m *resourcemetrics.NodeMetrics, _ time.Time) metav1.TableRow {
	return row(m.Name, m.Usage.Cpu().String(), m.Usage.Memory().String(), m.Window.Duration.String())
}

// podMetricsRow sums the containers' usage.
func podMetricsRow(m *resourcemetrics.PodMetrics, _ time.Time) metav1.TableRow {
	cpu, mem := resource.Quantity{}, resource.Quantity{}
	for _, c := range m.Containers {
		cpu.Add(c.Usage[corev1.ResourceCPU])
		mem.Add(c.Usage[corev1.ResourceMemory])
	}
	return row(m.Name, cpu.String(), mem.String(), m.Window.Duration.String())
}
