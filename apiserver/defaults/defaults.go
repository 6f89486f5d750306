// Package defaults fills in the fields that Kubernetes defaults on the
// server, so that objects stored by minik read back exactly as they would
// from a real apiserver. Every function mutates its argument in place, is
// idempotent, and never overwrites a value the client set.
//
// The facts follow upstream pkg/apis/{core,apps,batch,scheduling,rbac,networking,admissionregistration}/v1
// defaults.go, the +default markers in k8s.io/api, and a few defaults that
// upstream applies in registry strategies or admission plugins (named on
// each function).
package defaults

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object applies the defaults for obj's type; run it on every decoded
// create and update body. For pods it also runs DefaultTolerationSeconds,
// which upstream's admission applies on both create and update. Types
// without defaults (Event, Lease, ServiceAccount, PodDisruptionBudget,
// Ingress) and unknown types are left untouched. Defaults that upstream
// applies on create only are in OnCreate.
func Object(obj runtime.Object) {
	switch o := obj.(type) {
	case *corev1.Pod:
		Pod(o)
		DefaultTolerationSeconds(o)
	case *corev1.PodTemplate:
		PodTemplateSpec(&o.Template)
	case *corev1.ReplicationController:
		ReplicationController(o)
	case *appsv1.ReplicaSet:
		ReplicaSet(o)
	case *appsv1.Deployment:
		Deployment(o)
	case *appsv1.DaemonSet:
		DaemonSet(o)
	case *batchv1.Job:
		Job(o)
	case *appsv1.StatefulSet:
		StatefulSet(o)
	case *batchv1.CronJob:
		CronJob(o)
	case *corev1.Namespace:
		Namespace(o)
	case *corev1.Node:
		Node(o)
	case *corev1.Secret:
		Secret(o)
	case *corev1.ConfigMap:
		ConfigMap(o)
	case *schedulingv1.PriorityClass:
		PriorityClass(o)
	case *corev1.Service:
		Service(o)
	case *corev1.Endpoints:
		Endpoints(o)
	case *discoveryv1.EndpointSlice:
		EndpointSlice(o)
	case *corev1.LimitRange:
		LimitRange(o)
	case *corev1.PersistentVolume:
		PersistentVolume(o)
	case *corev1.PersistentVolumeClaim:
		PersistentVolumeClaim(o)
	case *storagev1.StorageClass:
		StorageClass(o)
	case *storagev1.CSIDriver:
		CSIDriver(o)
	case *networkingv1.NetworkPolicy:
		NetworkPolicy(o)
	case *networkingv1.IngressClass:
		IngressClass(o)
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		ValidatingWebhookConfiguration(o)
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		MutatingWebhookConfiguration(o)
	case *resourcev1.ResourceClaim:
		ResourceClaim(o)
	case *resourcev1.ResourceClaimTemplate:
		ResourceClaimSpec(&o.Spec.Spec)
	case *autoscalingv2.HorizontalPodAutoscaler:
		HorizontalPodAutoscaler(o)
	case *rbacv1.RoleBinding:
		RoleBinding(o)
	case *rbacv1.ClusterRoleBinding:
		ClusterRoleBinding(o)
	case *corev1.Event, *coordinationv1.Lease, *corev1.ServiceAccount, *policyv1.PodDisruptionBudget, *networkingv1.Ingress:
		// Upstream has no server-side defaults for these types.
	}
}

// OnCreate applies the defaults that upstream's registry strategies apply
// only when an object is created: the generated Job selector and the
// namespace finalizer. Run it after Object, once the name and UID are
// assigned, before validation. Other types are left untouched.
func OnCreate(obj runtime.Object) {
	switch o := obj.(type) {
	case *batchv1.Job:
		JobSelector(o)
	case *corev1.Namespace:
		NamespaceFinalizer(o)
	}
}
