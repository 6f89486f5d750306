package printers

import (
	"fmt"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

var horizontalPodAutoscalerColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Reference", Type: "string", Description: "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count."},
	{Name: "Targets", Type: "string", Description: "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used)."},
	{Name: "MinPods", Type: "string", Description: "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down."},
	{Name: "MaxPods", Type: "integer", Description: "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up."},
	{Name: "Replicas", Type: "integer", Description: "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler."},
	ageColumn,
}

// horizontalPodAutoscalerRow prints NAME REFERENCE TARGETS MINPODS
// MAXPODS REPLICAS AGE for the v2 and the v1 object alike, TARGETS as
// upstream formats them ("cpu: 45%/50%", "<unknown>" before a reading).
func horizontalPodAutoscalerRow(obj runtime.Object, now time.Time) (metav1.TableRow, error) {
	var meta metav1.ObjectMeta
	var kind, name, targets string
	var minReplicas *int32
	var maxReplicas, replicas int32
	switch h := obj.(type) {
	case *autoscalingv2.HorizontalPodAutoscaler:
		meta, kind, name = h.ObjectMeta, h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name
		minReplicas, maxReplicas, replicas = h.Spec.MinReplicas, h.Spec.MaxReplicas, h.Status.CurrentReplicas
		targets = formatHPAMetrics(h.Spec.Metrics, h.Status.CurrentMetrics)
	case *autoscalingv1.HorizontalPodAutoscaler:
		meta, kind, name = h.ObjectMeta, h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name
		minReplicas, maxReplicas, replicas = h.Spec.MinReplicas, h.Spec.MaxReplicas, h.Status.CurrentReplicas
		targets = "<none>"
		if t := h.Spec.TargetCPUUtilizationPercentage; t != nil {
			current := "<unknown>"
			if c := h.Status.CurrentCPUUtilizationPercentage; c != nil {
				current = fmt.Sprintf("%d%%", *c)
			}
			targets = fmt.Sprintf("cpu: %s/%d%%", current, *t)
		}
	default:
		return metav1.TableRow{}, fmt.Errorf("unexpected object type %T, want *v2.HorizontalPodAutoscaler", obj)
	}
	minPods := "<unset>"
	if minReplicas != nil {
		minPods = fmt.Sprint(*minReplicas)
	}
	return row(meta.Name, kind+"/"+name, targets, minPods, int64(maxReplicas), int64(replicas), since(meta.CreationTimestamp.Time, now)), nil
}

// formatHPAMetrics lists at most two metrics as "NAME: CURRENT/TARGET",
// then "+ N more...", with statuses matched by position, as upstream.
func formatHPAMetrics(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return "<none>"
	}
	const shown = 2
	var list []string
	for i, spec := range specs {
		if len(list) == shown {
			return fmt.Sprintf("%s + %d more...", strings.Join(list, ", "), len(specs)-shown)
		}
		var st *autoscalingv2.MetricStatus
		if i < len(statuses) {
			st = &statuses[i]
		}
		list = append(list, formatHPAMetric(spec, st))
	}
	return strings.Join(list, ", ")
}

func formatHPAMetric(spec autoscalingv2.MetricSpec, st *autoscalingv2.MetricStatus) string {
	target := func(t autoscalingv2.MetricTarget) string {
		switch {
		case t.AverageValue != nil:
			return t.AverageValue.String()
		case t.Value != nil:
			return t.Value.String()
		case t.AverageUtilization != nil:
			return fmt.Sprintf("%d%%", *t.AverageUtilization)
		}
		return "<auto>"
	}
	current := func(t autoscalingv2.MetricTarget, c *autoscalingv2.MetricValueStatus) string {
		switch {
		case c == nil:
		case t.AverageValue != nil && c.AverageValue != nil:
			return c.AverageValue.String()
		case t.Value != nil && c.Value != nil:
			return c.Value.String()
		case c.AverageUtilization != nil:
			return fmt.Sprintf("%d%%", *c.AverageUtilization)
		}
		return "<unknown>"
	}
	switch spec.Type {
	case autoscalingv2.ResourceMetricSourceType:
		if spec.Resource == nil {
			break
		}
		var c *autoscalingv2.MetricValueStatus
		if st != nil && st.Resource != nil {
			c = &st.Resource.Current
		}
		return fmt.Sprintf("%s: %s/%s", spec.Resource.Name, current(spec.Resource.Target, c), target(spec.Resource.Target))
	case autoscalingv2.ContainerResourceMetricSourceType:
		if spec.ContainerResource == nil {
			break
		}
		var c *autoscalingv2.MetricValueStatus
		if st != nil && st.ContainerResource != nil {
			c = &st.ContainerResource.Current
		}
		return fmt.Sprintf("%s: %s/%s", spec.ContainerResource.Name, current(spec.ContainerResource.Target, c), target(spec.ContainerResource.Target))
	case autoscalingv2.PodsMetricSourceType:
		if spec.Pods == nil {
			break
		}
		var c *autoscalingv2.MetricValueStatus
		if st != nil && st.Pods != nil {
			c = &st.Pods.Current
		}
		return fmt.Sprintf("%s/%s", current(spec.Pods.Target, c), target(spec.Pods.Target))
	case autoscalingv2.ObjectMetricSourceType:
		if spec.Object == nil {
			break
		}
		var c *autoscalingv2.MetricValueStatus
		if st != nil && st.Object != nil {
			c = &st.Object.Current
		}
		return fmt.Sprintf("%s/%s", current(spec.Object.Target, c), target(spec.Object.Target))
	case autoscalingv2.ExternalMetricSourceType:
		if spec.External == nil {
			break
		}
		var c *autoscalingv2.MetricValueStatus
		if st != nil && st.External != nil {
			c = &st.External.Current
		}
		return fmt.Sprintf("%s/%s", current(spec.External.Target, c), target(spec.External.Target))
	}
	return "<unknown type>"
}
