package printers

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var limitRangeColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Created At", Type: "date", Description: objectMetaDoc["creationTimestamp"]},
}

func limitRangeRow(lr *corev1.LimitRange, _ time.Time) metav1.TableRow {
	return row(lr.Name, lr.CreationTimestamp.UTC().Format(time.RFC3339))
}

var resourceQuotaColumns = []metav1.TableColumnDefinition{
	nameColumn,
	ageColumn,
	{Name: "Request", Type: "string", Description: "Request represents a minimum amount of cpu/memory that a container may consume."},
	{Name: "Limit", Type: "string", Description: "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."},
}

// resourceQuotaRow prints "used/hard" per resource of status.hard, sorted,
// limits.* in the LIMIT column and everything else in REQUEST, as
// upstream does.
func resourceQuotaRow(q *corev1.ResourceQuota, now time.Time) metav1.TableRow {
	names := make([]string, 0, len(q.Status.Hard))
	for name := range q.Status.Hard {
		names = append(names, string(name))
	}
	sort.Strings(names)
	var request, limit []string
	for _, name := range names {
		used, hard := q.Status.Used[corev1.ResourceName(name)], q.Status.Hard[corev1.ResourceName(name)]
		cell := fmt.Sprintf("%s: %s/%s", name, used.String(), hard.String())
		if strings.HasPrefix(name, "limits.") {
			limit = append(limit, cell)
		} else {
			request = append(request, cell)
		}
	}
	return row(q.Name, since(q.CreationTimestamp.Time, now), strings.Join(request, ", "), strings.Join(limit, ", "))
}
