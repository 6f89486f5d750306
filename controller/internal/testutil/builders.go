// Package testutil has the small object builders the controllers' unit
// tests share: testutil.Pod("a").Label("app", "web").Ready(t).Obj().
package testutil

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// T0 is the reference time of the tests.
var T0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// PodBuilder builds a pod.
type PodBuilder struct{ p *corev1.Pod }

// Pod starts a pod in namespace default, Pending, created at T0.
func Pod(name string) *PodBuilder {
	return &PodBuilder{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
		CreationTimestamp: metav1.NewTime(T0), Labels: map[string]string{}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}}
}

// Label sets a label.
func (b *PodBuilder) Label(k, v string) *PodBuilder { b.p.Labels[k] = v; return b }

// Node binds the pod to node.
func (b *PodBuilder) Node(n string) *PodBuilder { b.p.Spec.NodeName = n; return b }

// Phase sets the phase.
func (b *PodBuilder) Phase(ph corev1.PodPhase) *PodBuilder { b.p.Status.Phase = ph; return b }

// Ready makes the pod Running and Ready since t.
func (b *PodBuilder) Ready(t time.Time) *PodBuilder {
	b.p.Status.Phase = corev1.PodRunning
	b.p.Status.Conditions = append(b.p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(t)})
	return b
}

// Created sets the creation time.
func (b *PodBuilder) Created(t time.Time) *PodBuilder {
	b.p.CreationTimestamp = metav1.NewTime(t)
	return b
}

// Deleting marks the pod as being deleted.
func (b *PodBuilder) Deleting() *PodBuilder {
	t := metav1.NewTime(T0)
	b.p.DeletionTimestamp = &t
	return b
}

// Owner makes obj (of kind) the pod's controller.
func (b *PodBuilder) Owner(obj metav1.Object, apiVersion, kind string) *PodBuilder {
	t := true
	b.p.OwnerReferences = append(b.p.OwnerReferences, metav1.OwnerReference{APIVersion: apiVersion, Kind: kind,
		Name: obj.GetName(), UID: obj.GetUID(), Controller: &t, BlockOwnerDeletion: &t})
	return b
}

// Restarts sets the restart count of the first container.
func (b *PodBuilder) Restarts(n int32) *PodBuilder {
	b.p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: n}}
	return b
}

// Exited ends the pod in phase (Succeeded or Failed), its container
// having exited with code at t.
func (b *PodBuilder) Exited(ph corev1.PodPhase, code int32, at time.Time) *PodBuilder {
	b.p.Status.Phase = ph
	b.p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: b.p.Spec.Containers[0].Name,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(at)}}}}
	return b
}

// Tolerate adds a NoExecute toleration of key, for seconds (nil: forever).
func (b *PodBuilder) Tolerate(key string, seconds *int64) *PodBuilder {
	b.p.Spec.Tolerations = append(b.p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds})
	return b
}

// IP gives the pod its IP (status.podIP and podIPs).
func (b *PodBuilder) IP(ip string) *PodBuilder {
	b.p.Status.PodIP = ip
	b.p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	return b
}

// NotReady makes the pod Running with its Ready condition False since t.
func (b *PodBuilder) NotReady(t time.Time) *PodBuilder {
	b.p.Status.Phase = corev1.PodRunning
	b.p.Status.Conditions = append(b.p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse,
		LastTransitionTime: metav1.NewTime(t)})
	return b
}

// Hostname sets spec.hostname and spec.subdomain.
func (b *PodBuilder) Hostname(hostname, subdomain string) *PodBuilder {
	b.p.Spec.Hostname, b.p.Spec.Subdomain = hostname, subdomain
	return b
}

// ContainerPort adds a named TCP port to the first container.
func (b *PodBuilder) ContainerPort(name string, port int32) *PodBuilder {
	c := &b.p.Spec.Containers[0]
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: corev1.ProtocolTCP})
	return b
}

// Obj returns the pod.
func (b *PodBuilder) Obj() *corev1.Pod { return b.p }

// ServiceBuilder builds a Service.
type ServiceBuilder struct{ s *corev1.Service }

// Service starts a ClusterIP Service in namespace default, created at T0,
// with an empty selector (set one with Selector).
func Service(name string) *ServiceBuilder {
	return &ServiceBuilder{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
		UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(T0)},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.20", Selector: map[string]string{}}}}
}

// Selector adds a selector pair.
func (b *ServiceBuilder) Selector(k, v string) *ServiceBuilder { b.s.Spec.Selector[k] = v; return b }

// NoSelector makes the Service selectorless.
func (b *ServiceBuilder) NoSelector() *ServiceBuilder { b.s.Spec.Selector = nil; return b }

// Label sets a label.
func (b *ServiceBuilder) Label(k, v string) *ServiceBuilder {
	if b.s.Labels == nil {
		b.s.Labels = map[string]string{}
	}
	b.s.Labels[k] = v
	return b
}

// Port adds a TCP port with a numbered targetPort.
func (b *ServiceBuilder) Port(name string, port, target int32) *ServiceBuilder {
	b.s.Spec.Ports = append(b.s.Spec.Ports, corev1.ServicePort{Name: name, Port: port, Protocol: corev1.ProtocolTCP,
		TargetPort: intstr.FromInt32(target)})
	return b
}

// NamedPort adds a TCP port whose targetPort is a container port's name.
func (b *ServiceBuilder) NamedPort(name string, port int32, target string) *ServiceBuilder {
	b.s.Spec.Ports = append(b.s.Spec.Ports, corev1.ServicePort{Name: name, Port: port, Protocol: corev1.ProtocolTCP,
		TargetPort: intstr.FromString(target)})
	return b
}

// Headless makes the Service headless (clusterIP None).
func (b *ServiceBuilder) Headless() *ServiceBuilder {
	b.s.Spec.ClusterIP = corev1.ClusterIPNone
	return b
}

// PublishNotReady sets publishNotReadyAddresses.
func (b *ServiceBuilder) PublishNotReady() *ServiceBuilder {
	b.s.Spec.PublishNotReadyAddresses = true
	return b
}

// Obj returns the Service.
func (b *ServiceBuilder) Obj() *corev1.Service { return b.s }

// NodeBuilder builds a node.
type NodeBuilder struct{ n *corev1.Node }

// Node starts a node created at T0.
func Node(name string) *NodeBuilder {
	return &NodeBuilder{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name),
		CreationTimestamp: metav1.NewTime(T0), Labels: map[string]string{}}}}
}

// Condition sets a condition with heartbeat hb.
func (b *NodeBuilder) Condition(t corev1.NodeConditionType, s corev1.ConditionStatus, hb time.Time) *NodeBuilder {
	b.n.Status.Conditions = append(b.n.Status.Conditions, corev1.NodeCondition{Type: t, Status: s,
		LastHeartbeatTime: metav1.NewTime(hb), LastTransitionTime: metav1.NewTime(hb)})
	return b
}

// Taint adds a taint.
func (b *NodeBuilder) Taint(key string, effect corev1.TaintEffect) *NodeBuilder {
	b.n.Spec.Taints = append(b.n.Spec.Taints, corev1.Taint{Key: key, Effect: effect})
	return b
}

// Label sets a label.
func (b *NodeBuilder) Label(k, v string) *NodeBuilder { b.n.Labels[k] = v; return b }

// Unschedulable cordons the node.
func (b *NodeBuilder) Unschedulable() *NodeBuilder { b.n.Spec.Unschedulable = true; return b }

// Obj returns the node.
func (b *NodeBuilder) Obj() *corev1.Node { return b.n }

// Int64 returns a pointer to v.
func Int64(v int64) *int64 { return &v }

// Int32 returns a pointer to v.
func Int32(v int32) *int32 { return &v }

// Names returns the names of pods.
func Names(pods []*corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}
