package proxy

import (
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Small builders for the tests' Services and EndpointSlices.

type svcBuilder struct{ s *corev1.Service }

func makeService(ns, name, clusterIP string) *svcBuilder {
	return &svcBuilder{&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: clusterIP},
	}}
}

func (b *svcBuilder) Port(name string, proto corev1.Protocol, port int32, target intstr.IntOrString) *svcBuilder {
	b.s.Spec.Ports = append(b.s.Spec.Ports, corev1.ServicePort{Name: name, Protocol: proto, Port: port, TargetPort: target})
	return b
}

func (b *svcBuilder) NodePort(port int32) *svcBuilder {
	if b.s.Spec.Type == corev1.ServiceTypeClusterIP {
		b.s.Spec.Type = corev1.ServiceTypeNodePort
	}
	b.s.Spec.Ports[len(b.s.Spec.Ports)-1].NodePort = port
	return b
}

func (b *svcBuilder) Type(t corev1.ServiceType) *svcBuilder { b.s.Spec.Type = t; return b }

// LoadBalancer makes it a LoadBalancer Service with these ingress IPs
// (as a cloud's controller would set them) and source ranges.
func (b *svcBuilder) LoadBalancer(ingress []string, sourceRanges ...string) *svcBuilder {
	b.s.Spec.Type = corev1.ServiceTypeLoadBalancer
	b.s.Status.LoadBalancer.Ingress = nil
	for _, ip := range ingress {
		b.s.Status.LoadBalancer.Ingress = append(b.s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
	}
	b.s.Spec.LoadBalancerSourceRanges = sourceRanges
	return b
}

func (b *svcBuilder) Affinity(seconds int32) *svcBuilder {
	b.s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	b.s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &seconds}}
	return b
}

func (b *svcBuilder) ExternalLocal() *svcBuilder {
	b.s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	return b
}

func (b *svcBuilder) InternalLocal() *svcBuilder {
	p := corev1.ServiceInternalTrafficPolicyLocal
	b.s.Spec.InternalTrafficPolicy = &p
	return b
}

func (b *svcBuilder) ExternalName(host string) *svcBuilder {
	b.s.Spec.Type, b.s.Spec.ExternalName, b.s.Spec.ClusterIP = corev1.ServiceTypeExternalName, host, ""
	return b
}

func (b *svcBuilder) Obj() *corev1.Service { return b.s.DeepCopy() }

type sliceBuilder struct{ s *discoveryv1.EndpointSlice }

func makeSlice(ns, name, service string) *sliceBuilder {
	return &sliceBuilder{&discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{ServiceNameLabel: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}}
}

func (b *sliceBuilder) Port(name string, proto corev1.Protocol, port int32) *sliceBuilder {
	b.s.Ports = append(b.s.Ports, discoveryv1.EndpointPort{Name: &name, Protocol: &proto, Port: &port})
	return b
}

// epState is an endpoint's conditions.
type epState int

const (
	ready          epState = iota
	notReady               // not ready, not serving, not terminating
	servingTerm            // terminating but still serving
	notServingTerm         // terminating and no longer serving
)

func (b *sliceBuilder) Endpoint(ip, node string, st epState) *sliceBuilder {
	t, f := true, false
	var c discoveryv1.EndpointConditions
	switch st {
	case ready:
		c = discoveryv1.EndpointConditions{Ready: &t, Serving: &t, Terminating: &f}
	case notReady:
		c = discoveryv1.EndpointConditions{Ready: &f, Serving: &f, Terminating: &f}
	case servingTerm:
		c = discoveryv1.EndpointConditions{Ready: &f, Serving: &t, Terminating: &t}
	case notServingTerm:
		c = discoveryv1.EndpointConditions{Ready: &f, Serving: &f, Terminating: &t}
	}
	e := discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: c}
	if node != "" {
		e.NodeName = &node
	}
	b.s.Endpoints = append(b.s.Endpoints, e)
	return b
}

func (b *sliceBuilder) TriggerTime(t time.Time) *sliceBuilder {
	if b.s.Annotations == nil {
		b.s.Annotations = map[string]string{}
	}
	b.s.Annotations[corev1.EndpointsLastChangeTriggerTime] = t.Format(time.RFC3339Nano)
	return b
}

func (b *sliceBuilder) Obj() *discoveryv1.EndpointSlice { return b.s.DeepCopy() }

// testConfig is the node of the plan tests: node-a, pods in 10.244.0.0/16,
// Services in 10.96.0.0/12.
var testConfig = Config{NodeName: "node-a", ClusterCIDR: netip.MustParsePrefix("10.244.0.0/16"),
	ServiceCIDR: netip.MustParsePrefix("10.96.0.0/12")}

var (
	tcp = corev1.ProtocolTCP
	udp = corev1.ProtocolUDP
)

func num(n int) intstr.IntOrString      { return intstr.FromInt32(int32(n)) }
func named(s string) intstr.IntOrString { return intstr.FromString(s) }
