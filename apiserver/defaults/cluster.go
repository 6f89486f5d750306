package defaults

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/utils/ptr"
)

// Namespace labels the namespace with kubernetes.io/metadata.name and sets
// status.phase Active.
func Namespace(ns *corev1.Namespace) {
	// A nameless namespace (generateName) is labelled once it has a name.
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
}

// NamespaceFinalizer adds the "kubernetes" finalizer to spec.finalizers.
// Upstream does this in the namespace strategy on create only: the
// namespace controller removes it once the namespace is empty, and adding
// it again on a later write would block deletion forever.
func NamespaceFinalizer(ns *corev1.Namespace) {
	if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
	}
}

// Node defaults status.allocatable to status.capacity when only capacity is
// reported.
func Node(node *corev1.Node) {
	if node.Status.Allocatable == nil && node.Status.Capacity != nil {
		node.Status.Allocatable = node.Status.Capacity.DeepCopy()
	}
}

// Secret defaults the type to Opaque.
func Secret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
}

// ConfigMap defaults data to an empty map, as upstream does.
func ConfigMap(cm *corev1.ConfigMap) {
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
}

// PriorityClass defaults preemptionPolicy to PreemptLowerPriority.
func PriorityClass(pc *schedulingv1.PriorityClass) {
	if pc.PreemptionPolicy == nil {
		pc.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
	}
}
