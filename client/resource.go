package client

import (
	"net/url"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource names a collection of the API, e.g. apps/v1 deployments, and says
// whether its objects live in namespaces. It is all the client needs to build
// URLs.
type Resource struct {
	Group      string // "" for the core group
	Version    string
	Resource   string // plural, lower case
	Namespaced bool
}

// The built-in resources minik serves.
var (
	Pods                   = Resource{Version: "v1", Resource: "pods", Namespaced: true}
	Nodes                  = Resource{Version: "v1", Resource: "nodes"}
	Namespaces             = Resource{Version: "v1", Resource: "namespaces"}
	Events                 = Resource{Version: "v1", Resource: "events", Namespaced: true}
	ConfigMaps             = Resource{Version: "v1", Resource: "configmaps", Namespaced: true}
	Secrets                = Resource{Version: "v1", Resource: "secrets", Namespaced: true}
	ServiceAccounts        = Resource{Version: "v1", Resource: "serviceaccounts", Namespaced: true}
	ReplicationControllers = Resource{Version: "v1", Resource: "replicationcontrollers", Namespaced: true}
	Leases                 = Resource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases", Namespaced: true}
	ReplicaSets            = Resource{Group: "apps", Version: "v1", Resource: "replicasets", Namespaced: true}
	Deployments            = Resource{Group: "apps", Version: "v1", Resource: "deployments", Namespaced: true}
	DaemonSets             = Resource{Group: "apps", Version: "v1", Resource: "daemonsets", Namespaced: true}
	Jobs                   = Resource{Group: "batch", Version: "v1", Resource: "jobs", Namespaced: true}
	StatefulSets           = Resource{Group: "apps", Version: "v1", Resource: "statefulsets", Namespaced: true}
	ControllerRevisions    = Resource{Group: "apps", Version: "v1", Resource: "controllerrevisions", Namespaced: true}
	CronJobs               = Resource{Group: "batch", Version: "v1", Resource: "cronjobs", Namespaced: true}
	PriorityClasses        = Resource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"}
	PodDisruptionBudgets   = Resource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets", Namespaced: true}
	ClusterRoles           = Resource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	ClusterRoleBindings    = Resource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
	Roles                  = Resource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles", Namespaced: true}
	RoleBindings           = Resource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings", Namespaced: true}
	PersistentVolumes      = Resource{Version: "v1", Resource: "persistentvolumes"}
	PersistentVolumeClaims = Resource{Version: "v1", Resource: "persistentvolumeclaims", Namespaced: true}
	StorageClasses         = Resource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}
	Services               = Resource{Version: "v1", Resource: "services", Namespaced: true}
	ResourceQuotas         = Resource{Version: "v1", Resource: "resourcequotas", Namespaced: true}
	EndpointSlices         = Resource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices", Namespaced: true}
	// HorizontalPodAutoscalers are autoscaling/v2, their stored version.
	HorizontalPodAutoscalers = Resource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers", Namespaced: true}
)

// GroupVersion returns the resource's API group and version.
func (r Resource) GroupVersion() schema.GroupVersion {
	return schema.GroupVersion{Group: r.Group, Version: r.Version}
}

// GroupResource returns the resource's group and name, as errors carry them.
func (r Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Resource}
}

// String returns "resource.group/version", e.g. "deployments.apps/v1".
func (r Resource) String() string {
	return r.GroupResource().String() + "/" + r.Version
}

// Path returns the URL path of the collection in namespace ns, or of the
// object name in it, or of a subresource of that object:
//
//	/api/v1/namespaces/NS/pods/NAME/binding
//	/apis/apps/v1/deployments   (all namespaces, when ns is "")
//
// ns is ignored for cluster-scoped resources.
func (r Resource) Path(ns, name string, subresource ...string) string {
	var b strings.Builder
	if r.Group == "" {
		b.WriteString("/api/" + r.Version)
	} else {
		b.WriteString("/apis/" + r.Group + "/" + r.Version)
	}
	if r.Namespaced && ns != "" {
		b.WriteString("/namespaces/" + url.PathEscape(ns))
	}
	b.WriteString("/" + r.Resource)
	if name != "" {
		b.WriteString("/" + url.PathEscape(name))
		for _, s := range subresource {
			if s != "" {
				b.WriteString("/" + s)
			}
		}
	}
	return b.String()
}

// Typed clients for the built-in resources, so callers cannot pair a type
// with the wrong resource.

// Pods returns a client for core/v1 pods.
func (c *Client) Pods() *Typed[corev1.Pod] { return For[corev1.Pod](c, Pods) }

// Nodes returns a client for core/v1 nodes.
func (c *Client) Nodes() *Typed[corev1.Node] { return For[corev1.Node](c, Nodes) }

// Namespaces returns a client for core/v1 namespaces.
func (c *Client) Namespaces() *Typed[corev1.Namespace] {
	return For[corev1.Namespace](c, Namespaces)
}

// Events returns a client for core/v1 events.
func (c *Client) Events() *Typed[corev1.Event] { return For[corev1.Event](c, Events) }

// ConfigMaps returns a client for core/v1 configmaps.
func (c *Client) ConfigMaps() *Typed[corev1.ConfigMap] {
	return For[corev1.ConfigMap](c, ConfigMaps)
}

// Secrets returns a client for core/v1 secrets.
func (c *Client) Secrets() *Typed[corev1.Secret] { return For[corev1.Secret](c, Secrets) }

// ServiceAccounts returns a client for core/v1 serviceaccounts.
func (c *Client) ServiceAccounts() *Typed[corev1.ServiceAccount] {
	return For[corev1.ServiceAccount](c, ServiceAccounts)
}

// ReplicationControllers returns a client for core/v1 replicationcontrollers.
func (c *Client) ReplicationControllers() *Typed[corev1.ReplicationController] {
	return For[corev1.ReplicationController](c, ReplicationControllers)
}

// Leases returns a client for coordination.k8s.io/v1 leases.
func (c *Client) Leases() *Typed[coordinationv1.Lease] {
	return For[coordinationv1.Lease](c, Leases)
}

// ReplicaSets returns a client for apps/v1 replicasets.
func (c *Client) ReplicaSets() *Typed[appsv1.ReplicaSet] {
	return For[appsv1.ReplicaSet](c, ReplicaSets)
}

// Deployments returns a client for apps/v1 deployments.
func (c *Client) Deployments() *Typed[appsv1.Deployment] {
	return For[appsv1.Deployment](c, Deployments)
}

// DaemonSets returns a client for apps/v1 daemonsets.
func (c *Client) DaemonSets() *Typed[appsv1.DaemonSet] {
	return For[appsv1.DaemonSet](c, DaemonSets)
}

// Jobs returns a client for batch/v1 jobs.
func (c *Client) Jobs() *Typed[batchv1.Job] { return For[batchv1.Job](c, Jobs) }

// StatefulSets returns a client for apps/v1 statefulsets.
func (c *Client) StatefulSets() *Typed[appsv1.StatefulSet] {
	return For[appsv1.StatefulSet](c, StatefulSets)
}

// ControllerRevisions returns a client for apps/v1 controllerrevisions.
func (c *Client) ControllerRevisions() *Typed[appsv1.ControllerRevision] {
	return For[appsv1.ControllerRevision](c, ControllerRevisions)
}

// CronJobs returns a client for batch/v1 cronjobs.
func (c *Client) CronJobs() *Typed[batchv1.CronJob] { return For[batchv1.CronJob](c, CronJobs) }

// PriorityClasses returns a client for scheduling.k8s.io/v1 priorityclasses.
func (c *Client) PriorityClasses() *Typed[schedulingv1.PriorityClass] {
	return For[schedulingv1.PriorityClass](c, PriorityClasses)
}

// PodDisruptionBudgets returns a client for policy/v1 poddisruptionbudgets.
func (c *Client) PodDisruptionBudgets() *Typed[policyv1.PodDisruptionBudget] {
	return For[policyv1.PodDisruptionBudget](c, PodDisruptionBudgets)
}

// PersistentVolumes returns a client for core/v1 persistentvolumes.
func (c *Client) PersistentVolumes() *Typed[corev1.PersistentVolume] {
	return For[corev1.PersistentVolume](c, PersistentVolumes)
}

// PersistentVolumeClaims returns a client for core/v1 persistentvolumeclaims.
func (c *Client) PersistentVolumeClaims() *Typed[corev1.PersistentVolumeClaim] {
	return For[corev1.PersistentVolumeClaim](c, PersistentVolumeClaims)
}

// StorageClasses returns a client for storage.k8s.io/v1 storageclasses.
func (c *Client) StorageClasses() *Typed[storagev1.StorageClass] {
	return For[storagev1.StorageClass](c, StorageClasses)
}
