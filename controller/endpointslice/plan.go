// Package endpointslice is the EndpointSlice controller: for every Service
// with a selector, the EndpointSlices (discovery.k8s.io/v1) that list its
// pods, as Kubernetes' endpointslice controller and its reconciler
// (k8s.io/endpointslice) write them. See README.md.
package endpointslice

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/controller/framework"
	"minik/controller/internal/svcutil"
)

const (
	// Name is the controller's name in logs and flags.
	Name = "endpointslice"
	// ControllerName is the value of the managed-by label on the slices
	// this controller owns.
	ControllerName = "endpointslice-controller.k8s.io"
	// DefaultMaxEndpointsPerSlice is kube-controller-manager's default
	// --max-endpoints-per-slice.
	DefaultMaxEndpointsPerSlice = 100
)

// Input is what one sync of a Service sees.
type Input struct {
	// Service has a selector and is not of type ExternalName.
	Service *corev1.Service
	// Pods are the pods of its namespace its selector matches.
	Pods []*corev1.Pod
	// Node returns a node by name, or nil if there is none (yet): the
	// pods on it are left out, and the driver retries the sync, as
	// Kubernetes does.
	Node func(name string) *corev1.Node
	// Slices are the existing slices labelled with the Service's name and
	// managed by this controller.
	Slices []*discoveryv1.EndpointSlice
	// TriggerTime goes into the last-change-trigger-time annotation of
	// the slices written; zero removes it (see svcutil.TriggerTime).
	TriggerTime time.Time
	// MaxEndpointsPerSlice defaults to DefaultMaxEndpointsPerSlice.
	MaxEndpointsPerSlice int
}

// Action is one slice write: creates have no name (generateName);
// updates are changed copies of existing slices.
type Action = svcutil.SliceAction

// ActionType says what an Action does (svcutil.CreateSlice, UpdateSlice,
// DeleteSlice).
type ActionType = svcutil.SliceActionType

// Output is what a sync writes: creates, then updates, then deletes.
type Output = framework.Output[Action]

// Plan computes the slices of in.Service. It is pure: no IO, no clock.
//
// As Kubernetes' reconciler, it keeps churn low: endpoints are grouped by
// the ports they resolve to (pods whose named targetPort resolves to
// different numbers go in different slices); existing slices keep the
// endpoints still wanted and lose the others, updated in place; new
// endpoints first fill the slices being updated anyway, then the slice
// closest to full that can take them all, and only then new slices; a
// create and a delete become an update of the slice that would go.
func Plan(in Input) Output {
	maxPer := in.MaxEndpointsPerSlice
	if maxPer <= 0 {
		maxPer = DefaultMaxEndpointsPerSlice
	}
	svc := in.Service
	var plan svcutil.SliceWrites

	// Desired endpoints, grouped by their ports.
	type group struct {
		ports   []discoveryv1.EndpointPort
		desired map[string]*discoveryv1.Endpoint // by endpointKey
	}
	groups := map[string]*group{}
	for _, pod := range in.Pods {
		if !svcutil.ShouldPodBeInEndpoints(pod, true) {
			continue
		}
		var node *corev1.Node
		if pod.Spec.NodeName != "" && in.Node != nil {
			if node = in.Node(pod.Spec.NodeName); node == nil {
				continue
			}
		}
		ep := podToEndpoint(pod, node, svc)
		if len(ep.Addresses) == 0 {
			continue
		}
		ports := endpointPorts(svc, pod)
		pk := portsKey(ports)
		g := groups[pk]
		if g == nil {
			g = &group{ports: ports, desired: map[string]*discoveryv1.Endpoint{}}
			groups[pk] = g
		}
		g.desired[endpointKey(&ep)] = &ep
	}

	// Existing slices: ours by port group; others (of an older Service of
	// the same name, or of another address type) go.
	existing := slices.Clone(in.Slices)
	slices.SortFunc(existing, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	byPorts := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		if !ownedBy(s, svc) || s.AddressType != discoveryv1.AddressTypeIPv4 {
			plan.Delete = append(plan.Delete, s)
			continue
		}
		pk := portsKey(s.Ports)
		byPorts[pk] = append(byPorts[pk], s)
	}
	// Slices of port groups no longer wanted go too.
	for _, pk := range slices.Sorted(maps.Keys(byPorts)) {
		if groups[pk] == nil {
			plan.Delete = append(plan.Delete, byPorts[pk]...)
		}
	}
	labels := sliceLabels(svc)
	for _, pk := range slices.Sorted(maps.Keys(groups)) {
		g := groups[pk]
		c, u, d := reconcilePorts(svc, g.ports, g.desired, byPorts[pk], labels, maxPer)
		plan.Create = append(plan.Create, c...)
		plan.Update = append(plan.Update, u...)
		plan.Delete = append(plan.Delete, d...)
	}

	// No endpoints at all: one placeholder slice (no ports, no endpoints)
	// stands for the Service, kept if it is there already.
	if len(plan.Delete) == len(existing) && len(plan.Create) == 0 {
		placeholder := newSlice(svc, nil, labels)
		if len(plan.Delete) == 1 && isPlaceholderOf(plan.Delete[0], placeholder) {
			plan.Delete = nil
		} else {
			plan.Create = append(plan.Create, placeholder)
		}
	}

	// A create and a delete make an update of the slice that would go.
	for i := 0; i < len(plan.Delete) && len(plan.Create) > 0; {
		del := plan.Delete[i]
		last := plan.Create[len(plan.Create)-1]
		if ownedBy(del, svc) && del.AddressType == last.AddressType {
			last.Name, last.ResourceVersion = del.Name, del.ResourceVersion
			plan.Create = plan.Create[:len(plan.Create)-1]
			plan.Update = append(plan.Update, last)
			plan.Delete = slices.Delete(plan.Delete, i, i+1)
			continue
		}
		i++
	}
	if svc.DeletionTimestamp != nil {
		plan.Create = nil // the Service is going: nothing new for it
	}
	for _, s := range plan.Create {
		setTriggerTime(s, in.TriggerTime)
	}
	for _, s := range plan.Update {
		setTriggerTime(s, in.TriggerTime)
	}
	return Output{Actions: plan.Actions()}
}

// reconcilePorts reconciles the slices of one port group.
func reconcilePorts(svc *corev1.Service, ports []discoveryv1.EndpointPort, desired map[string]*discoveryv1.Endpoint,
	existing []*discoveryv1.EndpointSlice, labels map[string]string, maxPer int) (create, update, del []*discoveryv1.EndpointSlice) {
	var unchanged []*discoveryv1.EndpointSlice
	// 1. Keep in each existing slice the endpoints still wanted (updated
	// if they changed), drop the others.
	for _, s := range existing {
		var kept []discoveryv1.Endpoint
		changed := !maps.Equal(s.Labels, labels)
		for i := range s.Endpoints {
			ep := &s.Endpoints[i]
			key := endpointKey(ep)
			want, ok := desired[key]
			if !ok {
				changed = true // gone, or already kept by an earlier slice
				continue
			}
			if !equality.Semantic.DeepEqual(*want, *ep) {
				changed = true
			}
			kept = append(kept, *want)
			delete(desired, key)
		}
		switch {
		case !changed:
			unchanged = append(unchanged, s)
		case len(kept) == 0:
			del = append(del, s)
		default:
			u := s.DeepCopy()
			u.Labels = maps.Clone(labels)
			u.Endpoints = kept
			update = append(update, u)
		}
	}
	rest := sortedEndpoints(desired)
	// 2. New endpoints first fill the slices being updated anyway, the
	// fullest first.
	slices.SortStableFunc(update, func(a, b *discoveryv1.EndpointSlice) int {
		return cmp.Compare(len(b.Endpoints), len(a.Endpoints))
	})
	for _, u := range update {
		for len(rest) > 0 && len(u.Endpoints) < maxPer {
			u.Endpoints = append(u.Endpoints, *rest[0])
			rest = rest[1:]
		}
	}
	// 3. Then the unchanged slice that ends up closest to full taking
	// them all, else new slices.
	for len(rest) > 0 {
		var fill *discoveryv1.EndpointSlice
		if len(rest) < maxPer && len(unchanged) > 0 {
			if i := sliceToFill(unchanged, len(rest), maxPer); i >= 0 {
				fill = unchanged[i].DeepCopy()
				unchanged = slices.Delete(unchanged, i, i+1)
			}
		}
		if fill == nil {
			fill = newSlice(svc, ports, labels)
		}
		for len(rest) > 0 && len(fill.Endpoints) < maxPer {
			fill.Endpoints = append(fill.Endpoints, *rest[0])
			rest = rest[1:]
		}
		if fill.Name != "" {
			update = append(update, fill)
		} else {
			create = append(create, fill)
		}
	}
	return create, update, del
}

// sliceToFill returns the index of the slice that n more endpoints bring
// closest to maxPer without passing it; -1 if none can take them.
func sliceToFill(ss []*discoveryv1.EndpointSlice, n, maxPer int) int {
	best, bestDiff := -1, maxPer
	for i, s := range ss {
		if diff := maxPer - (n + len(s.Endpoints)); diff >= 0 && diff < bestDiff {
			best, bestDiff = i, diff
			if diff == 0 {
				break
			}
		}
	}
	return best
}

func sortedEndpoints(m map[string]*discoveryv1.Endpoint) []*discoveryv1.Endpoint {
	out := make([]*discoveryv1.Endpoint, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}

// podToEndpoint is a pod's endpoint for svc. Serving follows the pod's
// Ready condition; ready too, except while terminating; with
// publishNotReadyAddresses every endpoint is ready.
func podToEndpoint(pod *corev1.Pod, node *corev1.Node, svc *corev1.Service) discoveryv1.Endpoint {
	serving := framework.IsPodReady(pod)
	terminating := pod.DeletionTimestamp != nil
	ready := svc.Spec.PublishNotReadyAddresses || (serving && !terminating)
	ep := discoveryv1.Endpoint{
		Addresses:  svcutil.PodIPv4s(pod),
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if pod.Spec.NodeName != "" {
		n := pod.Spec.NodeName
		ep.NodeName = &n
	}
	if node != nil && node.Labels[corev1.LabelTopologyZone] != "" {
		z := node.Labels[corev1.LabelTopologyZone]
		ep.Zone = &z
	}
	if svcutil.ShouldSetHostname(pod, svc) {
		h := pod.Spec.Hostname
		ep.Hostname = &h
	}
	return ep
}

// endpointPorts resolves svc's ports on pod; ports that do not resolve
// (a named targetPort the pod lacks) are left out. A headless Service
// may have no ports.
func endpointPorts(svc *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	out := []discoveryv1.EndpointPort{}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		n, ok := svcutil.FindPort(pod, sp)
		if !ok {
			continue
		}
		name, proto := sp.Name, sp.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		out = append(out, discoveryv1.EndpointPort{Name: &name, Protocol: &proto, Port: &n, AppProtocol: sp.AppProtocol})
	}
	return out
}

// portsKey identifies a set of endpoint ports, in any order.
func portsKey(ports []discoveryv1.EndpointPort) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = fmt.Sprintf("%s/%s/%d/%s", deref(p.Name), deref(p.Protocol), derefInt(p.Port), deref(p.AppProtocol))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// endpointKey identifies an endpoint as Kubernetes' endpoint set hashes
// it: addresses, hostname and the pod it stands for. Two endpoints with
// the same key are the same endpoint, perhaps in another state.
func endpointKey(ep *discoveryv1.Endpoint) string {
	addrs := slices.Clone(ep.Addresses)
	slices.Sort(addrs)
	var ref string
	if ep.TargetRef != nil {
		ref = ep.TargetRef.Namespace + "/" + ep.TargetRef.Name
	}
	return ref + "|" + strings.Join(addrs, ",") + "|" + deref(ep.Hostname)
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

// sliceLabels are the labels of svc's slices: the Service's own (but the
// reserved ones), the headless label for a Service without cluster IP,
// the Service's name and this controller's.
func sliceLabels(svc *corev1.Service) map[string]string {
	out := map[string]string{}
	for k, v := range svc.Labels {
		if k != discoveryv1.LabelServiceName && k != discoveryv1.LabelManagedBy {
			out[k] = v
		}
	}
	if !svcutil.IsServiceIPSet(svc) {
		out[corev1.IsHeadlessService] = ""
	} else {
		delete(out, corev1.IsHeadlessService)
	}
	out[discoveryv1.LabelServiceName] = svc.Name
	out[discoveryv1.LabelManagedBy] = ControllerName
	return out
}

// newSlice is an empty slice of svc for ports, named by the apiserver
// (generateName "<service>-").
func newSlice(svc *corev1.Service, ports []discoveryv1.EndpointPort, labels map[string]string) *discoveryv1.EndpointSlice {
	t := true
	prefix := svc.Name + "-"
	if len(prefix) > 253 {
		prefix = svc.Name
	}
	return &discoveryv1.EndpointSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Namespace: svc.Namespace, Labels: maps.Clone(labels),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
				Controller: &t, BlockOwnerDeletion: &t}}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       ports,
		Endpoints:   []discoveryv1.Endpoint{},
	}
}

// isPlaceholderOf reports whether s is already the placeholder p.
func isPlaceholderOf(s, p *discoveryv1.EndpointSlice) bool {
	return s.Namespace == p.Namespace && maps.Equal(s.Labels, p.Labels) &&
		len(s.Endpoints) == 0 && len(s.Ports) == 0 && s.AddressType == p.AddressType &&
		equality.Semantic.DeepEqual(s.OwnerReferences, p.OwnerReferences)
}

// ownedBy reports whether s names svc (by UID) as an owner.
func ownedBy(s *discoveryv1.EndpointSlice, svc *corev1.Service) bool {
	for _, o := range s.OwnerReferences {
		if o.UID == svc.UID && o.Kind == "Service" && o.APIVersion == "v1" {
			return true
		}
	}
	return false
}

func setTriggerTime(s *discoveryv1.EndpointSlice, t time.Time) {
	if t.IsZero() {
		delete(s.Annotations, corev1.EndpointsLastChangeTriggerTime)
		return
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[corev1.EndpointsLastChangeTriggerTime] = t.UTC().Format(time.RFC3339Nano)
}
