// Package endpointslicemirroring is the EndpointSlice mirroring
// controller: the Endpoints users write for a Service without selector
// become EndpointSlices, so that the node proxy and DNS (which read only
// slices) see them, as Kubernetes' endpointslicemirroring controller
// does. See README.md.
package endpointslicemirroring

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/controller/endpoints"
	"minik/controller/framework"
	"minik/controller/internal/svcutil"
)

const (
	// Name is the controller's name in logs and flags.
	Name = "endpointslicemirroring"
	// ControllerName is the managed-by value of the mirrored slices.
	ControllerName = "endpointslicemirroring-controller.k8s.io"
	// DefaultMaxEndpointsPerSubset is kube-controller-manager's
	// --mirroring-max-endpoints-per-subset: the addresses of one subset
	// mirrored, one slice per subset.
	DefaultMaxEndpointsPerSubset = 1000
	// leaderAnnotation marks the Endpoints older leader elections locked.
	leaderAnnotation = "control-plane.alpha.kubernetes.io/leader"
)

// Input is what one sync of an Endpoints key sees.
type Input struct {
	// Endpoints is nil if there is none.
	Endpoints *corev1.Endpoints
	// Service is the Service of the same name, nil if there is none.
	Service *corev1.Service
	// Slices are the existing slices labelled with the name and managed by
	// this controller.
	Slices []*discoveryv1.EndpointSlice
	// MaxEndpointsPerSubset defaults to DefaultMaxEndpointsPerSubset.
	MaxEndpointsPerSubset int
}

// Action is one write: a slice created, updated or deleted, or a
// Warning event on the Endpoints.
type Action = svcutil.SliceAction

// ActionType says what an Action does.
type ActionType = svcutil.SliceActionType

// Output is what a sync writes: the warnings, then the creates, updates
// and deletes.
type Output = framework.Output[Action]

// The reasons of the Warning events on a mirrored Endpoints.
const (
	ReasonInvalidIPAddress         = "InvalidIPAddress"
	ReasonTooManyAddressesToMirror = "TooManyAddressesToMirror"
)

// ShouldMirror reports whether ep is mirrored at all: not marked
// endpointslice.kubernetes.io/skip-mirror (the apiserver marks the
// kubernetes Service's), not a leader-election lock.
func ShouldMirror(ep *corev1.Endpoints) bool {
	if ep == nil || ep.Labels[discoveryv1.LabelSkipMirror] == "true" {
		return false
	}
	_, leader := ep.Annotations[leaderAnnotation]
	return !leader
}

// Plan computes the mirrored slices. It is pure.
//
// The Endpoints is mirrored only while its Service exists without a
// selector (a Service with a selector has the EndpointSlice controller's
// slices); otherwise every mirrored slice goes. Each subset (after
// repacking) becomes one slice per address type, holding at most
// MaxEndpointsPerSubset endpoints, ready ones first; a slice already
// right is left alone, and a create with a delete becomes an update.
func Plan(in Input) Output {
	ep, svc := in.Endpoints, in.Service
	if !ShouldMirror(ep) || svc == nil || svc.Spec.Selector != nil {
		return Output{Actions: svcutil.SliceWrites{Delete: slices.Clone(in.Slices)}.Actions()}
	}
	maxPer := in.MaxEndpointsPerSubset
	if maxPer <= 0 {
		maxPer = DefaultMaxEndpointsPerSubset
	}
	var plan svcutil.SliceWrites
	// invalid counts addresses that are not IPs; skipped those past the
	// per-subset maximum.
	var invalid, skipped int
	type group struct {
		addrType discoveryv1.AddressType
		ports    []discoveryv1.EndpointPort
		eps      []discoveryv1.Endpoint
	}
	groups := map[string]*group{}
	for _, s := range endpoints.Repack(slices.Clone(ep.Subsets)) {
		ports := slicePorts(s.Ports)
		added := 0
		add := func(a corev1.EndpointAddress, ready bool) {
			if added >= maxPer {
				skipped++
				return
			}
			e, addrType, ok := addressToEndpoint(a, ready)
			if !ok {
				invalid++
				return
			}
			k := string(addrType) + "-" + portsKey(ports)
			g := groups[k]
			if g == nil {
				g = &group{addrType: addrType, ports: ports}
				groups[k] = g
			}
			g.eps = append(g.eps, e)
			added++
		}
		for _, a := range s.Addresses {
			add(a, true)
		}
		for _, a := range s.NotReadyAddresses {
			add(a, false)
		}
	}

	existing := slices.Clone(in.Slices)
	slices.SortFunc(existing, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	byKey := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		k := string(s.AddressType) + "-" + portsKey(s.Ports)
		byKey[k] = append(byKey[k], s)
	}
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		if groups[k] == nil {
			plan.Delete = append(plan.Delete, byKey[k]...)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		g := groups[k]
		have := byKey[k]
		if len(have) > 0 {
			plan.Delete = append(plan.Delete, have[1:]...)
			if upToDate(have[0], ep, g.eps) {
				continue
			}
		}
		s := newSlice(ep, g.ports, g.addrType)
		s.Endpoints = g.eps
		if len(have) > 0 {
			s.Name, s.GenerateName, s.ResourceVersion = have[0].Name, "", have[0].ResourceVersion
			plan.Update = append(plan.Update, s)
		} else {
			plan.Create = append(plan.Create, s)
		}
	}
	// A create and a delete of the same address type make an update.
	for i := 0; i < len(plan.Delete) && len(plan.Create) > 0; {
		del := plan.Delete[i]
		last := plan.Create[len(plan.Create)-1]
		if del.AddressType == last.AddressType {
			last.Name, last.GenerateName, last.ResourceVersion = del.Name, "", del.ResourceVersion
			plan.Create = plan.Create[:len(plan.Create)-1]
			plan.Update = append(plan.Update, last)
			plan.Delete = slices.Delete(plan.Delete, i, i+1)
			continue
		}
		i++
	}
	if ep.DeletionTimestamp != nil {
		plan.Create = nil
	}
	var out Output
	if invalid > 0 {
		out.Actions = append(out.Actions, Action{Type: svcutil.Warn, Reason: ReasonInvalidIPAddress,
			Message: fmt.Sprintf("Skipped %d invalid IP addresses when mirroring to EndpointSlices", invalid)})
	}
	if skipped > 0 {
		out.Actions = append(out.Actions, Action{Type: svcutil.Warn, Reason: ReasonTooManyAddressesToMirror,
			Message: fmt.Sprintf("A max of %d addresses can be mirrored to EndpointSlices per Endpoints subset. %d addresses were skipped",
				DefaultMaxEndpointsPerSubset, skipped)})
	}
	out.Actions = append(out.Actions, plan.Actions()...)
	return out
}

// upToDate reports whether s already mirrors ep with eps: the same
// endpoints (in any order), ep's labels and annotations.
func upToDate(s *discoveryv1.EndpointSlice, ep *corev1.Endpoints, eps []discoveryv1.Endpoint) bool {
	if len(s.Endpoints) != len(eps) {
		return false
	}
	want := map[string]discoveryv1.Endpoint{}
	for _, e := range eps {
		want[endpointKey(&e)] = e
	}
	for i := range s.Endpoints {
		w, ok := want[endpointKey(&s.Endpoints[i])]
		if !ok || !equality.Semantic.DeepEqual(w, s.Endpoints[i]) {
			return false
		}
	}
	labels := maps.Clone(s.Labels)
	delete(labels, discoveryv1.LabelServiceName)
	delete(labels, discoveryv1.LabelManagedBy)
	return equality.Semantic.DeepEqual(labels, withoutKeys(ep.Labels, discoveryv1.LabelServiceName, discoveryv1.LabelManagedBy)) &&
		equality.Semantic.DeepEqual(s.Annotations, mirroredAnnotations(ep))
}

func withoutKeys(m map[string]string, keys ...string) map[string]string {
	out := maps.Clone(m)
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

// mirroredAnnotations are ep's annotations but the trigger time and
// kubectl's last-applied configuration.
func mirroredAnnotations(ep *corev1.Endpoints) map[string]string {
	return withoutKeys(ep.Annotations, corev1.EndpointsLastChangeTriggerTime, corev1.LastAppliedConfigAnnotation)
}

// newSlice is an empty slice mirroring ep, owned by it.
func newSlice(ep *corev1.Endpoints, ports []discoveryv1.EndpointPort, addrType discoveryv1.AddressType) *discoveryv1.EndpointSlice {
	t := true
	labels := maps.Clone(ep.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[discoveryv1.LabelServiceName] = ep.Name
	labels[discoveryv1.LabelManagedBy] = ControllerName
	annotations := mirroredAnnotations(ep)
	if annotations == nil {
		annotations = map[string]string{}
	}
	return &discoveryv1.EndpointSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{GenerateName: ep.Name + "-", Namespace: ep.Namespace, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Endpoints", Name: ep.Name, UID: ep.UID,
				Controller: &t, BlockOwnerDeletion: &t}}},
		AddressType: addrType,
		Ports:       ports,
		Endpoints:   []discoveryv1.Endpoint{},
	}
}

// addressToEndpoint mirrors one address: its IP (normalized) decides the
// address type; ready as the Endpoints lists it; hostname, nodeName and
// targetRef copied.
func addressToEndpoint(a corev1.EndpointAddress, ready bool) (discoveryv1.Endpoint, discoveryv1.AddressType, bool) {
	ip, err := netip.ParseAddr(a.IP)
	if err != nil {
		return discoveryv1.Endpoint{}, "", false
	}
	addrType := discoveryv1.AddressTypeIPv4
	if !ip.Unmap().Is4() {
		addrType = discoveryv1.AddressTypeIPv6
	}
	e := discoveryv1.Endpoint{Addresses: []string{ip.Unmap().String()}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		TargetRef: a.TargetRef, NodeName: a.NodeName}
	if a.Hostname != "" {
		h := a.Hostname
		e.Hostname = &h
	}
	return e, addrType, true
}

func slicePorts(ports []corev1.EndpointPort) []discoveryv1.EndpointPort {
	out := []discoveryv1.EndpointPort{}
	for _, p := range ports {
		name, port, proto := p.Name, p.Port, p.Protocol
		out = append(out, discoveryv1.EndpointPort{Name: &name, Port: &port, Protocol: &proto, AppProtocol: p.AppProtocol})
	}
	return out
}

func portsKey(ports []discoveryv1.EndpointPort) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = fmt.Sprintf("%s/%s/%d/%s", deref(p.Name), deref(p.Protocol), derefInt(p.Port), deref(p.AppProtocol))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func endpointKey(e *discoveryv1.Endpoint) string {
	addrs := slices.Clone(e.Addresses)
	slices.Sort(addrs)
	var ref string
	if e.TargetRef != nil {
		ref = e.TargetRef.Namespace + "/" + e.TargetRef.Name
	}
	return cmp.Or(ref, "-") + "|" + strings.Join(addrs, ",") + "|" + deref(e.Hostname)
}

func deref[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

func derefInt(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
