package apiserver

import (
	"context"
	"errors"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik/internal/volumeutil"
)

// admitStorageCreate runs upstream's two storage admission plugins on a
// new claim or volume: DefaultStorageClass gives a claim without a class
// the default one, and StorageObjectInUseProtection adds the protection
// finalizer. Both start in phase Pending.
func (s *Server) admitStorageCreate(ctx context.Context, obj runtime.Object) error {
	switch o := obj.(type) {
	case *corev1.PersistentVolumeClaim:
		if o.Spec.StorageClassName == nil && o.Annotations[corev1.BetaStorageClassAnnotation] == "" {
			def, err := s.defaultStorageClass(ctx)
			if err != nil {
				return err
			}
			if def != nil {
				o.Spec.StorageClassName = &def.Name
			}
		}
		addFinalizer(&o.ObjectMeta, volumeutil.PVCProtectionFinalizer)
		o.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
	case *corev1.PersistentVolume:
		addFinalizer(&o.ObjectMeta, volumeutil.PVProtectionFinalizer)
		now := metav1.NewTime(time.Now().Truncate(time.Second))
		o.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending, LastPhaseTransitionTime: &now}
	}
	return nil
}

// admitClaimResize is upstream's PersistentVolumeClaimResize plugin: a
// claim's storage request may grow only once it is bound, and only when
// its storage class (the same before and after) sets
// allowVolumeExpansion. The default local-path class does not: a
// directory on a node has no size to grow.
func (s *Server) admitClaimResize(ctx context.Context, h *resourceHandler, pvc, old *corev1.PersistentVolumeClaim) error {
	newSize, oldSize := pvc.Spec.Resources.Requests[corev1.ResourceStorage], old.Spec.Resources.Requests[corev1.ResourceStorage]
	if newSize.Cmp(oldSize) <= 0 {
		return nil
	}
	if old.Status.Phase != corev1.ClaimBound {
		return apierrors.NewForbidden(h.res.GroupResource(), pvc.Name, errors.New("Only bound persistent volume claims can be expanded"))
	}
	allowed, err := s.classAllowsExpansion(ctx, volumeutil.ClaimClass(pvc), volumeutil.ClaimClass(old))
	if err != nil {
		return err
	}
	if !allowed {
		return apierrors.NewForbidden(h.res.GroupResource(), pvc.Name,
			errors.New("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"))
	}
	return nil
}

// classAllowsExpansion reports whether a claim of class (formerly
// oldClass) may grow: both name one existing class that allows it.
func (s *Server) classAllowsExpansion(ctx context.Context, class, oldClass string) (bool, error) {
	if class == "" || class != oldClass {
		return false, nil
	}
	obj, err := s.handlers["storage.k8s.io/v1/storageclasses"].store.Get(ctx, "", class)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	sc := obj.(*storagev1.StorageClass)
	return sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion, nil
}

func addFinalizer(m *metav1.ObjectMeta, f string) {
	if !slices.Contains(m.Finalizers, f) {
		m.Finalizers = append(m.Finalizers, f)
	}
}

// defaultStorageClass picks the class annotated as default; with several,
// the newest (newestDefault), as upstream's GetDefaultClass.
func (s *Server) defaultStorageClass(ctx context.Context) (*storagev1.StorageClass, error) {
	list, err := s.handlers["storage.k8s.io/v1/storageclasses"].store.List(ctx, storageListAll())
	if err != nil {
		return nil, err
	}
	return newestDefault(list.Items, volumeutil.IsDefaultClass), nil
}

// bootstrapStorage creates the local-path StorageClass, the default class
// of every minik cluster (as k3s ships one): volumes are directories on
// the node the pod was scheduled to (see controller/volume).
func (s *Server) bootstrapStorage(ctx context.Context) error {
	wait := storagev1.VolumeBindingWaitForFirstConsumer
	del := corev1.PersistentVolumeReclaimDelete
	sc := &storagev1.StorageClass{TypeMeta: metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"},
		ObjectMeta: metav1.ObjectMeta{Name: volumeutil.LocalPathClass,
			Annotations: map[string]string{volumeutil.IsDefaultClassAnnotation: "true"}},
		Provisioner: volumeutil.LocalPathProvisioner, ReclaimPolicy: &del, VolumeBindingMode: &wait}
	_, err := s.handlers["storage.k8s.io/v1/storageclasses"].createObject(ctx, &requestInfo{}, sc, false)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// volumePhaseTransition stamps status.lastPhaseTransitionTime when a
// volume's phase changes, as upstream's PersistentVolume status strategy.
func volumePhaseTransition(obj, old runtime.Object) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok {
		return
	}
	if prev := old.(*corev1.PersistentVolume); pv.Status.Phase != prev.Status.Phase {
		now := metav1.NewTime(time.Now().Truncate(time.Second))
		pv.Status.LastPhaseTransitionTime = &now
	}
}
