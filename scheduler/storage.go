package scheduler

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/client"
	"minik/client/informer"
	"minik/scheduler/plugins/volumebinding"
	"minik/scheduler/plugins/volumerestrictions"
	"minik/scheduler/queue"
)

// api is the scheduler's client as the writing plugins see it: it binds
// pods and patches claims (volume.kubernetes.io/selected-node).
type api struct{ *client.Client }

// PatchClaim implements volumebinding.ClaimPatcher.
func (a api) PatchClaim(ctx context.Context, namespace, name string, patch []byte) error {
	_, err := a.PersistentVolumeClaims().Patch(ctx, namespace, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}

// storageInformers back framework.StorageLister with the scheduler's
// watches of claims, volumes and classes.
type storageInformers struct {
	claims  *informer.Informer[corev1.PersistentVolumeClaim]
	volumes *informer.Informer[corev1.PersistentVolume]
	classes *informer.Informer[storagev1.StorageClass]
}

func newStorageInformers(c *client.Client, cfg informer.Config) *storageInformers {
	return &storageInformers{claims: informer.New(c.PersistentVolumeClaims(), cfg),
		volumes: informer.New(c.PersistentVolumes(), cfg), classes: informer.New(c.StorageClasses(), cfg)}
}

// requeueOn moves the pods that the volume plugins rejected back to the
// queue when a claim, volume or class changes.
func (s *storageInformers) requeueOn(q *queue.Queue) {
	move := func() { q.MoveAllToActiveOrBackoff(queue.StorageChange, volumebinding.Name, volumerestrictions.Name) }
	s.claims.AddHandler(informer.Handler[corev1.PersistentVolumeClaim]{OnAdd: func(*corev1.PersistentVolumeClaim) { move() },
		OnUpdate: func(_, _ *corev1.PersistentVolumeClaim) { move() }, OnDelete: func(*corev1.PersistentVolumeClaim) { move() }})
	s.volumes.AddHandler(informer.Handler[corev1.PersistentVolume]{OnAdd: func(*corev1.PersistentVolume) { move() },
		OnUpdate: func(_, _ *corev1.PersistentVolume) { move() }})
	s.classes.AddHandler(informer.Handler[storagev1.StorageClass]{OnAdd: func(*storagev1.StorageClass) { move() },
		OnUpdate: func(_, _ *storagev1.StorageClass) { move() }})
}

func (s *storageInformers) Claim(ns, name string) *corev1.PersistentVolumeClaim {
	c, _ := s.claims.Store().Get(ns, name)
	return c
}

func (s *storageInformers) Volume(name string) *corev1.PersistentVolume {
	v, _ := s.volumes.Store().Get("", name)
	return v
}

func (s *storageInformers) Volumes() []*corev1.PersistentVolume {
	out := s.volumes.Store().List()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (s *storageInformers) Class(name string) *storagev1.StorageClass {
	c, _ := s.classes.Store().Get("", name)
	return c
}
