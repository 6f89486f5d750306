package registry

import (
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik/internal/resourcemetrics"
)

var crud = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// Verbs are the verbs every resource supports.
func Verbs() []string { return crud }

// All returns every resource the apiserver serves, in discovery order.
// Each call returns fresh values, so callers may keep and extend them.
func All() []*Resource {
	list := []*Resource{
		{Kind: "Namespace", Resource: "namespaces", Singular: "namespace", ShortNames: []string{"ns"},
			New: func() runtime.Object { return &corev1.Namespace{} }, NewList: func() runtime.Object { return &corev1.NamespaceList{} },
			Subresources: []string{"status", "finalize"}, HasStatus: true,
			Fields: func(o runtime.Object) map[string]string {
				return map[string]string{"status.phase": string(o.(*corev1.Namespace).Status.Phase)}
			}},
		{Kind: "Node", Resource: "nodes", Singular: "node", ShortNames: []string{"no"},
			New: func() runtime.Object { return &corev1.Node{} }, NewList: func() runtime.Object { return &corev1.NodeList{} },
			Subresources: []string{"status"}, HasStatus: true,
			Fields: func(o runtime.Object) map[string]string {
				return map[string]string{"spec.unschedulable": boolString(o.(*corev1.Node).Spec.Unschedulable)}
			}},
		{Kind: "Pod", Resource: "pods", Singular: "pod", Namespaced: true, ShortNames: []string{"po"}, Categories: []string{"all"},
			New: func() runtime.Object { return &corev1.Pod{} }, NewList: func() runtime.Object { return &corev1.PodList{} },
			Subresources: []string{"status", "binding", "eviction", "log", "exec", "attach", "portforward", "proxy", "ephemeralcontainers"}, HasStatus: true,
			Fields: podFields},
		{Kind: "ReplicationController", Resource: "replicationcontrollers", Singular: "replicationcontroller", Namespaced: true,
			ShortNames: []string{"rc"}, Categories: []string{"all"},
			New:          func() runtime.Object { return &corev1.ReplicationController{} },
			NewList:      func() runtime.Object { return &corev1.ReplicationControllerList{} },
			Subresources: []string{"status", "scale"}, HasStatus: true,
			Fields: func(o runtime.Object) map[string]string {
				return map[string]string{"status.replicas": itoa(int64(o.(*corev1.ReplicationController).Status.Replicas))}
			}},
		{Kind: "Event", Resource: "events", Singular: "event", Namespaced: true, ShortNames: []string{"ev"},
			New: func() runtime.Object { return &corev1.Event{} }, NewList: func() runtime.Object { return &corev1.EventList{} },
			Fields: eventFields},
		{Kind: "ConfigMap", Resource: "configmaps", Singular: "configmap", Namespaced: true, ShortNames: []string{"cm"},
			New: func() runtime.Object { return &corev1.ConfigMap{} }, NewList: func() runtime.Object { return &corev1.ConfigMapList{} }},
		{Kind: "Secret", Resource: "secrets", Singular: "secret", Namespaced: true,
			New: func() runtime.Object { return &corev1.Secret{} }, NewList: func() runtime.Object { return &corev1.SecretList{} },
			Fields: func(o runtime.Object) map[string]string {
				return map[string]string{"type": string(o.(*corev1.Secret).Type)}
			}},
		{Kind: "Service", Resource: "services", Singular: "service", Namespaced: true, ShortNames: []string{"svc"}, Categories: []string{"all"},
			New: func() runtime.Object { return &corev1.Service{} }, NewList: func() runtime.Object { return &corev1.ServiceList{} },
			Subresources: []string{"status", "proxy"}, HasStatus: true, NoGeneration: true,
			Fields: func(o runtime.Object) map[string]string {
				s := o.(*corev1.Service)
				return map[string]string{"spec.clusterIP": s.Spec.ClusterIP, "spec.type": string(s.Spec.Type)}
			}},
		{Kind: "Endpoints", Resource: "endpoints", Singular: "endpoints", Namespaced: true, ShortNames: []string{"ep"},
			Warning: "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice",
			New:     func() runtime.Object { return &corev1.Endpoints{} }, NewList: func() runtime.Object { return &corev1.EndpointsList{} }},
		{Kind: "LimitRange", Resource: "limitranges", Singular: "limitrange", Namespaced: true, ShortNames: []string{"limits"},
			New: func() runtime.Object { return &corev1.LimitRange{} }, NewList: func() runtime.Object { return &corev1.LimitRangeList{} }},
		{Kind: "ResourceQuota", Resource: "resourcequotas", Singular: "resourcequota", Namespaced: true, ShortNames: []string{"quota"},
			New:          func() runtime.Object { return &corev1.ResourceQuota{} },
			NewList:      func() runtime.Object { return &corev1.ResourceQuotaList{} },
			Subresources: []string{"status"}, HasStatus: true},
		{Kind: "ServiceAccount", Resource: "serviceaccounts", Singular: "serviceaccount", Namespaced: true, ShortNames: []string{"sa"},
			New:          func() runtime.Object { return &corev1.ServiceAccount{} },
			NewList:      func() runtime.Object { return &corev1.ServiceAccountList{} },
			Subresources: []string{"token"}},

		{Kind: "PersistentVolume", Resource: "persistentvolumes", Singular: "persistentvolume", ShortNames: []string{"pv"},
			New:          func() runtime.Object { return &corev1.PersistentVolume{} },
			NewList:      func() runtime.Object { return &corev1.PersistentVolumeList{} },
			Subresources: []string{"status"}, HasStatus: true, NoGeneration: true,
			Fields: func(o runtime.Object) map[string]string {
				return map[string]string{"name": o.(*corev1.PersistentVolume).Name} // upstream's extra key
			}},
		{Kind: "PersistentVolumeClaim", Resource: "persistentvolumeclaims", Singular: "persistentvolumeclaim", Namespaced: true,
			ShortNames:   []string{"pvc"},
			New:          func() runtime.Object { return &corev1.PersistentVolumeClaim{} },
			NewList:      func() runtime.Object { return &corev1.PersistentVolumeClaimList{} },
			Subresources: []string{"status"}, HasStatus: true, NoGeneration: true,
			Fields: func(o runtime.Object) map[string]string {
				return map[string]string{"name": o.(*corev1.PersistentVolumeClaim).Name}
			}},

		{Group: "apps", Kind: "Deployment", Resource: "deployments", Singular: "deployment", Namespaced: true,
			ShortNames: []string{"deploy"}, Categories: []string{"all"},
			New: func() runtime.Object { return &appsv1.Deployment{} }, NewList: func() runtime.Object { return &appsv1.DeploymentList{} },
			Subresources: []string{"status", "scale"}, HasStatus: true},
		{Group: "apps", Kind: "ReplicaSet", Resource: "replicasets", Singular: "replicaset", Namespaced: true,
			ShortNames: []string{"rs"}, Categories: []string{"all"},
			New: func() runtime.Object { return &appsv1.ReplicaSet{} }, NewList: func() runtime.Object { return &appsv1.ReplicaSetList{} },
			Subresources: []string{"status", "scale"}, HasStatus: true},
		{Group: "apps", Kind: "DaemonSet", Resource: "daemonsets", Singular: "daemonset", Namespaced: true,
			ShortNames: []string{"ds"}, Categories: []string{"all"},
			New: func() runtime.Object { return &appsv1.DaemonSet{} }, NewList: func() runtime.Object { return &appsv1.DaemonSetList{} },
			Subresources: []string{"status"}, HasStatus: true},
		{Group: "apps", Kind: "StatefulSet", Resource: "statefulsets", Singular: "statefulset", Namespaced: true,
			ShortNames: []string{"sts"}, Categories: []string{"all"},
			New: func() runtime.Object { return &appsv1.StatefulSet{} }, NewList: func() runtime.Object { return &appsv1.StatefulSetList{} },
			Subresources: []string{"status", "scale"}, HasStatus: true},
		{Group: "apps", Kind: "ControllerRevision", Resource: "controllerrevisions", Singular: "controllerrevision", Namespaced: true,
			New:     func() runtime.Object { return &appsv1.ControllerRevision{} },
			NewList: func() runtime.Object { return &appsv1.ControllerRevisionList{} }},

		{Group: "batch", Kind: "Job", Resource: "jobs", Singular: "job", Namespaced: true, Categories: []string{"all"},
			New: func() runtime.Object { return &batchv1.Job{} }, NewList: func() runtime.Object { return &batchv1.JobList{} },
			Subresources: []string{"status"}, HasStatus: true},
		{Group: "batch", Kind: "CronJob", Resource: "cronjobs", Singular: "cronjob", Namespaced: true,
			ShortNames: []string{"cj"}, Categories: []string{"all"},
			New: func() runtime.Object { return &batchv1.CronJob{} }, NewList: func() runtime.Object { return &batchv1.CronJobList{} },
			Subresources: []string{"status"}, HasStatus: true},

		{Group: "discovery.k8s.io", Kind: "EndpointSlice", Resource: "endpointslices", Singular: "endpointslice", Namespaced: true,
			New:     func() runtime.Object { return &discoveryv1.EndpointSlice{} },
			NewList: func() runtime.Object { return &discoveryv1.EndpointSliceList{} }},

		{Group: "coordination.k8s.io", Kind: "Lease", Resource: "leases", Singular: "lease", Namespaced: true,
			New: func() runtime.Object { return &coordinationv1.Lease{} }, NewList: func() runtime.Object { return &coordinationv1.LeaseList{} }},

		{Group: "scheduling.k8s.io", Kind: "PriorityClass", Resource: "priorityclasses", Singular: "priorityclass", ShortNames: []string{"pc"},
			New:     func() runtime.Object { return &schedulingv1.PriorityClass{} },
			NewList: func() runtime.Object { return &schedulingv1.PriorityClassList{} }},

		{Group: "policy", Kind: "PodDisruptionBudget", Resource: "poddisruptionbudgets", Singular: "poddisruptionbudget", Namespaced: true,
			ShortNames:   []string{"pdb"},
			New:          func() runtime.Object { return &policyv1.PodDisruptionBudget{} },
			NewList:      func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} },
			Subresources: []string{"status"}, HasStatus: true},

		{Group: "storage.k8s.io", Kind: "StorageClass", Resource: "storageclasses", Singular: "storageclass", ShortNames: []string{"sc"},
			New:     func() runtime.Object { return &storagev1.StorageClass{} },
			NewList: func() runtime.Object { return &storagev1.StorageClassList{} }},

		// What CSI drivers and the kubelet's CSI plugin publish, and what the
		// scheduler's volume plugins read: served and stored, acted on by
		// no minik component (minik has no CSI drivers).
		{Group: "storage.k8s.io", Kind: "CSIDriver", Resource: "csidrivers", Singular: "csidriver",
			New:     func() runtime.Object { return &storagev1.CSIDriver{} },
			NewList: func() runtime.Object { return &storagev1.CSIDriverList{} }},
		{Group: "storage.k8s.io", Kind: "CSINode", Resource: "csinodes", Singular: "csinode",
			New:          func() runtime.Object { return &storagev1.CSINode{} },
			NewList:      func() runtime.Object { return &storagev1.CSINodeList{} },
			Subresources: []string{"status"}, HasStatus: true, NoGeneration: true},
		{Group: "storage.k8s.io", Kind: "CSIStorageCapacity", Resource: "csistoragecapacities", Singular: "csistoragecapacity", Namespaced: true,
			New:     func() runtime.Object { return &storagev1.CSIStorageCapacity{} },
			NewList: func() runtime.Object { return &storagev1.CSIStorageCapacityList{} }},
		{Group: "storage.k8s.io", Kind: "VolumeAttachment", Resource: "volumeattachments", Singular: "volumeattachment",
			New:          func() runtime.Object { return &storagev1.VolumeAttachment{} },
			NewList:      func() runtime.Object { return &storagev1.VolumeAttachmentList{} },
			Subresources: []string{"status"}, HasStatus: true, NoGeneration: true},

		// Dynamic resource allocation (DRA): devices that drivers publish in
		// ResourceSlices, classes of them and the claims pods make. Served
		// and stored for upstream components; minik allocates no devices.
		{Group: "resource.k8s.io", Kind: "DeviceClass", Resource: "deviceclasses", Singular: "deviceclass",
			New:     func() runtime.Object { return &resourcev1.DeviceClass{} },
			NewList: func() runtime.Object { return &resourcev1.DeviceClassList{} }, SpecGeneration: true},
		{Group: "resource.k8s.io", Kind: "DeviceTaintRule", Resource: "devicetaintrules", Singular: "devicetaintrule",
			New:          func() runtime.Object { return &resourcev1.DeviceTaintRule{} },
			NewList:      func() runtime.Object { return &resourcev1.DeviceTaintRuleList{} },
			Subresources: []string{"status"}, HasStatus: true},
		{Group: "resource.k8s.io", Kind: "ResourceClaim", Resource: "resourceclaims", Singular: "resourceclaim", Namespaced: true,
			New:          func() runtime.Object { return &resourcev1.ResourceClaim{} },
			NewList:      func() runtime.Object { return &resourcev1.ResourceClaimList{} },
			Subresources: []string{"status"}, HasStatus: true, NoGeneration: true},
		{Group: "resource.k8s.io", Kind: "ResourceClaimTemplate", Resource: "resourceclaimtemplates", Singular: "resourceclaimtemplate",
			Namespaced: true,
			New:        func() runtime.Object { return &resourcev1.ResourceClaimTemplate{} },
			NewList:    func() runtime.Object { return &resourcev1.ResourceClaimTemplateList{} }},
		{Group: "resource.k8s.io", Kind: "ResourceSlice", Resource: "resourceslices", Singular: "resourceslice",
			New:     func() runtime.Object { return &resourcev1.ResourceSlice{} },
			NewList: func() runtime.Object { return &resourcev1.ResourceSliceList{} }, SpecGeneration: true,
			Fields: resourceSliceFields},

		// What ingress controllers and network policy plugins read: served
		// and stored, acted on by no minik component (minik runs no ingress
		// controller, and its pod network enforces no policies).
		{Group: "networking.k8s.io", Kind: "IngressClass", Resource: "ingressclasses", Singular: "ingressclass",
			New:     func() runtime.Object { return &networkingv1.IngressClass{} },
			NewList: func() runtime.Object { return &networkingv1.IngressClassList{} }, SpecGeneration: true},
		{Group: "networking.k8s.io", Kind: "Ingress", Resource: "ingresses", Singular: "ingress", Namespaced: true,
			ShortNames:   []string{"ing"},
			New:          func() runtime.Object { return &networkingv1.Ingress{} },
			NewList:      func() runtime.Object { return &networkingv1.IngressList{} },
			Subresources: []string{"status"}, HasStatus: true},
		{Group: "networking.k8s.io", Kind: "NetworkPolicy", Resource: "networkpolicies", Singular: "networkpolicy", Namespaced: true,
			ShortNames: []string{"netpol"},
			New:        func() runtime.Object { return &networkingv1.NetworkPolicy{} },
			NewList:    func() runtime.Object { return &networkingv1.NetworkPolicyList{} }, SpecGeneration: true},

		{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Resource: "clusterroles", Singular: "clusterrole",
			New: func() runtime.Object { return &rbacv1.ClusterRole{} }, NewList: func() runtime.Object { return &rbacv1.ClusterRoleList{} }},
		{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding", Resource: "clusterrolebindings", Singular: "clusterrolebinding",
			New:     func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
			NewList: func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} }},
		{Group: "rbac.authorization.k8s.io", Kind: "Role", Resource: "roles", Singular: "role", Namespaced: true,
			New: func() runtime.Object { return &rbacv1.Role{} }, NewList: func() runtime.Object { return &rbacv1.RoleList{} }},
		{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding", Resource: "rolebindings", Singular: "rolebinding", Namespaced: true,
			New: func() runtime.Object { return &rbacv1.RoleBinding{} }, NewList: func() runtime.Object { return &rbacv1.RoleBindingList{} }},

		{Group: "authentication.k8s.io", Kind: "TokenReview", Resource: "tokenreviews", Singular: "tokenreview",
			New: func() runtime.Object { return &authenticationv1.TokenReview{} }, Virtual: true, Verbs: []string{"create"}},
		{Group: "authentication.k8s.io", Kind: "SelfSubjectReview", Resource: "selfsubjectreviews", Singular: "selfsubjectreview",
			New: func() runtime.Object { return &authenticationv1.SelfSubjectReview{} }, Virtual: true, Verbs: []string{"create"}},
		{Group: "authorization.k8s.io", Kind: "SelfSubjectAccessReview", Resource: "selfsubjectaccessreviews", Singular: "selfsubjectaccessreview",
			New: func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} }, Virtual: true, Verbs: []string{"create"}},
		{Group: "authorization.k8s.io", Kind: "SelfSubjectRulesReview", Resource: "selfsubjectrulesreviews", Singular: "selfsubjectrulesreview",
			New: func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} }, Virtual: true, Verbs: []string{"create"}},
		{Group: "authorization.k8s.io", Kind: "SubjectAccessReview", Resource: "subjectaccessreviews", Singular: "subjectaccessreview",
			New: func() runtime.Object { return &authorizationv1.SubjectAccessReview{} }, Virtual: true, Verbs: []string{"create"}},
		{Group: "authorization.k8s.io", Kind: "LocalSubjectAccessReview", Resource: "localsubjectaccessreviews", Singular: "localsubjectaccessreview",
			Namespaced: true, New: func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} }, Virtual: true, Verbs: []string{"create"}},

		// Admission webhooks: the apiserver calls them on the writes their
		// rules match (admission_webhooks.go).
		{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration", Resource: "mutatingwebhookconfigurations",
			Singular: "mutatingwebhookconfiguration", Categories: []string{"api-extensions"},
			New:            func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
			NewList:        func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} },
			SpecGeneration: true},
		{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration", Resource: "validatingwebhookconfigurations",
			Singular: "validatingwebhookconfiguration", Categories: []string{"api-extensions"},
			New:            func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
			NewList:        func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} },
			SpecGeneration: true},

		{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Resource: "customresourcedefinitions",
			Singular: "customresourcedefinition", ShortNames: []string{"crd", "crds"}, Categories: []string{"api-extensions"},
			New:          func() runtime.Object { return &apiextv1.CustomResourceDefinition{} },
			NewList:      func() runtime.Object { return &apiextv1.CustomResourceDefinitionList{} },
			Subresources: []string{"status"}, HasStatus: true},

		{Group: "events.k8s.io", Kind: "Event", Resource: "events", Singular: "event", Namespaced: true, ShortNames: []string{"ev"},
			New: func() runtime.Object { return &eventsv1.Event{} }, NewList: func() runtime.Object { return &eventsv1.EventList{} },
			StorageOf: "events"},

		// HorizontalPodAutoscalers are stored as autoscaling/v2 (the
		// preferred version, listed first) and served as v1 too, converted.
		{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler", Resource: "horizontalpodautoscalers",
			Singular: "horizontalpodautoscaler", Namespaced: true, ShortNames: []string{"hpa"}, Categories: []string{"all"},
			New:          func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
			NewList:      func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscalerList{} },
			Subresources: []string{"status"}, HasStatus: true},
		{Group: "autoscaling", Version: "v1", Kind: "HorizontalPodAutoscaler", Resource: "horizontalpodautoscalers",
			Singular: "horizontalpodautoscaler", Namespaced: true, ShortNames: []string{"hpa"}, Categories: []string{"all"},
			New:          func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscaler{} },
			NewList:      func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscalerList{} },
			Subresources: []string{"status"}, HasStatus: true, StorageOf: "horizontalpodautoscalers.autoscaling"},

		// The resource metrics API, computed from the kubelets' stats on
		// each request, as metrics-server serves it.
		{Group: "metrics.k8s.io", Version: "v1beta1", Kind: "NodeMetrics", Resource: "nodes", Singular: "",
			New:     func() runtime.Object { return &resourcemetrics.NodeMetrics{} },
			NewList: func() runtime.Object { return &resourcemetrics.NodeMetricsList{} }, Computed: true, Verbs: []string{"get", "list"}},
		{Group: "metrics.k8s.io", Version: "v1beta1", Kind: "PodMetrics", Resource: "pods", Singular: "", Namespaced: true,
			New:     func() runtime.Object { return &resourcemetrics.PodMetrics{} },
			NewList: func() runtime.Object { return &resourcemetrics.PodMetricsList{} }, Computed: true, Verbs: []string{"get", "list"}},
	}
	for _, r := range list {
		if r.Version == "" {
			r.Version = "v1"
		}
	}
	return list
}

func podFields(o runtime.Object) map[string]string {
	p := o.(*corev1.Pod)
	return map[string]string{
		"spec.nodeName":            p.Spec.NodeName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.serviceAccountName":  p.Spec.ServiceAccountName,
		"spec.hostNetwork":         boolString(p.Spec.HostNetwork),
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             p.Status.PodIP,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
}

// resourceSliceFields are upstream's: a kubelet lists its node's slices.
func resourceSliceFields(o runtime.Object) map[string]string {
	s := o.(*resourcev1.ResourceSlice)
	node := ""
	if s.Spec.NodeName != nil {
		node = *s.Spec.NodeName
	}
	return map[string]string{
		resourcev1.ResourceSliceSelectorNodeName: node,
		resourcev1.ResourceSliceSelectorDriver:   s.Spec.Driver,
		resourcev1.ResourceSliceSelectorPoolName: s.Spec.Pool.Name,
	}
}

func eventFields(o runtime.Object) map[string]string {
	e := o.(*corev1.Event)
	return map[string]string{
		"involvedObject.kind":            e.InvolvedObject.Kind,
		"involvedObject.namespace":       e.InvolvedObject.Namespace,
		"involvedObject.name":            e.InvolvedObject.Name,
		"involvedObject.uid":             string(e.InvolvedObject.UID),
		"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         e.Source.Component,
		"type":                           e.Type,
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func itoa(i int64) string {
	return strconv.FormatInt(i, 10)
}
