// Package fieldpath resolves the downward API: a pod's fields
// (fieldRef) and a container's requests and limits (resourceFieldRef),
// for environment variables and downwardAPI volumes alike.
package fieldpath

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// FieldValue resolves a downward API fieldRef.
func FieldValue(pod *corev1.Pod, path, podIP, hostIP string) (string, error) {
	if strings.HasPrefix(path, "metadata.labels['") || strings.HasPrefix(path, "metadata.annotations['") {
		open := strings.Index(path, "['")
		key := strings.TrimSuffix(path[open+2:], "']")
		if strings.HasPrefix(path, "metadata.labels") {
			return pod.Labels[key], nil
		}
		return pod.Annotations[key], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return podIP, nil
	case "status.hostIP", "status.hostIPs":
		return hostIP, nil
	}
	return "", fmt.Errorf("unsupported fieldRef %q", path)
}

func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q\n", k, m[k])
	}
	return b.String()
}

// ResourceValue resolves a resourceFieldRef: the request or limit divided
// by the divisor, rounded up, as Kubernetes does. An unset limit is the
// node's allocatable in Kubernetes; here it is reported as 0... unless set.
func ResourceValue(pod *corev1.Pod, c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	target := c
	if ref.ContainerName != "" {
		target = nil
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == ref.ContainerName {
				target = &pod.Spec.Containers[i]
			}
		}
		if target == nil {
			return "", fmt.Errorf("resourceFieldRef: no container %q", ref.ContainerName)
		}
	}
	var q resource.Quantity
	switch ref.Resource {
	case "limits.cpu":
		q = *target.Resources.Limits.Cpu()
	case "limits.memory":
		q = *target.Resources.Limits.Memory()
	case "requests.cpu":
		q = *target.Resources.Requests.Cpu()
	case "requests.memory":
		q = *target.Resources.Requests.Memory()
	case "limits.ephemeral-storage":
		q = *target.Resources.Limits.StorageEphemeral()
	case "requests.ephemeral-storage":
		q = *target.Resources.Requests.StorageEphemeral()
	default:
		return "", fmt.Errorf("unsupported resourceFieldRef %q", ref.Resource)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if strings.HasSuffix(ref.Resource, "cpu") {
		// Cores, rounded up, in units of the divisor (1, 1m, ...).
		v := (q.MilliValue() + divisor.MilliValue() - 1) / divisor.MilliValue()
		if q.MilliValue() > 0 && v == 0 {
			v = 1
		}
		return strconv.FormatInt(v, 10), nil
	}
	v := (q.Value() + divisor.Value() - 1) / divisor.Value()
	return strconv.FormatInt(v, 10), nil
}
