package framework

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// StorageLister reads the claims, volumes and classes that the volume
// plugins check a pod's volumes against. The scheduler backs it with its
// informers (as upstream's VolumeBinding reads listers, not the snapshot);
// `minik explain` and tests with StaticStorage.
type StorageLister interface {
	// Claim returns a claim, or nil.
	Claim(namespace, name string) *corev1.PersistentVolumeClaim
	// Volume returns a volume, or nil.
	Volume(name string) *corev1.PersistentVolume
	// Volumes returns every volume, sorted by name.
	Volumes() []*corev1.PersistentVolume
	// Class returns a StorageClass, or nil.
	Class(name string) *storagev1.StorageClass
}

// PreBindPlugin acts for a pod once a node is chosen, before Bind: the
// volume binder records the node on the pod's WaitForFirstConsumer
// claims. Like Bind it does IO.
type PreBindPlugin interface {
	Plugin
	PreBind(ctx context.Context, state *CycleState, pod *corev1.Pod, nodeName string) *Status
}

// RunPreBind runs the PreBind plugins in order; the first failure stops.
// It reads the pod's cycle state, which nothing writes after filtering.
func (f *Framework) RunPreBind(ctx context.Context, state *CycleState, pod *corev1.Pod, nodeName string) *Status {
	for _, pl := range f.PreBind {
		if state.FilterSkipped(pl.Name()) {
			continue
		}
		if st := pl.PreBind(ctx, state, pod, nodeName); !st.IsSuccess() {
			return st.WithPlugin(pl.Name())
		}
	}
	return nil
}

// StaticStorage is a StorageLister over fixed objects.
type StaticStorage struct {
	claims  map[string]*corev1.PersistentVolumeClaim
	volumes map[string]*corev1.PersistentVolume
	classes map[string]*storagev1.StorageClass
}

// NewStaticStorage returns a StorageLister over the given objects.
func NewStaticStorage(claims []*corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, classes []*storagev1.StorageClass) *StaticStorage {
	s := &StaticStorage{claims: map[string]*corev1.PersistentVolumeClaim{}, volumes: map[string]*corev1.PersistentVolume{},
		classes: map[string]*storagev1.StorageClass{}}
	for _, c := range claims {
		s.claims[c.Namespace+"/"+c.Name] = c
	}
	for _, v := range volumes {
		s.volumes[v.Name] = v
	}
	for _, c := range classes {
		s.classes[c.Name] = c
	}
	return s
}

// Claim implements StorageLister.
func (s *StaticStorage) Claim(ns, name string) *corev1.PersistentVolumeClaim {
	return s.claims[ns+"/"+name]
}

// Volume implements StorageLister.
func (s *StaticStorage) Volume(name string) *corev1.PersistentVolume { return s.volumes[name] }

// Volumes implements StorageLister.
func (s *StaticStorage) Volumes() []*corev1.PersistentVolume {
	out := make([]*corev1.PersistentVolume, 0, len(s.volumes))
	for _, v := range s.volumes {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Class implements StorageLister.
func (s *StaticStorage) Class(name string) *storagev1.StorageClass { return s.classes[name] }
