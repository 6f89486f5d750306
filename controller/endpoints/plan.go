// Package endpoints is the Endpoints controller: the v1 Endpoints object
// of every Service with a selector, for kubectl and older clients, as
// Kubernetes' endpoint controller writes it. See README.md.
package endpoints

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/controller/framework"
	"minik/controller/internal/svcutil"
)

const (
	// Name is the controller's name in logs and flags.
	Name = "endpoints"
	// LabelManagedBy and ControllerName mark the Endpoints this controller
	// writes (Kubernetes 1.33+), so that the EndpointSlice mirroring
	// controller and users can tell them from their own.
	LabelManagedBy = "endpoints.kubernetes.io/managed-by"
	ControllerName = "endpoint-controller"
	// MaxCapacity is the most addresses one Endpoints lists; beyond it the
	// object is truncated and annotated.
	MaxCapacity = 1000
	// Truncated is the value of the over-capacity annotation.
	Truncated = "truncated"
)

// Input is what one sync of a Service key sees.
type Input struct {
	// Service is nil if it was deleted; else it has a selector and is not
	// of type ExternalName.
	Service *corev1.Service
	// Pods are the pods its selector matches.
	Pods []*corev1.Pod
	// Current is the Endpoints of the same name, nil if none.
	Current *corev1.Endpoints
	// TriggerTime goes into the last-change-trigger-time annotation of a
	// written object; zero removes it.
	TriggerTime time.Time
}

// ActionType says what an Action does.
type ActionType string

const (
	// CreateEndpoints creates Endpoints.
	CreateEndpoints ActionType = "CreateEndpoints"
	// UpdateEndpoints writes Endpoints, a changed copy of the current one.
	UpdateEndpoints ActionType = "UpdateEndpoints"
	// DeleteEndpoints deletes Endpoints (its Service is gone), if it still
	// has the same UID.
	DeleteEndpoints ActionType = "DeleteEndpoints"
)

// Action is one write of a Service's Endpoints.
type Action struct {
	Type      ActionType
	Endpoints *corev1.Endpoints
}

func (a Action) String() string {
	return string(a.Type) + " " + a.Endpoints.Namespace + "/" + a.Endpoints.Name
}

// Output is at most one write.
type Output = framework.Output[Action]

func write(t ActionType, ep *corev1.Endpoints) Output {
	return Output{Actions: []Action{{Type: t, Endpoints: ep}}}
}

// Plan computes the Endpoints of in.Service. It is pure.
func Plan(in Input) Output {
	svc, cur := in.Service, in.Current
	if svc == nil {
		if cur != nil {
			return write(DeleteEndpoints, cur)
		}
		return Output{}
	}
	subsets := Subsets(svc, in.Pods)
	truncated := truncate(subsets)
	labels := endpointsLabels(svc)
	if cur != nil && equality.Semantic.DeepEqual(cur.Subsets, subsets) && maps.Equal(cur.Labels, labels) &&
		(cur.Annotations[corev1.EndpointsOverCapacity] == Truncated) == truncated {
		return Output{}
	}
	var ep *corev1.Endpoints
	if cur != nil {
		ep = cur.DeepCopy()
	} else {
		ep = &corev1.Endpoints{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Endpoints"},
			ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace}}
	}
	ep.Subsets = subsets
	ep.Labels = labels
	if ep.Annotations == nil {
		ep.Annotations = map[string]string{}
	}
	if in.TriggerTime.IsZero() {
		delete(ep.Annotations, corev1.EndpointsLastChangeTriggerTime)
	} else {
		ep.Annotations[corev1.EndpointsLastChangeTriggerTime] = in.TriggerTime.UTC().Format(time.RFC3339Nano)
	}
	if truncated {
		ep.Annotations[corev1.EndpointsOverCapacity] = Truncated
	} else {
		delete(ep.Annotations, corev1.EndpointsOverCapacity)
	}
	if cur == nil {
		return write(CreateEndpoints, ep)
	}
	return write(UpdateEndpoints, ep)
}

// endpointsLabels are the Service's labels, this controller's mark, and
// the headless label for a Service without cluster IP.
func endpointsLabels(svc *corev1.Service) map[string]string {
	out := maps.Clone(svc.Labels)
	if out == nil {
		out = map[string]string{}
	}
	out[LabelManagedBy] = ControllerName
	if !svcutil.IsServiceIPSet(svc) {
		out[corev1.IsHeadlessService] = ""
	} else {
		delete(out, corev1.IsHeadlessService)
	}
	return out
}

// Subsets lists svc's pods as Kubernetes' endpoint controller does: each
// address with each port it serves, ready or not, then Repack. Pods being
// deleted are left out unless the Service publishes not-ready addresses,
// which also makes every address ready.
func Subsets(svc *corev1.Service, pods []*corev1.Pod) []corev1.EndpointSubset {
	var subsets []corev1.EndpointSubset
	add := func(a corev1.EndpointAddress, ready bool, ports []corev1.EndpointPort) {
		s := corev1.EndpointSubset{Ports: ports}
		if ready {
			s.Addresses = []corev1.EndpointAddress{a}
		} else {
			s.NotReadyAddresses = []corev1.EndpointAddress{a}
		}
		subsets = append(subsets, s)
	}
	publish := svc.Spec.PublishNotReadyAddresses
	for _, pod := range pods {
		if !svcutil.ShouldPodBeInEndpoints(pod, publish) {
			continue
		}
		ips := svcutil.PodIPv4s(pod)
		if len(ips) == 0 {
			continue
		}
		node := pod.Spec.NodeName
		a := corev1.EndpointAddress{IP: ips[0], NodeName: &node,
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}}
		if svcutil.ShouldSetHostname(pod, svc) {
			a.Hostname = pod.Spec.Hostname
		}
		ready := publish || framework.IsPodReady(pod)
		if len(svc.Spec.Ports) == 0 {
			if svc.Spec.ClusterIP == corev1.ClusterIPNone {
				add(a, ready, nil)
			}
			continue
		}
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			n, ok := svcutil.FindPort(pod, sp)
			if !ok {
				continue
			}
			proto := sp.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			add(a, ready, []corev1.EndpointPort{{Name: sp.Name, Port: n, Protocol: proto, AppProtocol: sp.AppProtocol}})
		}
	}
	return Repack(subsets)
}

// Repack puts subsets in the canonical form of Kubernetes'
// RepackSubsets: every (address, port) pair is expanded, an address not
// ready for a port in any subset is not ready for it, and the ports
// served by exactly the same addresses in the same states share one
// subset. Addresses (by IP, then pod UID), ports and subsets are sorted.
func Repack(subsets []corev1.EndpointSubset) []corev1.EndpointSubset {
	type addrKey struct {
		ip  string
		uid string
	}
	addrs := map[addrKey]*corev1.EndpointAddress{}
	noPort := corev1.EndpointPort{Port: -1} // addresses without ports are kept too
	// port → address → ready ("not ready" wins)
	byPort := map[corev1.EndpointPort]map[addrKey]bool{}
	record := func(a *corev1.EndpointAddress, port corev1.EndpointPort, ready bool) {
		k := addrKey{ip: a.IP}
		if a.TargetRef != nil {
			k.uid = string(a.TargetRef.UID)
		}
		if _, ok := addrs[k]; !ok {
			addrs[k] = a
		}
		m := byPort[port]
		if m == nil {
			m = map[addrKey]bool{}
			byPort[port] = m
		}
		if was, ok := m[k]; !ok || was {
			m[k] = ready
		}
	}
	for i := range subsets {
		s := &subsets[i]
		ports := s.Ports
		if len(ports) == 0 {
			ports = []corev1.EndpointPort{noPort}
		}
		for _, p := range ports {
			for j := range s.Addresses {
				record(&s.Addresses[j], p, true)
			}
			for j := range s.NotReadyAddresses {
				record(&s.NotReadyAddresses[j], p, false)
			}
		}
	}
	type group struct {
		members map[addrKey]bool
		ports   []corev1.EndpointPort
	}
	groups := map[string]*group{}
	for port, members := range byPort {
		parts := make([]string, 0, len(members))
		for k, ready := range members {
			parts = append(parts, fmt.Sprintf("%s/%s/%v", k.ip, k.uid, ready))
		}
		slices.Sort(parts)
		sig := strings.Join(parts, ",")
		g := groups[sig]
		if g == nil {
			g = &group{members: members}
			groups[sig] = g
		}
		if port != noPort {
			g.ports = append(g.ports, port)
		}
	}
	out := []corev1.EndpointSubset{}
	for _, g := range groups {
		var s corev1.EndpointSubset
		for k, ready := range g.members {
			if ready {
				s.Addresses = append(s.Addresses, *addrs[k])
			} else {
				s.NotReadyAddresses = append(s.NotReadyAddresses, *addrs[k])
			}
		}
		slices.SortFunc(s.Addresses, lessAddress)
		slices.SortFunc(s.NotReadyAddresses, lessAddress)
		s.Ports = g.ports
		slices.SortFunc(s.Ports, func(a, b corev1.EndpointPort) int {
			return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.Port, b.Port), strings.Compare(string(a.Protocol), string(b.Protocol)))
		})
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b corev1.EndpointSubset) int { return strings.Compare(subsetKey(a), subsetKey(b)) })
	return out
}

func lessAddress(a, b corev1.EndpointAddress) int {
	return cmp.Or(cmp.Compare(ipSortKey(a.IP), ipSortKey(b.IP)), strings.Compare(a.IP, b.IP), strings.Compare(uidOf(a), uidOf(b)))
}

func uidOf(a corev1.EndpointAddress) string {
	if a.TargetRef == nil {
		return ""
	}
	return string(a.TargetRef.UID)
}

// ipSortKey orders IPv4 addresses numerically.
func ipSortKey(ip string) uint64 {
	var a, b, c, d uint64
	if n, _ := fmt.Sscanf(ip, "%d.%d.%d.%d", &a, &b, &c, &d); n == 4 {
		return a<<24 | b<<16 | c<<8 | d
	}
	return math.MaxUint64
}

func subsetKey(s corev1.EndpointSubset) string {
	var b strings.Builder
	for _, p := range s.Ports {
		fmt.Fprintf(&b, "%s/%d/%s,", p.Name, p.Port, p.Protocol)
	}
	b.WriteString("|")
	for _, a := range append(slices.Clone(s.Addresses), s.NotReadyAddresses...) {
		fmt.Fprintf(&b, "%010d,", ipSortKey(a.IP))
	}
	return b.String()
}

// truncate cuts subsets down to MaxCapacity addresses as Kubernetes
// does: not-ready addresses go first; each subset keeps its share of
// what remains, rounded up, the last ones taking what is left. It
// reports whether anything was cut.
func truncate(subsets []corev1.EndpointSubset) bool {
	ready, notReady := 0, 0
	for _, s := range subsets {
		ready += len(s.Addresses)
		notReady += len(s.NotReadyAddresses)
	}
	if ready+notReady <= MaxCapacity {
		return false
	}
	truncReady := ready > MaxCapacity
	limit, total := MaxCapacity-ready, notReady
	if truncReady {
		limit, total = MaxCapacity, ready
	}
	left := limit
	for i := range subsets {
		s := &subsets[i]
		n := len(s.NotReadyAddresses)
		if truncReady {
			n = len(s.Addresses)
		}
		keep := min(int(math.Ceil(float64(n)/float64(total)*float64(limit))), left)
		if truncReady {
			s.Addresses = s.Addresses[:min(keep, len(s.Addresses))]
			s.NotReadyAddresses = nil
			left -= len(s.Addresses)
		} else {
			s.NotReadyAddresses = s.NotReadyAddresses[:min(keep, len(s.NotReadyAddresses))]
			left -= len(s.NotReadyAddresses)
		}
	}
	return true
}
