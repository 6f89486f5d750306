// Package podrefs lists the objects a pod names and its kubelet reads:
// secrets, config maps, claims and its service account. The node
// authorizer allows a kubelet exactly these; the kubelet watches the
// secrets and config maps among them.
package podrefs

import (
	corev1 "k8s.io/api/core/v1"

	"minik/internal/volumeutil"
)

// Ref names an object of the pod's namespace by its resource
// ("secrets", "configmaps", "persistentvolumeclaims", "serviceaccounts").
type Ref struct {
	Resource, Name string
}

// Names returns the names of the objects of resource that pod refers to,
// each once.
func Names(pod *corev1.Pod, resource string) []string {
	var out []string
	for _, r := range Of(pod) {
		if r.Resource == resource {
			out = append(out, r.Name)
		}
	}
	return out
}

// Of lists the objects a pod's kubelet must read to run it (the node
// authorizer lets it read these, and no others):
// secrets and config maps from volumes (projected ones too), env, envFrom
// and image pull secrets; claims (ephemeral volumes' claims are named
// POD-VOLUME); the service account. Each appears once.
func Of(pod *corev1.Pod) []Ref {
	seen := map[Ref]bool{}
	var out []Ref
	add := func(resource, name string) {
		r := Ref{Resource: resource, Name: name}
		if name != "" && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	if pod.Spec.ServiceAccountName != "" {
		add("serviceaccounts", pod.Spec.ServiceAccountName)
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		add("secrets", s.Name)
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.Secret != nil:
			add("secrets", v.Secret.SecretName)
		case v.ConfigMap != nil:
			add("configmaps", v.ConfigMap.Name)
		case v.PersistentVolumeClaim != nil, v.Ephemeral != nil:
			add("persistentvolumeclaims", volumeutil.ClaimVolumeName(pod, &v))
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					add("secrets", src.Secret.Name)
				}
				if src.ConfigMap != nil {
					add("configmaps", src.ConfigMap.Name)
				}
			}
		}
		for _, ref := range volumeSecretRefs(&v.VolumeSource) {
			add("secrets", ref)
		}
	}
	visit := func(cs []corev1.Container) {
		for _, c := range cs {
			for _, e := range c.EnvFrom {
				if e.SecretRef != nil {
					add("secrets", e.SecretRef.Name)
				}
				if e.ConfigMapRef != nil {
					add("configmaps", e.ConfigMapRef.Name)
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				if e.ValueFrom.SecretKeyRef != nil {
					add("secrets", e.ValueFrom.SecretKeyRef.Name)
				}
				if e.ValueFrom.ConfigMapKeyRef != nil {
					add("configmaps", e.ValueFrom.ConfigMapKeyRef.Name)
				}
			}
		}
	}
	visit(pod.Spec.InitContainers)
	visit(pod.Spec.Containers)
	for _, c := range pod.Spec.EphemeralContainers {
		visit([]corev1.Container{corev1.Container(c.EphemeralContainerCommon)})
	}
	return out
}

// volumeSecretRefs lists the secrets that volume plugins name in their
// secretRef fields (CSI, iSCSI, RBD, CephFS, FlexVolume, ...): a node
// that mounts such a volume needs them.
func volumeSecretRefs(v *corev1.VolumeSource) []string {
	var out []string
	local := func(r *corev1.LocalObjectReference) {
		if r != nil {
			out = append(out, r.Name)
		}
	}
	switch {
	case v.CSI != nil:
		local(v.CSI.NodePublishSecretRef)
	case v.ISCSI != nil:
		local(v.ISCSI.SecretRef)
	case v.RBD != nil:
		local(v.RBD.SecretRef)
	case v.CephFS != nil:
		local(v.CephFS.SecretRef)
	case v.FlexVolume != nil:
		local(v.FlexVolume.SecretRef)
	case v.ScaleIO != nil:
		local(v.ScaleIO.SecretRef)
	case v.StorageOS != nil:
		local(v.StorageOS.SecretRef)
	case v.AzureFile != nil:
		out = append(out, v.AzureFile.SecretName)
	}
	return out
}
