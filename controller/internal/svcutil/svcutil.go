// Package svcutil holds the rules the Endpoints and EndpointSlice
// controllers share, as Kubernetes' k8s.io/endpointslice/util and
// pkg/controller/util/endpoint hold them: which pods are endpoints, which
// port a Service port resolves to on a pod, when a pod change matters, and
// the last-change-trigger-time of a sync; and the slice writes (SliceAction,
// SliceSink) of the EndpointSlice and mirroring controllers.
package svcutil

import (
	"maps"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik/client/informer"
	"minik/controller/framework"
)

// ShouldPodBeInEndpoints reports whether pod is an endpoint at all: it has
// an IP, has not finished, and is not being deleted unless
// includeTerminating (the EndpointSlice controller includes terminating
// pods; the Endpoints controller only with publishNotReadyAddresses).
func ShouldPodBeInEndpoints(pod *corev1.Pod, includeTerminating bool) bool {
	if framework.IsPodTerminal(pod) {
		return false
	}
	if pod.Status.PodIP == "" && len(pod.Status.PodIPs) == 0 {
		return false
	}
	return includeTerminating || pod.DeletionTimestamp == nil
}

// ShouldSetHostname reports whether pod's endpoint for svc carries the
// pod's hostname: the pod names svc as its subdomain.
func ShouldSetHostname(pod *corev1.Pod, svc *corev1.Service) bool {
	return pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace
}

// IsServiceIPSet reports whether svc has a cluster IP (is not headless).
func IsServiceIPSet(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP != corev1.ClusterIPNone && svc.Spec.ClusterIP != ""
}

func protocolOr(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

// FindPort resolves a Service port's targetPort on pod: a number is taken
// as it is (0, an undefaulted targetPort, is the Service port), a name is
// looked up among the named ports (of the same protocol) of the pod's
// containers and sidecars (init containers with restartPolicy Always).
func FindPort(pod *corev1.Pod, sp *corev1.ServicePort) (int32, bool) {
	tp := sp.TargetPort
	if tp.Type == intstr.Int {
		if tp.IntVal == 0 {
			return sp.Port, true
		}
		return tp.IntVal, true
	}
	proto := protocolOr(sp.Protocol)
	find := func(cs []corev1.Container, sidecarsOnly bool) (int32, bool) {
		for _, c := range cs {
			if sidecarsOnly && (c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
				continue
			}
			for _, p := range c.Ports {
				if p.Name == tp.StrVal && protocolOr(p.Protocol) == proto {
					return p.ContainerPort, true
				}
			}
		}
		return 0, false
	}
	if n, ok := find(pod.Spec.Containers, false); ok {
		return n, true
	}
	return find(pod.Spec.InitContainers, true)
}

// PodIPv4s returns pod's IPv4 addresses (status.podIPs, else status.podIP).
func PodIPv4s(pod *corev1.Pod) []string {
	var out []string
	add := func(s string) {
		if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
			out = append(out, a.String())
		}
	}
	if len(pod.Status.PodIPs) == 0 {
		add(pod.Status.PodIP)
	}
	for _, ip := range pod.Status.PodIPs {
		add(ip.IP)
	}
	return out
}

// PodChange says how a pod update matters to the Services: whether its
// endpoint changed (IPs, readiness, deletion, node, hostname) and whether
// its labels did (it may have joined or left Services).
func PodChange(old, cur *corev1.Pod) (endpointChanged, labelsChanged bool) {
	labelsChanged = !maps.Equal(old.Labels, cur.Labels)
	endpointChanged = (old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) ||
		framework.IsPodReady(old) != framework.IsPodReady(cur) ||
		framework.IsPodTerminal(old) != framework.IsPodTerminal(cur) ||
		old.Status.PodIP != cur.Status.PodIP || !podIPsEqual(old.Status.PodIPs, cur.Status.PodIPs) ||
		old.Spec.NodeName != cur.Spec.NodeName || old.Spec.Hostname != cur.Spec.Hostname ||
		old.Spec.Subdomain != cur.Spec.Subdomain
	return endpointChanged, labelsChanged
}

func podIPsEqual(a, b []corev1.PodIP) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].IP != b[i].IP {
			return false
		}
	}
	return true
}

// ServiceKeysForPodUpdate returns the keys of the Services a pod update
// must resync, sorted, as Kubernetes' GetServicesToUpdateOnPodChange: none if
// nothing that matters changed; with new labels, the Services it left or
// joined (and, if its endpoint changed too, every one it was or is in);
// otherwise the Services it is in. servicesOf finds a label set's
// Services.
func ServiceKeysForPodUpdate(old, cur *corev1.Pod, servicesOf func(labels map[string]string) []*corev1.Service) []string {
	if old.ResourceVersion != "" && old.ResourceVersion == cur.ResourceVersion {
		return nil
	}
	endpointChanged, labelsChanged := PodChange(old, cur)
	if !endpointChanged && !labelsChanged {
		return nil
	}
	now := keys(servicesOf(cur.Labels))
	if !labelsChanged {
		return sortedKeys(now)
	}
	before := keys(servicesOf(old.Labels))
	out := map[string]bool{}
	for k := range now {
		if endpointChanged || !before[k] {
			out[k] = true
		}
	}
	for k := range before {
		if endpointChanged || !now[k] {
			out[k] = true
		}
	}
	return sortedKeys(out)
}

func keys(svcs []*corev1.Service) map[string]bool {
	out := make(map[string]bool, len(svcs))
	for _, s := range svcs {
		out[framework.KeyOf(s)] = true
	}
	return out
}

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]bool) []string {
	return slices.Sorted(maps.Keys(m))
}

// TriggerState is what a controller remembers of a Service between syncs
// to compute the endpoints.kubernetes.io/last-change-trigger-time
// annotation (Kubernetes' TriggerTimeTracker): each pod's trigger time
// (its Ready condition's last transition) and the Service's (its
// creation).
type TriggerState struct {
	Pods    map[string]time.Time
	Service time.Time
}

// TriggerTime returns the trigger time of this sync of svc and the state
// to remember. The first sync of a Service answers its creation time;
// later ones the earliest trigger time that changed since the last sync,
// or zero if none did (the annotation is then removed). prev is nil for a
// Service not seen before.
func TriggerTime(prev *TriggerState, svc *corev1.Service, pods []*corev1.Pod) (time.Time, *TriggerState) {
	next := &TriggerState{Pods: make(map[string]time.Time, len(pods)), Service: svc.CreationTimestamp.Time}
	var minChanged time.Time
	earliest := func(t time.Time) {
		if minChanged.IsZero() || t.Before(minChanged) {
			minChanged = t
		}
	}
	for _, p := range pods {
		c := framework.PodReadyCondition(p)
		if c == nil || c.LastTransitionTime.IsZero() {
			continue
		}
		t := c.LastTransitionTime.Time
		next.Pods[p.Name] = t
		if prev == nil || t.After(prev.Pods[p.Name]) {
			earliest(t)
		}
	}
	if prev == nil {
		return svc.CreationTimestamp.Time, next
	}
	if next.Service.After(prev.Service) {
		earliest(next.Service)
	}
	return minChanged, next
}

// PodHandler returns pod informer handlers that queue, through enqueue,
// the keys of the Services a pod event concerns: the Services of an added
// or deleted pod, and those ServiceKeysForPodUpdate names for an update.
// A pod event costs one index lookup per pod label (see
// framework.ServicesOfLabels), never a walk over every Service.
func PodHandler(services *informer.Store[corev1.Service], enqueue func(key string)) informer.Handler[corev1.Pod] {
	all := func(p *corev1.Pod) {
		for _, s := range framework.ServicesOfPod(services, p) {
			enqueue(framework.KeyOf(s))
		}
	}
	return informer.Handler[corev1.Pod]{
		OnAdd: all,
		OnUpdate: func(old, cur *corev1.Pod) {
			for _, k := range ServiceKeysForPodUpdate(old, cur, func(l map[string]string) []*corev1.Service {
				return framework.ServicesOfLabels(services, cur.Namespace, l)
			}) {
				enqueue(k)
			}
		},
		OnDelete: all,
	}
}

// SelectedPods returns the pods of svc's namespace its selector matches.
func SelectedPods(pods *informer.Store[corev1.Pod], svc *corev1.Service) []*corev1.Pod {
	sel := labels.SelectorFromValidatedSet(svc.Spec.Selector)
	var out []*corev1.Pod
	for _, p := range pods.ByIndex(informer.NamespaceIndex, svc.Namespace) {
		if sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out
}
