package framework

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik/client"
	"minik/client/informer"
)

// Resource is a type-erased view of one informer, for the controller
// that treats every kind alike, the garbage collector (namespace
// deletion finds its kinds through discovery, and lists them live).
type Resource struct {
	API client.Resource
	// GVK is the kind of its objects, as ownerReferences name it.
	GVK schema.GroupVersionKind
	// Get reads an object from the cache.
	Get func(namespace, name string) (metav1.Object, bool)
	// ByIndex reads the cache through an index.
	ByIndex func(index, value string) []metav1.Object
	// List reads every cached object.
	List func() []metav1.Object
	// AddHandler registers handlers on the informer (before Start);
	// onAddOrUpdate gets the object before the change too (nil for an add).
	AddHandler func(onAddOrUpdate func(old, obj metav1.Object), onDelete func(obj metav1.Object))
}

// NewResource wraps inf, whose objects are of kind kind of api.
func NewResource[T any](inf *informer.Informer[T], api client.Resource, kind string) *Resource {
	conv := func(objs []*T) []metav1.Object {
		out := make([]metav1.Object, len(objs))
		for i, o := range objs {
			out[i] = any(o).(metav1.Object)
		}
		return out
	}
	return &Resource{
		API: api,
		GVK: api.GroupVersion().WithKind(kind),
		Get: func(ns, name string) (metav1.Object, bool) {
			o, ok := inf.Store().Get(ns, name)
			if !ok {
				return nil, false
			}
			return any(o).(metav1.Object), true
		},
		ByIndex: func(index, value string) []metav1.Object { return conv(inf.Store().ByIndex(index, value)) },
		List:    func() []metav1.Object { return conv(inf.Store().List()) },
		AddHandler: func(upsert func(old, obj metav1.Object), del func(metav1.Object)) {
			inf.AddHandler(informer.Handler[T]{
				OnAdd:    func(o *T) { upsert(nil, any(o).(metav1.Object)) },
				OnUpdate: func(old, o *T) { upsert(any(old).(metav1.Object), any(o).(metav1.Object)) },
				OnDelete: func(o *T) { del(any(o).(metav1.Object)) },
			})
		},
	}
}

// Resources returns a view of every shared informer that holds every
// object of its kind, for the collector: any object can own or depend on others. Other kinds it
// follows through MetadataResources.
func (inf *Informers) Resources() []*Resource {
	out := []*Resource{
		NewResource(inf.Pods, client.Pods, "Pod"),
		NewResource(inf.Nodes, client.Nodes, "Node"),
		NewResource(inf.ReplicationControllers, client.ReplicationControllers, "ReplicationController"),
		NewResource(inf.ReplicaSets, client.ReplicaSets, "ReplicaSet"),
		NewResource(inf.Deployments, client.Deployments, "Deployment"),
		NewResource(inf.DaemonSets, client.DaemonSets, "DaemonSet"),
		NewResource(inf.Jobs, client.Jobs, "Job"),
		NewResource(inf.PodDisruptionBudgets, client.PodDisruptionBudgets, "PodDisruptionBudget"),
		NewResource(inf.ConfigMaps, client.ConfigMaps, "ConfigMap"),
		NewResource(inf.Secrets, client.Secrets, "Secret"),
		NewResource(inf.ServiceAccounts, client.ServiceAccounts, "ServiceAccount"),
		NewResource(inf.StatefulSets, client.StatefulSets, "StatefulSet"),
		NewResource(inf.ControllerRevisions, client.ControllerRevisions, "ControllerRevision"),
		NewResource(inf.CronJobs, client.CronJobs, "CronJob"),
		NewResource(inf.Namespaces, client.Namespaces, "Namespace"),
		NewResource(inf.ClusterRoles, client.ClusterRoles, "ClusterRole"),
		NewResource(inf.PersistentVolumes, client.PersistentVolumes, "PersistentVolume"),
		NewResource(inf.StorageClasses, client.StorageClasses, "StorageClass"),
		NewResource(inf.Leases, client.Leases, "Lease"),
		NewResource(inf.ResourceQuotas, client.ResourceQuotas, "ResourceQuota"),
		NewResource(inf.HorizontalPodAutoscalers, client.HorizontalPodAutoscalers, "HorizontalPodAutoscaler"),
	}
	// Claims: a StatefulSet's retention policy makes the set or a pod
	// their owner, and the collector deletes them after it.
	out = append(out, NewResource(inf.PersistentVolumeClaims, client.PersistentVolumeClaims, "PersistentVolumeClaim"))
	if inf.Services != nil {
		out = append(out,
			NewResource(inf.Services, ServicesResource, "Service"),
			NewResource(inf.Endpoints, EndpointsResource, "Endpoints"),
			NewResource(inf.EndpointSlices, EndpointSlicesResource, "EndpointSlice"))
	}
	return out
}
