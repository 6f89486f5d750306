package printers

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

const (
	// labelNodeRolePrefix marks a role in the label key: node-role.kubernetes.io/<role>.
	labelNodeRolePrefix = "node-role.kubernetes.io/"
	// labelNodeRole is the older form, with the role in the value.
	labelNodeRole = "kubernetes.io/role"
)

// nodeRow prints NAME STATUS ROLES AGE VERSION INTERNAL-IP EXTERNAL-IP
// OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME.
func nodeRow(node *corev1.Node, now time.Time) metav1.TableRow {
	info := node.Status.NodeInfo
	return row(
		node.Name,
		nodeStatus(node),
		nodeRoles(node),
		since(node.CreationTimestamp.Time, now),
		info.KubeletVersion,
		nodeAddress(node, corev1.NodeInternalIP),
		nodeAddress(node, corev1.NodeExternalIP),
		orUnknown(info.OSImage),
		orUnknown(info.KernelVersion),
		orUnknown(info.ContainerRuntimeVersion),
	)
}

// nodeStatus is "Ready", "NotReady" or "Unknown" (no Ready condition yet),
// followed by ",SchedulingDisabled" for a cordoned node.
func nodeStatus(node *corev1.Node) string {
	status := "Unknown"
	// The last Ready condition wins, as upstream keys conditions by type.
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		status = string(c.Type)
		if c.Status != corev1.ConditionTrue {
			status = "Not" + string(c.Type)
		}
	}
	if node.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	return status
}

// nodeRoles lists the roles from node-role.kubernetes.io/<role> and
// kubernetes.io/role=<role> labels, sorted, or "<none>".
func nodeRoles(node *corev1.Node) string {
	roles := sets.New[string]()
	for k, v := range node.Labels {
		switch {
		case strings.HasPrefix(k, labelNodeRolePrefix):
			if role := strings.TrimPrefix(k, labelNodeRolePrefix); role != "" {
				roles.Insert(role)
			}
		case k == labelNodeRole && v != "":
			roles.Insert(v)
		}
	}
	if roles.Len() == 0 {
		return "<none>"
	}
	return strings.Join(sets.List(roles), ",")
}

// nodeAddress returns the node's first address of type t, or "<none>".
func nodeAddress(node *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range node.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return "<none>"
}

// orUnknown shows a value the kubelet has not reported as "<unknown>".
func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}
