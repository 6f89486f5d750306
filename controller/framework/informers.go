package framework

import (
	"context"
	"log/slog"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/client/informer"
)

// ControllerUIDIndex indexes objects by the UID of their controller
// (the ownerReference with controller=true); orphans are under "".
const ControllerUIDIndex = "controllerUID"

// OwnerUIDIndex indexes objects by the UID of every owner they name.
const OwnerUIDIndex = "ownerUID"

// Informers are the caches every controller shares: one list-watch per
// resource, however many controllers read it. Register handlers, then
// Start once.
type Informers struct {
	Client                 *client.Client
	Pods                   *informer.Informer[corev1.Pod]
	Nodes                  *informer.Informer[corev1.Node]
	Namespaces             *informer.Informer[corev1.Namespace]
	ReplicationControllers *informer.Informer[corev1.ReplicationController]
	ReplicaSets            *informer.Informer[appsv1.ReplicaSet]
	Deployments            *informer.Informer[appsv1.Deployment]
	DaemonSets             *informer.Informer[appsv1.DaemonSet]
	Jobs                   *informer.Informer[batchv1.Job]
	StatefulSets           *informer.Informer[appsv1.StatefulSet]
	ControllerRevisions    *informer.Informer[appsv1.ControllerRevision]
	CronJobs               *informer.Informer[batchv1.CronJob]
	PodDisruptionBudgets   *informer.Informer[policyv1.PodDisruptionBudget]
	// Leases holds every Lease: the node heartbeats in kube-node-lease
	// for the node lifecycle, the others for the garbage collector.
	Leases     *informer.Informer[coordinationv1.Lease]
	ConfigMaps *informer.Informer[corev1.ConfigMap]
	Secrets    *informer.Informer[corev1.Secret]
	// ResourceQuotas and HorizontalPodAutoscalers feed their controllers
	// and the garbage collector.
	ResourceQuotas           *informer.Informer[corev1.ResourceQuota]
	HorizontalPodAutoscalers *informer.Informer[autoscalingv2.HorizontalPodAutoscaler]
	// ServiceAccounts is here for the garbage collector.
	ServiceAccounts *informer.Informer[corev1.ServiceAccount]
	// ClusterRoles feeds the cluster role aggregation.
	ClusterRoles *informer.Informer[rbacv1.ClusterRole]
	// PersistentVolumes, PersistentVolumeClaims and StorageClasses feed
	// the volume controllers (and StatefulSets' claims).
	PersistentVolumes      *informer.Informer[corev1.PersistentVolume]
	PersistentVolumeClaims *informer.Informer[corev1.PersistentVolumeClaim]
	StorageClasses         *informer.Informer[storagev1.StorageClass]
	// Services, Endpoints and EndpointSlices are nil until
	// AddServiceInformers makes them (when the apiserver serves them:
	// see ServedResources). Services are indexed by ServiceSelectorIndex,
	// EndpointSlices by ServiceNameIndex.
	Services       *informer.Informer[corev1.Service]
	Endpoints      *informer.Informer[corev1.Endpoints]
	EndpointSlices *informer.Informer[discoveryv1.EndpointSlice]

	cfg informer.Config
}

// NewInformers creates (but does not start) the shared informers, with the
// controller-UID and owner-UID indexes on the ones that hold dependents.
func NewInformers(c *client.Client, log *slog.Logger) *Informers {
	cfg := informer.Config{Logger: log}
	inf := &Informers{
		Client:                   c,
		Pods:                     informer.New(c.Pods(), cfg),
		Nodes:                    informer.New(c.Nodes(), cfg),
		Namespaces:               informer.New(c.Namespaces(), cfg),
		ReplicationControllers:   informer.New(c.ReplicationControllers(), cfg),
		ReplicaSets:              informer.New(c.ReplicaSets(), cfg),
		Deployments:              informer.New(c.Deployments(), cfg),
		DaemonSets:               informer.New(c.DaemonSets(), cfg),
		Jobs:                     informer.New(c.Jobs(), cfg),
		StatefulSets:             informer.New(c.StatefulSets(), cfg),
		ControllerRevisions:      informer.New(c.ControllerRevisions(), cfg),
		CronJobs:                 informer.New(c.CronJobs(), cfg),
		PodDisruptionBudgets:     informer.New(c.PodDisruptionBudgets(), cfg),
		Leases:                   informer.New(c.Leases(), cfg),
		ConfigMaps:               informer.New(c.ConfigMaps(), cfg),
		Secrets:                  informer.New(c.Secrets(), cfg),
		ServiceAccounts:          informer.New(c.ServiceAccounts(), cfg),
		ClusterRoles:             informer.New(client.For[rbacv1.ClusterRole](c, client.ClusterRoles), cfg),
		PersistentVolumes:        informer.New(c.PersistentVolumes(), cfg),
		PersistentVolumeClaims:   informer.New(c.PersistentVolumeClaims(), cfg),
		StorageClasses:           informer.New(c.StorageClasses(), cfg),
		ResourceQuotas:           informer.New(client.For[corev1.ResourceQuota](c, client.ResourceQuotas), cfg),
		HorizontalPodAutoscalers: informer.New(client.For[autoscalingv2.HorizontalPodAutoscaler](c, client.HorizontalPodAutoscalers), cfg),
		cfg:                      cfg,
	}
	addOwnerIndexes(inf.Pods)
	addOwnerIndexes(inf.ReplicationControllers)
	addOwnerIndexes(inf.ReplicaSets)
	addOwnerIndexes(inf.Deployments)
	addOwnerIndexes(inf.DaemonSets)
	addOwnerIndexes(inf.Jobs)
	addOwnerIndexes(inf.StatefulSets)
	addOwnerIndexes(inf.ControllerRevisions)
	addOwnerIndexes(inf.CronJobs)
	addOwnerIndexes(inf.PodDisruptionBudgets)
	addOwnerIndexes(inf.Leases)
	addOwnerIndexes(inf.ConfigMaps)
	addOwnerIndexes(inf.Secrets)
	addOwnerIndexes(inf.ServiceAccounts)
	addOwnerIndexes(inf.Namespaces)
	addOwnerIndexes(inf.ClusterRoles)
	addOwnerIndexes(inf.PersistentVolumes)
	addOwnerIndexes(inf.PersistentVolumeClaims)
	addOwnerIndexes(inf.StorageClasses)
	addOwnerIndexes(inf.ResourceQuotas)
	addOwnerIndexes(inf.HorizontalPodAutoscalers)
	return inf
}

func addOwnerIndexes[T any](inf *informer.Informer[T]) {
	_ = inf.AddIndex(ControllerUIDIndex, func(obj *T) []string {
		if ref := metav1.GetControllerOfNoCopy(any(obj).(metav1.Object)); ref != nil {
			return []string{string(ref.UID)}
		}
		return []string{""}
	})
	_ = inf.AddIndex(OwnerUIDIndex, func(obj *T) []string {
		refs := any(obj).(metav1.Object).GetOwnerReferences()
		out := make([]string, 0, len(refs))
		for _, r := range refs {
			out = append(out, string(r.UID))
		}
		return out
	})
}

type runnable interface {
	Run(ctx context.Context) error
	Synced() <-chan struct{}
}

func (inf *Informers) all() []runnable {
	all := []runnable{inf.Pods, inf.Nodes, inf.Namespaces, inf.ReplicationControllers, inf.ReplicaSets,
		inf.Deployments, inf.DaemonSets, inf.Jobs, inf.PodDisruptionBudgets, inf.Leases, inf.ConfigMaps,
		inf.Secrets, inf.ServiceAccounts, inf.ClusterRoles, inf.PersistentVolumes, inf.PersistentVolumeClaims, inf.StorageClasses,
		inf.StatefulSets, inf.ControllerRevisions, inf.CronJobs, inf.ResourceQuotas, inf.HorizontalPodAutoscalers}
	if inf.Services != nil {
		all = append(all, inf.Services, inf.Endpoints, inf.EndpointSlices)
	}
	return all
}

// Start runs every informer until ctx ends and returns a channel that is
// closed once all have synced.
func (inf *Informers) Start(ctx context.Context, wg *sync.WaitGroup) <-chan struct{} {
	all := inf.all()
	for _, r := range all {
		wg.Go(func() { _ = r.Run(ctx) })
	}
	synced := make(chan struct{})
	go func() {
		for _, r := range all {
			select {
			case <-r.Synced():
			case <-ctx.Done():
				return
			}
		}
		close(synced)
	}()
	return synced
}
