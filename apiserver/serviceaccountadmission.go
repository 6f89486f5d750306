package apiserver

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
)

// The ServiceAccount admission plugin, as kube-apiserver's
// (plugin/pkg/admission/serviceaccount): every pod but a mirror pod runs
// as an account that exists, `default` unless it names one, and gets
// the account's API credentials as a projected volume:
//
//	pod ─▶ mirror pod? ─▶ no account, no secrets, no token projection (else 403)
//	    ─▶ serviceAccountName = "default" if empty ─▶ look it up (cache, etcd; 403 if missing)
//	    ─▶ automount (pod's choice, else the account's, else yes)?
//	         volume kube-api-access-XXXXX {token, kube-root-ca.crt's ca.crt, namespace}
//	         mounted read-only at /var/run/secrets/kubernetes.io/serviceaccount
//	         in every container and init container that has nothing there
//	    ─▶ imagePullSecrets from the account when the pod has none
//	    ─▶ kubernetes.io/enforce-mountable-secrets: only the account's secrets

const (
	// ServiceAccountPlugin is the plugin's name, as --disable-admission-plugins takes it.
	ServiceAccountPlugin = "ServiceAccount"

	defaultServiceAccountName = "default"
	// serviceAccountVolumePrefix names the volume the plugin adds
	// (kube-api-access-XXXXX); a volume of that prefix already in the
	// pod is taken to be it.
	serviceAccountVolumePrefix = "kube-api-access-"
	// ServiceAccountMountPath is where containers find token, ca.crt and namespace.
	ServiceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// serviceAccountTokenSeconds is the lifetime the plugin asks for: an
	// hour and 7 seconds, which kube-apiserver recognises as its own
	// default (and may extend when it keeps legacy tokens working).
	serviceAccountTokenSeconds = 3607
	// rootCAConfigMap is the ConfigMap the serviceaccount controller
	// publishes the cluster CA in, in every namespace.
	rootCAConfigMap = "kube-root-ca.crt"

	enforceMountableSecretsAnnotation = "kubernetes.io/enforce-mountable-secrets"
)

// admitServiceAccount is the plugin's admission of a new pod: the pure
// rules around the one read of the account.
func (s *Server) admitServiceAccount(ctx context.Context, pod *corev1.Pod, reads *admissionReads) error {
	forbid := func(err error) error { return apierrors.NewForbidden(corev1.Resource("pods"), pod.Name, err) }
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		if err := mirrorPodIdentity(pod); err != nil {
			return forbid(err)
		}
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = defaultServiceAccountName
	}
	sa, err := reads.serviceAccount(ctx, pod.Namespace, pod.Spec.ServiceAccountName)
	if apierrors.IsNotFound(err) {
		// The message upstream gives: serviceaccount "NAME" not found.
		err = apierrors.NewNotFound(corev1.Resource("serviceaccount"), pod.Spec.ServiceAccountName)
	}
	if err != nil {
		return forbid(fmt.Errorf("error looking up service account %s/%s: %w", pod.Namespace, pod.Spec.ServiceAccountName, err))
	}
	if s.tokens == nil {
		// No signing key, no tokens: a token volume could never be
		// filled (kube-apiserver has MountServiceAccountToken off then).
		off := false
		sa = sa.DeepCopy()
		sa.AutomountServiceAccountToken = &off
		if pod.Spec.AutomountServiceAccountToken != nil && *pod.Spec.AutomountServiceAccountToken {
			return forbid(fmt.Errorf("service account tokens are not enabled: the apiserver has no --service-account-signing-key-file"))
		}
	}
	applyServiceAccount(pod, sa, func() string { return serviceAccountVolumePrefix + utilrand.String(5) })
	if err := mountableSecrets(pod, sa); err != nil {
		return forbid(err)
	}
	return nil
}

// mirrorPodIdentity refuses a mirror pod that references a service
// account, a secret or a token: its kubelet could not get them, and
// its spec must stay what the static pod's file says.
func mirrorPodIdentity(pod *corev1.Pod) error {
	if pod.Spec.ServiceAccountName != "" {
		return fmt.Errorf("a mirror pod may not reference service accounts")
	}
	for _, r := range podReferences(pod) {
		if r.kind == "secrets" {
			return fmt.Errorf("a mirror pod may not reference secrets")
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ServiceAccountToken != nil {
				return fmt.Errorf("a mirror pod may not use ServiceAccountToken volume projections")
			}
		}
	}
	return nil
}

// applyServiceAccount mounts the account's credentials into the pod,
// unless automounting is off, and copies its image pull secrets when
// the pod has none. newVolumeName names a new volume.
func applyServiceAccount(pod *corev1.Pod, sa *corev1.ServiceAccount, newVolumeName func() string) {
	if automountToken(pod, sa) {
		mountServiceAccountToken(&pod.Spec, newVolumeName)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		pod.Spec.ImagePullSecrets = make([]corev1.LocalObjectReference, len(sa.ImagePullSecrets))
		for i, ref := range sa.ImagePullSecrets {
			pod.Spec.ImagePullSecrets[i] = corev1.LocalObjectReference{Name: ref.Name}
		}
	}
}

// automountToken: the pod's automountServiceAccountToken wins, then the
// account's; unset on both means yes.
func automountToken(pod *corev1.Pod, sa *corev1.ServiceAccount) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountServiceAccountToken mounts the kube-api-access volume in every
// container and init container that has nothing at the mount path yet,
// and adds the volume when one of them mounts it and the pod lacks it.
func mountServiceAccountToken(spec *corev1.PodSpec, newVolumeName func() string) {
	name, have := "", false
	for _, v := range spec.Volumes {
		if strings.HasPrefix(v.Name, serviceAccountVolumePrefix) {
			name, have = v.Name, true
			break
		}
	}
	if name == "" {
		name = newVolumeName()
	}
	mount := corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: ServiceAccountMountPath}
	needed := false
	add := func(cs []corev1.Container) {
		for i := range cs {
			if !mountsAt(cs[i].VolumeMounts, ServiceAccountMountPath) {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, mount)
				needed = true
			}
		}
	}
	add(spec.InitContainers)
	add(spec.Containers)
	if needed && !have {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: name,
			VolumeSource: corev1.VolumeSource{Projected: serviceAccountVolumeSource()}})
	}
}

func mountsAt(mounts []corev1.VolumeMount, path string) bool {
	for _, m := range mounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

// serviceAccountVolumeSource is the projected volume of a pod's API
// credentials: a bound token, the cluster CA and the namespace.
func serviceAccountVolumeSource() *corev1.ProjectedVolumeSource {
	return &corev1.ProjectedVolumeSource{
		// Set here, as upstream does, rather than left to defaulting.
		DefaultMode: ptr.To(corev1.ProjectedVolumeSourceDefaultMode),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token",
				ExpirationSeconds: ptr.To(int64(serviceAccountTokenSeconds))}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: rootCAConfigMap},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}
}

// mountableSecrets enforces kubernetes.io/enforce-mountable-secrets=true
// on the account: the pod may use only the secrets the account lists
// (volumes, env) and only its image pull secrets.
func mountableSecrets(pod *corev1.Pod, sa *corev1.ServiceAccount) error {
	if on, _ := strconv.ParseBool(sa.Annotations[enforceMountableSecretsAnnotation]); !on {
		return nil
	}
	allowed := map[string]bool{}
	for _, ref := range sa.Secrets {
		allowed[ref.Name] = true
	}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil && !allowed[v.Secret.SecretName] {
			return fmt.Errorf("volume with secret.secretName=%q is not allowed because service account %s does not reference that secret", v.Secret.SecretName, sa.Name)
		}
	}
	check := func(kind string, cs []corev1.Container) error {
		for _, c := range cs {
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && !allowed[e.ValueFrom.SecretKeyRef.Name] {
					return fmt.Errorf("%s %s with envVar %s referencing secret.secretName=%q is not allowed because service account %s does not reference that secret",
						kind, c.Name, e.Name, e.ValueFrom.SecretKeyRef.Name, sa.Name)
				}
			}
		}
		return nil
	}
	if err := check("init container", pod.Spec.InitContainers); err != nil {
		return err
	}
	if err := check("container", pod.Spec.Containers); err != nil {
		return err
	}
	pull := map[string]bool{}
	for _, ref := range sa.ImagePullSecrets {
		pull[ref.Name] = true
	}
	for i, ref := range pod.Spec.ImagePullSecrets {
		if !pull[ref.Name] {
			return fmt.Errorf("imagePullSecrets[%d].name=%q is not allowed because service account %s does not reference that imagePullSecret", i, ref.Name, sa.Name)
		}
	}
	return nil
}
