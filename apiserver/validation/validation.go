// Package validation checks API objects the way kube-apiserver does, and
// returns the problems as a field.ErrorList whose field paths and messages
// match upstream, so that the apiserver can answer 422 Invalid with the
// causes kubectl users already know.
//
// It expects defaulted objects (see apiserver/defaults): a field upstream
// always defaults, such as restartPolicy, is reported as Required when it
// is empty. Checks follow upstream pkg/apis/*/validation and the validation
// done in registry strategies; facts carry over, code does not.
package validation

import (
	"fmt"
	"strings"

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
	"k8s.io/apimachinery/pkg/api/meta"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	metaPath   = field.NewPath("metadata")
	specPath   = field.NewPath("spec")
	statusPath = field.NewPath("status")
)

// Create validates obj for creation. namespaced says whether obj's resource
// is namespaced: metadata.namespace is then required, and otherwise
// forbidden. The name must already be generated from generateName. Types
// without specific rules get the generic metadata checks.
func Create(obj runtime.Object, namespaced bool) field.ErrorList {
	switch o := obj.(type) {
	case *corev1.Pod:
		return validatePod(o, namespaced)
	case *corev1.Node:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateNode(o)...)
	case *corev1.Namespace:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSLabel), validateNamespace(o)...)
	case *corev1.ReplicationController:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateReplicationControllerSpec(&o.Spec, specPath)...)
	case *appsv1.ReplicaSet:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateReplicaSetSpec(&o.Spec, specPath)...)
	case *appsv1.Deployment:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateDeploymentSpec(&o.Spec, specPath)...)
	case *appsv1.DaemonSet:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateDaemonSetSpec(&o.Spec, specPath)...)
	case *batchv1.Job:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateJob(o, true)...)
	case *appsv1.StatefulSet:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateStatefulSetSpec(&o.Spec, specPath)...)
	case *appsv1.ControllerRevision:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateControllerRevision(o)...)
	case *batchv1.CronJob:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateCronJob(o, false)...)
	case *corev1.Event:
		return append(objectMeta(&o.ObjectMeta, namespaced, anyName), validateEvent(o)...)
	case *corev1.ConfigMap:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateConfigMap(o)...)
	case *corev1.Secret:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateSecret(o)...)
	case *corev1.ServiceAccount:
		return objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.ValidateServiceAccountName)
	case *corev1.Service:
		return validateService(o)
	case *corev1.Endpoints:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateEndpointSubsets(o.Subsets)...)
	case *discoveryv1.EndpointSlice:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateEndpointSlice(o)...)
	case *corev1.LimitRange:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateLimitRange(o)...)
	case *corev1.ResourceQuota:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateResourceQuota(o)...)
	case *coordinationv1.Lease:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateLeaseSpec(&o.Spec, specPath)...)
	case *schedulingv1.PriorityClass:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validatePriorityClass(o)...)
	case *policyv1.PodDisruptionBudget:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validatePodDisruptionBudgetSpec(&o.Spec, specPath)...)
	case *corev1.PersistentVolume:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validatePersistentVolume(o)...)
	case *corev1.PersistentVolumeClaim:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validatePersistentVolumeClaimSpec(&o.Spec, specPath)...)
	case *storagev1.StorageClass:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateStorageClass(o)...)
	case *storagev1.CSIDriver:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateCSIDriver(o)...)
	case *storagev1.CSINode:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateCSINode(o)...)
	case *storagev1.CSIStorageCapacity:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateCSIStorageCapacity(o)...)
	case *storagev1.VolumeAttachment:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateVolumeAttachment(o)...)
	case *resourcev1.ResourceClaim:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateResourceClaimSpec(&o.Spec, specPath)...)
	case *resourcev1.ResourceClaimTemplate:
		errs := objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain)
		errs = append(errs, templateMeta(&o.Spec.ObjectMeta, specPath.Child("metadata"))...)
		return append(errs, validateResourceClaimSpec(&o.Spec.Spec, specPath.Child("spec"))...)
	case *resourcev1.DeviceClass:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateDeviceClass(o)...)
	case *resourcev1.ResourceSlice:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateResourceSlice(o, nil)...)
	case *resourcev1.DeviceTaintRule:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateDeviceTaintRule(o, nil)...)
	case *networkingv1.NetworkPolicy:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateNetworkPolicySpec(&o.Spec, specPath)...)
	case *networkingv1.Ingress:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateIngressCreate(o)...)
	case *networkingv1.IngressClass:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain), validateIngressClass(o)...)
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain),
			validateWebhooks(validatingFields(o.Webhooks), strictWebhookOptions)...)
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		return append(objectMeta(&o.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain),
			validateWebhooks(mutatingFields(o.Webhooks), strictWebhookOptions)...)
	case *autoscalingv2.HorizontalPodAutoscaler:
		return validateHorizontalPodAutoscaler(o, namespaced)
	case *rbacv1.Role:
		return append(objectMeta(&o.ObjectMeta, namespaced, rbacName), validateRole(o)...)
	case *rbacv1.ClusterRole:
		return append(objectMeta(&o.ObjectMeta, namespaced, rbacName), validateClusterRole(o)...)
	case *rbacv1.RoleBinding:
		return append(objectMeta(&o.ObjectMeta, namespaced, rbacName), validateRoleBinding(o)...)
	case *rbacv1.ClusterRoleBinding:
		return append(objectMeta(&o.ObjectMeta, namespaced, rbacName), validateClusterRoleBinding(o)...)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath(""), err)}
	}
	return apimachineryvalidation.ValidateObjectMetaAccessor(m, namespaced, apimachineryvalidation.NameIsDNSSubdomain, metaPath)
}

// Update validates obj as a replacement for old through the main resource
// (not a subresource). Besides the metadata rules (name, namespace and uid
// immutable, resourceVersion set: copy the stored one in first for an
// unconditional update), it checks obj as Create does and enforces each
// type's immutable fields.
func Update(obj, old runtime.Object, namespaced bool) field.ErrorList {
	switch o := obj.(type) {
	case *corev1.Pod:
		return update(o, old, func(o, old *corev1.Pod) field.ErrorList { return validatePodUpdate(o, old, namespaced) })
	case *corev1.Node:
		return update(o, old, func(o, old *corev1.Node) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateNodeUpdate(o, old)...)
		})
	case *corev1.Namespace:
		return update(o, old, func(o, old *corev1.Namespace) field.ErrorList {
			return objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced)
		})
	case *corev1.ReplicationController:
		return update(o, old, func(o, old *corev1.ReplicationController) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateReplicationControllerSpec(&o.Spec, specPath)...)
		})
	case *appsv1.ReplicaSet:
		return update(o, old, func(o, old *appsv1.ReplicaSet) field.ErrorList {
			errs := append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateReplicaSetSpec(&o.Spec, specPath)...)
			return append(errs, apimachineryvalidation.ValidateImmutableField(o.Spec.Selector, old.Spec.Selector, specPath.Child("selector"))...)
		})
	case *autoscalingv2.HorizontalPodAutoscaler:
		return update(o, old, func(o, old *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateHorizontalPodAutoscalerSpec(&o.Spec, specPath)...)
		})
	case *appsv1.Deployment:
		return update(o, old, func(o, old *appsv1.Deployment) field.ErrorList {
			errs := append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateDeploymentSpec(&o.Spec, specPath)...)
			return append(errs, apimachineryvalidation.ValidateImmutableField(o.Spec.Selector, old.Spec.Selector, specPath.Child("selector"))...)
		})
	case *appsv1.DaemonSet:
		return update(o, old, func(o, old *appsv1.DaemonSet) field.ErrorList {
			errs := append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateDaemonSetSpec(&o.Spec, specPath)...)
			return append(errs, apimachineryvalidation.ValidateImmutableField(o.Spec.Selector, old.Spec.Selector, specPath.Child("selector"))...)
		})
	case *batchv1.Job:
		return update(o, old, func(o, old *batchv1.Job) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateJobUpdate(o, old)...)
		})
	case *appsv1.StatefulSet:
		return update(o, old, func(o, old *appsv1.StatefulSet) field.ErrorList {
			errs := append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateStatefulSetSpec(&o.Spec, specPath)...)
			return append(errs, validateStatefulSetUpdate(o, old)...)
		})
	case *appsv1.ControllerRevision:
		return update(o, old, func(o, old *appsv1.ControllerRevision) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateControllerRevisionUpdate(o, old)...)
		})
	case *batchv1.CronJob:
		return update(o, old, func(o, old *batchv1.CronJob) field.ErrorList {
			// A schedule stored with TZ= before the timeZone field may stay.
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateCronJob(o, strings.Contains(old.Spec.Schedule, "TZ"))...)
		})
	case *corev1.Event:
		return update(o, old, func(o, old *corev1.Event) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateEvent(o)...)
		})
	case *corev1.ConfigMap:
		return update(o, old, func(o, old *corev1.ConfigMap) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateConfigMapUpdate(o, old)...)
		})
	case *corev1.Secret:
		return update(o, old, func(o, old *corev1.Secret) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateSecretUpdate(o, old)...)
		})
	case *corev1.ServiceAccount:
		return update(o, old, func(o, old *corev1.ServiceAccount) field.ErrorList {
			return objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced)
		})
	case *corev1.Service:
		return update(o, old, validateServiceUpdate)
	case *corev1.Endpoints:
		return update(o, old, func(o, old *corev1.Endpoints) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateEndpointSubsets(o.Subsets)...)
		})
	case *discoveryv1.EndpointSlice:
		return update(o, old, func(o, old *discoveryv1.EndpointSlice) field.ErrorList {
			errs := append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateEndpointSlice(o)...)
			return append(errs, apimachineryvalidation.ValidateImmutableField(o.AddressType, old.AddressType, field.NewPath("addressType"))...)
		})
	case *corev1.LimitRange:
		return update(o, old, func(o, old *corev1.LimitRange) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateLimitRange(o)...)
		})
	case *corev1.ResourceQuota:
		return update(o, old, func(o, old *corev1.ResourceQuota) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateResourceQuota(o)...)
		})
	case *coordinationv1.Lease:
		return update(o, old, func(o, old *coordinationv1.Lease) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateLeaseSpec(&o.Spec, specPath)...)
		})
	case *schedulingv1.PriorityClass:
		return update(o, old, func(o, old *schedulingv1.PriorityClass) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validatePriorityClassUpdate(o, old)...)
		})
	case *policyv1.PodDisruptionBudget:
		return update(o, old, func(o, old *policyv1.PodDisruptionBudget) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validatePodDisruptionBudgetSpec(&o.Spec, specPath)...)
		})
	case *corev1.PersistentVolume:
		return update(o, old, func(o, old *corev1.PersistentVolume) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validatePersistentVolumeUpdate(o, old)...)
		})
	case *corev1.PersistentVolumeClaim:
		return update(o, old, func(o, old *corev1.PersistentVolumeClaim) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validatePersistentVolumeClaimUpdate(o, old)...)
		})
	case *storagev1.StorageClass:
		return update(o, old, func(o, old *storagev1.StorageClass) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateStorageClassUpdate(o, old)...)
		})
	case *storagev1.CSIDriver:
		return update(o, old, func(o, old *storagev1.CSIDriver) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateCSIDriverUpdate(o, old)...)
		})
	case *storagev1.CSINode:
		return update(o, old, func(o, old *storagev1.CSINode) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateCSINodeUpdate(o, old)...)
		})
	case *storagev1.CSIStorageCapacity:
		return update(o, old, func(o, old *storagev1.CSIStorageCapacity) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateCSIStorageCapacityUpdate(o, old)...)
		})
	case *storagev1.VolumeAttachment:
		return update(o, old, func(o, old *storagev1.VolumeAttachment) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateVolumeAttachmentUpdate(o, old)...)
		})
	case *resourcev1.ResourceClaim:
		return update(o, old, func(o, old *resourcev1.ResourceClaim) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateResourceClaimUpdate(o, old)...)
		})
	case *resourcev1.ResourceClaimTemplate:
		return update(o, old, func(o, old *resourcev1.ResourceClaimTemplate) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateResourceClaimTemplateUpdate(o, old)...)
		})
	case *resourcev1.DeviceClass:
		return update(o, old, func(o, old *resourcev1.DeviceClass) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateDeviceClass(o)...)
		})
	case *resourcev1.ResourceSlice:
		return update(o, old, func(o, old *resourcev1.ResourceSlice) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateResourceSlice(o, old)...)
		})
	case *resourcev1.DeviceTaintRule:
		return update(o, old, func(o, old *resourcev1.DeviceTaintRule) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateDeviceTaintRule(o, old)...)
		})
	case *networkingv1.NetworkPolicy:
		return update(o, old, func(o, old *networkingv1.NetworkPolicy) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateNetworkPolicySpec(&o.Spec, specPath)...)
		})
	case *networkingv1.Ingress:
		return update(o, old, func(o, old *networkingv1.Ingress) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateIngressSpec(&o.Spec, specPath)...)
		})
	case *networkingv1.IngressClass:
		return update(o, old, func(o, old *networkingv1.IngressClass) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateIngressClassUpdate(o, old)...)
		})
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		return update(o, old, func(o, old *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced),
				validateWebhooks(validatingFields(o.Webhooks), optionsFor(validatingFields(old.Webhooks)))...)
		})
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		return update(o, old, func(o, old *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced),
				validateWebhooks(mutatingFields(o.Webhooks), optionsFor(mutatingFields(old.Webhooks)))...)
		})
	case *rbacv1.Role:
		return update(o, old, func(o, old *rbacv1.Role) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateRole(o)...)
		})
	case *rbacv1.ClusterRole:
		return update(o, old, func(o, old *rbacv1.ClusterRole) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateClusterRole(o)...)
		})
	case *rbacv1.RoleBinding:
		return update(o, old, func(o, old *rbacv1.RoleBinding) field.ErrorList {
			errs := append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateRoleBinding(o)...)
			return append(errs, roleRefUpdate(o.RoleRef, old.RoleRef)...)
		})
	case *rbacv1.ClusterRoleBinding:
		return update(o, old, func(o, old *rbacv1.ClusterRoleBinding) field.ErrorList {
			errs := append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, namespaced), validateClusterRoleBinding(o)...)
			return append(errs, roleRefUpdate(o.RoleRef, old.RoleRef)...)
		})
	}
	return genericMetaUpdate(obj, old)
}

// StatusUpdate validates obj as a replacement for old through the /status
// subresource: the metadata update rules plus each type's status rules
// (non-negative counters, legal phase and container state transitions).
// The caller copies the stored spec into obj first, as upstream does.
func StatusUpdate(obj, old runtime.Object) field.ErrorList {
	switch o := obj.(type) {
	case *corev1.Pod:
		return update(o, old, validatePodStatusUpdate)
	case *corev1.Node:
		return update(o, old, func(o, old *corev1.Node) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, false), validateNodeUpdate(o, old)...)
		})
	case *corev1.Namespace:
		return update(o, old, func(o, old *corev1.Namespace) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, false), validateNamespaceStatus(o)...)
		})
	case *corev1.ReplicationController:
		return update(o, old, func(o, old *corev1.ReplicationController) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, true), validateReplicationControllerStatus(&o.Status, statusPath)...)
		})
	case *appsv1.ReplicaSet:
		return update(o, old, func(o, old *appsv1.ReplicaSet) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, true), validateReplicaSetStatus(&o.Status, statusPath)...)
		})
	case *appsv1.Deployment:
		return update(o, old, func(o, old *appsv1.Deployment) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, true), validateDeploymentStatusUpdate(&o.Status, &old.Status)...)
		})
	case *appsv1.DaemonSet:
		return update(o, old, func(o, old *appsv1.DaemonSet) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, true), validateDaemonSetStatusUpdate(&o.Status, &old.Status)...)
		})
	case *batchv1.Job:
		return update(o, old, func(o, old *batchv1.Job) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, true), validateJobStatus(&o.Status, statusPath)...)
		})
	case *appsv1.StatefulSet:
		return update(o, old, func(o, old *appsv1.StatefulSet) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, true), validateStatefulSetStatus(&o.Status, &old.Status)...)
		})
	case *batchv1.CronJob:
		return update(o, old, func(o, old *batchv1.CronJob) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, true), validateCronJobStatus(&o.Status)...)
		})
	case *policyv1.PodDisruptionBudget:
		return update(o, old, func(o, old *policyv1.PodDisruptionBudget) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, true), validatePodDisruptionBudgetStatus(&o.Status, statusPath)...)
		})
	case *autoscalingv2.HorizontalPodAutoscaler:
		return update(o, old, func(o, old *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, true), validateHorizontalPodAutoscalerStatus(&o.Status, statusPath)...)
		})
	case *corev1.Service:
		return update(o, old, func(o, old *corev1.Service) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, true), validateServiceStatus(o)...)
		})
	case *corev1.ResourceQuota:
		return update(o, old, func(o, old *corev1.ResourceQuota) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, true), validateResourceQuotaStatus(o)...)
		})
	case *corev1.PersistentVolumeClaim:
		return update(o, old, func(o, old *corev1.PersistentVolumeClaim) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, true), validatePersistentVolumeClaimStatus(o)...)
		})
	case *storagev1.CSINode:
		return update(o, old, func(o, old *storagev1.CSINode) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, false), validateCSINodeStatus(o)...)
		})
	case *storagev1.VolumeAttachment:
		return update(o, old, func(o, old *storagev1.VolumeAttachment) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, false), validateVolumeAttachmentStatus(&o.Status)...)
		})
	case *resourcev1.ResourceClaim:
		return update(o, old, func(o, old *resourcev1.ResourceClaim) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, true), validateResourceClaimStatus(o, old)...)
		})
	case *resourcev1.DeviceTaintRule:
		return update(o, old, func(o, old *resourcev1.DeviceTaintRule) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, false), validateDeviceTaintRuleStatus(o)...)
		})
	case *networkingv1.Ingress:
		return update(o, old, func(o, old *networkingv1.Ingress) field.ErrorList {
			return append(objectMetaUpdate(&o.ObjectMeta, &old.ObjectMeta, true), validateIngressStatus(o, old)...)
		})
	}
	return genericMetaUpdate(obj, old)
}

// update runs fn when old has obj's type, and reports a type mismatch,
// which is a caller bug, as an internal error otherwise.
func update[T runtime.Object](obj T, old runtime.Object, fn func(obj, old T) field.ErrorList) field.ErrorList {
	o, ok := old.(T)
	if !ok {
		return field.ErrorList{field.InternalError(field.NewPath(""), fmt.Errorf("cannot update a %T from a %T", obj, old))}
	}
	return fn(obj, o)
}

func genericMetaUpdate(obj, old runtime.Object) field.ErrorList {
	m, err := meta.Accessor(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath(""), err)}
	}
	oldMeta, err := meta.Accessor(old)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath(""), err)}
	}
	return apimachineryvalidation.ValidateObjectMetaAccessorUpdate(m, oldMeta, metaPath)
}

// anyName accepts every name: upstream does not check the format of core/v1
// Event names, which recorders build from the involved object's name.
func anyName(string, bool) []string { return nil }

// objectMeta validates metadata on create, adding upstream's rule that an
// unqualified finalizer must be one of the built-in ones.
func objectMeta(m *metav1.ObjectMeta, namespaced bool, nameFn apimachineryvalidation.ValidateNameFunc) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(m, namespaced, nameFn, metaPath)
	return append(errs, kubeFinalizerNames(m.Finalizers, metaPath.Child("finalizers"))...)
}

// objectMetaUpdate validates metadata on update. Name format is not checked
// again: the name is immutable and was checked on create.
func objectMetaUpdate(m, old *metav1.ObjectMeta, namespaced bool) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(m, old, metaPath)
	errs = append(errs, namespaceRule(m.Namespace, namespaced)...)
	errs = append(errs, apimachineryvalidation.ValidateFinalizers(m.Finalizers, metaPath.Child("finalizers"))...)
	return append(errs, kubeFinalizerNames(m.Finalizers, metaPath.Child("finalizers"))...)
}

// templateMeta checks the metadata of an object template (a CronJob's
// Job, a claim template's claim): only labels and annotations count.
func templateMeta(m *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(m.Labels, fldPath.Child("labels"))
	return append(errs, apimachineryvalidation.ValidateAnnotations(m.Annotations, fldPath.Child("annotations"))...)
}

func namespaceRule(ns string, namespaced bool) field.ErrorList {
	switch {
	case namespaced && ns == "":
		return field.ErrorList{field.Required(metaPath.Child("namespace"), "")}
	case !namespaced && ns != "":
		return field.ErrorList{field.Forbidden(metaPath.Child("namespace"), "not allowed on this type")}
	}
	return nil
}

// standardFinalizers are the finalizer names that need no domain prefix.
var standardFinalizers = map[string]bool{
	string(corev1.FinalizerKubernetes): true,
	metav1.FinalizerOrphanDependents:   true,
	metav1.FinalizerDeleteDependents:   true,
}

func kubeFinalizerNames(finalizers []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, f := range finalizers {
		errs = append(errs, kubeFinalizerName(f, fldPath.Index(i))...)
	}
	return errs
}

func kubeFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	if !strings.Contains(name, "/") && !standardFinalizers[name] {
		return field.ErrorList{field.Invalid(fldPath, name, "name is neither a standard finalizer name nor is it fully qualified")}
	}
	return nil
}
