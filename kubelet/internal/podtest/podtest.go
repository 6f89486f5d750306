// Package podtest builds pods for the kubelet's tests.
package podtest

import corev1 "k8s.io/api/core/v1"

// Builder builds pods: MakePod("a", "b").Policy(corev1.RestartPolicyNever).Obj().
type Builder struct{ Pod *corev1.Pod }

// MakePod is pod default/p (UID uid-p) with one busybox container per
// name and restart policy Always.
func MakePod(containers ...string) *Builder {
	p := &corev1.Pod{}
	p.Name, p.Namespace, p.UID = "p", "default", "uid-p"
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "busybox"})
	}
	p.Spec.RestartPolicy = corev1.RestartPolicyAlways
	return &Builder{p}
}

// Init adds init containers.
func (b *Builder) Init(names ...string) *Builder {
	for _, n := range names {
		b.Pod.Spec.InitContainers = append(b.Pod.Spec.InitContainers, corev1.Container{Name: n, Image: "busybox"})
	}
	return b
}

// Debug adds an ephemeral container targeting target ("" for none).
func (b *Builder) Debug(name, target string) *Builder {
	b.Pod.Spec.EphemeralContainers = append(b.Pod.Spec.EphemeralContainers, corev1.EphemeralContainer{TargetContainerName: target,
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox"}})
	return b
}

// Policy sets the restart policy; Phase the status phase; Readiness
// gives the first container a readiness probe; Obj returns the pod.
func (b *Builder) Policy(r corev1.RestartPolicy) *Builder { b.Pod.Spec.RestartPolicy = r; return b }
func (b *Builder) Phase(ph corev1.PodPhase) *Builder      { b.Pod.Status.Phase = ph; return b }
func (b *Builder) Readiness() *Builder {
	b.Pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{}
	return b
}
func (b *Builder) Obj() *corev1.Pod { return b.Pod }
