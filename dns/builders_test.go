package dns

import (
	"net"
	"slices"
	"strings"
	"testing"

	miekg "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Small builders for the objects the tests feed the store.

type svcBuilder struct{ s *corev1.Service }

func makeService(ns, name string) svcBuilder {
	return svcBuilder{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}}}
}

func (b svcBuilder) IPs(ips ...string) svcBuilder {
	b.s.Spec.ClusterIP, b.s.Spec.ClusterIPs = ips[0], ips
	return b
}

func (b svcBuilder) Headless() svcBuilder { return b.IPs(corev1.ClusterIPNone) }

func (b svcBuilder) Port(name string, port int32, proto corev1.Protocol) svcBuilder {
	b.s.Spec.Ports = append(b.s.Spec.Ports, corev1.ServicePort{Name: name, Port: port, Protocol: proto})
	return b
}

func (b svcBuilder) ExternalName(target string) svcBuilder {
	b.s.Spec.Type, b.s.Spec.ExternalName = corev1.ServiceTypeExternalName, target
	return b
}

func (b svcBuilder) PublishNotReady() svcBuilder {
	b.s.Spec.PublishNotReadyAddresses = true
	return b
}

func (b svcBuilder) Obj() *corev1.Service { return b.s }

type sliceBuilder struct{ s *discoveryv1.EndpointSlice }

func makeSlice(ns, name, service string) sliceBuilder {
	return sliceBuilder{&discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}}
}

func (b sliceBuilder) Type(t discoveryv1.AddressType) sliceBuilder {
	b.s.AddressType = t
	return b
}

func (b sliceBuilder) Port(name string, port int32, proto corev1.Protocol) sliceBuilder {
	b.s.Ports = append(b.s.Ports, discoveryv1.EndpointPort{Name: &name, Port: &port, Protocol: &proto})
	return b
}

// Ready adds a ready endpoint; hostname may be "".
func (b sliceBuilder) Ready(hostname string, addrs ...string) sliceBuilder {
	return b.endpoint(true, hostname, addrs)
}

// NotReady adds an endpoint whose ready condition is false.
func (b sliceBuilder) NotReady(hostname string, addrs ...string) sliceBuilder {
	return b.endpoint(false, hostname, addrs)
}

func (b sliceBuilder) endpoint(ready bool, hostname string, addrs []string) sliceBuilder {
	ep := discoveryv1.Endpoint{Addresses: addrs, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}
	if hostname != "" {
		ep.Hostname = &hostname
	}
	b.s.Endpoints = append(b.s.Endpoints, ep)
	return b
}

func (b sliceBuilder) Obj() *discoveryv1.EndpointSlice { return b.s }

// newTestStore is a synced store for cluster.local, TTL 30, whose
// nameserver is 10.96.0.10.
func newTestStore() *Store {
	s := NewStore(StoreConfig{Nameservers: []net.IP{net.ParseIP("10.96.0.10")}})
	s.SetSynced(true)
	return s
}

// rrStrings renders records as dig does, one space between fields, in
// sorted order so that tests need not care about record order.
func rrStrings(rrs []miekg.RR) []string {
	out := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		out = append(out, strings.Join(strings.Fields(rr.String()), " "))
	}
	slices.Sort(out)
	return out
}

// soaLine is how the tests' store renders its SOA, serial aside.
const soaPrefix = "cluster.local. 30 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. "

func checkSOA(t *testing.T, ns []miekg.RR) {
	t.Helper()
	if len(ns) != 1 || !strings.HasPrefix(rrStrings(ns)[0], soaPrefix) || !strings.HasSuffix(rrStrings(ns)[0], " 7200 1800 86400 30") {
		t.Errorf("authority %v, want the zone's SOA", rrStrings(ns))
	}
}
