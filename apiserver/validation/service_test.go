package validation

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"minik/apiserver/defaults"
)

// service returns a valid, defaulted, allocated ClusterIP service with
// edits applied after defaulting.
func service(edits ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{ObjectMeta: objMeta("web"), Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"},
		Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
	}}
	defaults.Object(s)
	s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.20", []string{"10.96.0.20"}
	s.Spec.IPFamilies, s.Spec.IPFamilyPolicy = []corev1.IPFamily{corev1.IPv4Protocol}, ptr.To(corev1.IPFamilyPolicySingleStack)
	for _, e := range edits {
		e(s)
	}
	return s
}

func nodePort(s *corev1.Service) {
	s.Spec.Type = corev1.ServiceTypeNodePort
	s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	s.Spec.Ports[0].NodePort = 30080
}

func headless(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "None", []string{"None"} }

func ports(p ...corev1.ServicePort) func(*corev1.Service) {
	return func(s *corev1.Service) {
		for i := range p {
			if p[i].Protocol == "" {
				p[i].Protocol = corev1.ProtocolTCP
			}
			if p[i].TargetPort.IntVal == 0 && p[i].TargetPort.StrVal == "" {
				p[i].TargetPort = intstr.FromInt32(p[i].Port)
			}
		}
		s.Spec.Ports = p
	}
}

func TestServiceCreate(t *testing.T) {
	tests := []struct {
		name string
		svc  *corev1.Service
		want []want
	}{
		{name: "a ClusterIP service with a selector is valid", svc: service()},
		{name: "a NodePort service is valid", svc: service(nodePort)},
		{name: "a headless service without ports is valid", svc: service(headless, ports())},
		{name: "a LoadBalancer service is valid", svc: service(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			defaults.Object(s)
		})},
		{name: "an ExternalName service without cluster IPs is valid", svc: service(func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeExternalName, "db.example.com."
			s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.IPFamilies, s.Spec.IPFamilyPolicy = "", nil, nil, nil
		})},
		{
			name: "a service name may start with a digit (an RFC 1123 label, RelaxedServiceNameValidation)",
			svc:  service(func(s *corev1.Service) { s.Name = "1web" }),
		},
		{
			name: "a service name may be all digits",
			svc:  service(func(s *corev1.Service) { s.Name = "8080" }),
		},
		{
			name: "a service name must be an RFC 1123 label: no dots",
			svc:  service(func(s *corev1.Service) { s.Name = "web.api" }),
			want: []want{{field.ErrorTypeInvalid, "metadata.name", "must not contain dots"}},
		},
		{
			name: "a service name must be an RFC 1123 label: no underscores",
			svc:  service(func(s *corev1.Service) { s.Name = "web_api" }),
			want: []want{{field.ErrorTypeInvalid, "metadata.name", "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'"}},
		},
		{
			name: "a service name must be an RFC 1123 label: no upper case",
			svc:  service(func(s *corev1.Service) { s.Name = "Web" }),
			want: []want{{field.ErrorTypeInvalid, "metadata.name", "a lowercase RFC 1123 label"}},
		},
		{
			name: "a service name must be an RFC 1123 label: at most 63 characters",
			svc:  service(func(s *corev1.Service) { s.Name = strings.Repeat("a", 64) }),
			want: []want{{field.ErrorTypeInvalid, "metadata.name", "must be no more than 63 characters"}},
		},
		{
			name: "a service needs ports unless headless or ExternalName",
			svc:  service(ports()),
			want: []want{{field.ErrorTypeRequired, "spec.ports", ""}},
		},
		{
			name: "a port number must be between 1 and 65535",
			svc:  service(ports(corev1.ServicePort{Port: 70000, TargetPort: intstr.FromInt32(80)})),
			want: []want{{field.ErrorTypeInvalid, "spec.ports[0].port", "between 1 and 65535"}},
		},
		{
			name: "every port must be named when there are several",
			svc:  service(ports(corev1.ServicePort{Port: 80}, corev1.ServicePort{Name: "b", Port: 81})),
			want: []want{{field.ErrorTypeRequired, "spec.ports[0].name", ""}},
		},
		{
			name: "port names must be unique",
			svc:  service(ports(corev1.ServicePort{Name: "a", Port: 80}, corev1.ServicePort{Name: "a", Port: 81})),
			want: []want{{field.ErrorTypeDuplicate, "spec.ports[1].name", ""}},
		},
		{
			name: "a port and protocol may appear once",
			svc:  service(ports(corev1.ServicePort{Name: "a", Port: 80}, corev1.ServicePort{Name: "b", Port: 80})),
			want: []want{{field.ErrorTypeDuplicate, "spec.ports[1]", ""}},
		},
		{
			name: "the same port may serve TCP and UDP",
			svc: service(ports(corev1.ServicePort{Name: "a", Port: 53},
				corev1.ServicePort{Name: "b", Port: 53, Protocol: corev1.ProtocolUDP})),
		},
		{
			name: "a named target port must be a valid port name",
			svc:  service(ports(corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("Not_A_Name")})),
			want: []want{{field.ErrorTypeInvalid, "spec.ports[0].targetPort", ""}},
		},
		{
			name: "an unknown protocol is not supported",
			svc:  service(ports(corev1.ServicePort{Port: 80, Protocol: "ICMP"})),
			want: []want{{field.ErrorTypeNotSupported, "spec.ports[0].protocol", ""}},
		},
		{
			name: "a ClusterIP service may not ask for node ports",
			svc:  service(func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30080 }),
			want: []want{{field.ErrorTypeForbidden, "spec.ports[0].nodePort", "may not be used when `type` is 'ClusterIP'"}},
		},
		{
			name: "a node port and protocol may appear once",
			svc: service(nodePort, ports(corev1.ServicePort{Name: "a", Port: 80, NodePort: 30080},
				corev1.ServicePort{Name: "b", Port: 81, NodePort: 30080})),
			want: []want{{field.ErrorTypeDuplicate, "spec.ports[1].nodePort", ""}},
		},
		{
			name: "a headless NodePort service is refused",
			svc:  service(nodePort, headless),
			want: []want{{field.ErrorTypeInvalid, "spec.clusterIPs[0]", "may not be set to 'None' for NodePort services"}},
		},
		{
			name: "a headless LoadBalancer is refused",
			svc: service(headless, func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeLoadBalancer
				defaults.Object(s)
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.clusterIPs[0]", "may not be set to 'None' for LoadBalancer services"}},
		},
		{
			name: "an ExternalName service needs a DNS name and no cluster IP",
			svc: service(func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeExternalName
			}),
			want: []want{
				{field.ErrorTypeForbidden, "spec.clusterIPs", "may not be set for ExternalName services"},
				{field.ErrorTypeForbidden, "spec.ipFamilies", ""},
				{field.ErrorTypeForbidden, "spec.ipFamilyPolicy", ""},
				{field.ErrorTypeRequired, "spec.externalName", ""},
			},
		},
		{
			name: "an ExternalName must be a DNS subdomain",
			svc: service(func(s *corev1.Service) {
				s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeExternalName, "not a name"
				s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.IPFamilies, s.Spec.IPFamilyPolicy = "", nil, nil, nil
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.externalName", ""}},
		},
		{
			name: "clusterIPs must start with clusterIP",
			svc:  service(func(s *corev1.Service) { s.Spec.ClusterIPs = []string{"10.96.0.21"} }),
			want: []want{{field.ErrorTypeInvalid, "spec.clusterIPs", "first value must match `clusterIP`"}},
		},
		{
			name: "a cluster IP must be an IP",
			svc:  service(func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.300", []string{"10.96.0.300"} }),
			want: []want{{field.ErrorTypeInvalid, "spec.clusterIPs[0]", "must be a valid IP address"}},
		},
		{
			name: "an unknown type is not supported",
			svc:  service(func(s *corev1.Service) { s.Spec.Type = "Magic" }),
			want: []want{{field.ErrorTypeNotSupported, "spec.type", ""}},
		},
		{
			name: "ClientIP affinity timeouts are limited to a day",
			svc: service(func(s *corev1.Service) {
				s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
				s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](86401)}}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.sessionAffinityConfig.clientIP.timeoutSeconds", "must be greater than 0 and less than 86400"}},
		},
		{
			name: "session affinity config is forbidden without affinity",
			svc: service(func(s *corev1.Service) {
				s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{}
			}),
			want: []want{{field.ErrorTypeForbidden, "spec.sessionAffinityConfig", "must not be set when session affinity is None"}},
		},
		{
			name: "externalTrafficPolicy is only for externally reachable services",
			svc:  service(func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal }),
			want: []want{{field.ErrorTypeInvalid, "spec.externalTrafficPolicy", "may only be set for externally-accessible services"}},
		},
		{
			name: "a loopback external IP is refused",
			svc:  service(func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"127.0.0.1"} }),
			want: []want{
				{field.ErrorTypeInvalid, "spec.externalIPs[0]", "loopback"},
				// External IPs make a ClusterIP service externally reachable.
				{field.ErrorTypeRequired, "spec.externalTrafficPolicy", ""},
			},
		},
		{
			name: "source ranges are only for LoadBalancers",
			svc:  service(func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"} }),
			want: []want{{field.ErrorTypeForbidden, "spec.LoadBalancerSourceRanges", ""}},
		},
		{
			name: "allocateLoadBalancerNodePorts is only for LoadBalancers",
			svc:  service(func(s *corev1.Service) { s.Spec.AllocateLoadBalancerNodePorts = ptr.To(true) }),
			want: []want{{field.ErrorTypeForbidden, "spec.allocateLoadBalancerNodePorts", ""}},
		},
		{
			name: "an undefaulted service lacks the defaulted fields",
			svc: &corev1.Service{ObjectMeta: objMeta("raw"), Spec: corev1.ServiceSpec{
				Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)}}}},
			want: []want{
				{field.ErrorTypeRequired, "spec.sessionAffinity", ""},
				{field.ErrorTypeRequired, "spec.type", ""},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertErrors(t, Create(tc.svc, true), tc.want)
		})
	}
}

func TestServiceUpdate(t *testing.T) {
	tests := []struct {
		name     string
		old, svc *corev1.Service
		want     []want
	}{
		{name: "a selector may change", old: service(), svc: service(func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "v2"} })},
		{name: "a ClusterIP service may become NodePort", old: service(), svc: service(nodePort)},
		{
			name: "the name is not checked again on update: it is immutable",
			old:  service(func(s *corev1.Service) { s.Name = "Web.1" }),
			svc:  service(func(s *corev1.Service) { s.Name = "Web.1"; s.Labels = map[string]string{"tier": "front"} }),
		},
		{
			name: "the cluster IP may not change",
			old:  service(),
			svc:  service(func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.21", []string{"10.96.0.21"} }),
			want: []want{{field.ErrorTypeInvalid, "spec.clusterIPs[0]", "may not change once set"}},
		},
		{
			name: "a service may not become headless",
			old:  service(),
			svc:  service(headless),
			want: []want{{field.ErrorTypeInvalid, "spec.clusterIPs[0]", "may not change once set"}},
		},
		{
			name: "a headless service may not lose its None",
			old:  service(headless),
			svc:  service(func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil }),
			want: []want{{field.ErrorTypeInvalid, "spec.clusterIPs[0]", "primary clusterIP can not be unset"}},
		},
		{
			name: "the IP family may not change",
			old:  service(),
			svc:  service(func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} }),
			want: []want{
				{field.ErrorTypeInvalid, "spec.ipFamilies[0]", "may not change once set"},
				{field.ErrorTypeInvalid, "spec.clusterIPs[0]", "expected an IPv6 value"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertErrors(t, Update(tc.svc, tc.old, true), tc.want)
		})
	}
}

func TestServiceStatusUpdate(t *testing.T) {
	lb := func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		defaults.Object(s)
	}
	ingress := func(in ...corev1.LoadBalancerIngress) func(*corev1.Service) {
		return func(s *corev1.Service) { s.Status.LoadBalancer.Ingress = in }
	}
	vip := ptr.To(corev1.LoadBalancerIPModeVIP)
	tests := []struct {
		name string
		svc  *corev1.Service
		want []want
	}{
		{name: "a load balancer may report its IP", svc: service(lb, ingress(corev1.LoadBalancerIngress{IP: "192.0.2.10", IPMode: vip}))},
		{
			name: "only a LoadBalancer has ingress",
			svc:  service(ingress(corev1.LoadBalancerIngress{IP: "192.0.2.10", IPMode: vip})),
			want: []want{{field.ErrorTypeForbidden, "status.loadBalancer.ingress", ""}},
		},
		{
			name: "an ingress hostname may not be an IP",
			svc:  service(lb, ingress(corev1.LoadBalancerIngress{Hostname: "192.0.2.10"})),
			want: []want{{field.ErrorTypeInvalid, "status.loadBalancer.ingress[0].hostname", "must be a DNS name, not an IP address"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := tc.svc.DeepCopy()
			old.Status = corev1.ServiceStatus{}
			assertErrors(t, StatusUpdate(tc.svc, old), tc.want)
		})
	}
}

func endpoints(subsets ...corev1.EndpointSubset) *corev1.Endpoints {
	ep := &corev1.Endpoints{ObjectMeta: objMeta("web"), Subsets: subsets}
	defaults.Object(ep)
	return ep
}

func slice(addrType discoveryv1.AddressType, eps []discoveryv1.Endpoint, ports ...discoveryv1.EndpointPort) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: objMeta("web-abcde"), AddressType: addrType, Endpoints: eps, Ports: ports}
	defaults.Object(s)
	return s
}

func TestEndpointsAndSlicesCreate(t *testing.T) {
	addrs := func(ips ...string) []corev1.EndpointAddress {
		var out []corev1.EndpointAddress
		for _, ip := range ips {
			out = append(out, corev1.EndpointAddress{IP: ip})
		}
		return out
	}
	many := make([]discoveryv1.Endpoint, 1001)
	for i := range many {
		many[i] = discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.244.%d.%d", i/250, i%250+1)}}
	}
	tests := []struct {
		name string
		run  func() field.ErrorList
		want []want
	}{
		{name: "endpoints with ready and not-ready addresses are valid", run: func() field.ErrorList {
			return Create(endpoints(corev1.EndpointSubset{Addresses: addrs("10.244.0.5"), NotReadyAddresses: addrs("10.244.0.6"),
				Ports: []corev1.EndpointPort{{Port: 8080}}}), true)
		}},
		{name: "an endpoints subset needs an address", run: func() field.ErrorList {
			return Create(endpoints(corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Port: 8080}}}), true)
		}, want: []want{{field.ErrorTypeRequired, "subsets[0]", "must specify `addresses` or `notReadyAddresses`"}}},
		{name: "an endpoint address may not be loopback", run: func() field.ErrorList {
			return Create(endpoints(corev1.EndpointSubset{Addresses: addrs("127.0.0.1")}), true)
		}, want: []want{{field.ErrorTypeInvalid, "subsets[0].addresses[0].ip", "loopback"}}},
		{name: "several endpoint ports must be named", run: func() field.ErrorList {
			return Create(endpoints(corev1.EndpointSubset{Addresses: addrs("10.244.0.5"), Ports: []corev1.EndpointPort{{Port: 80}, {Name: "b", Port: 81}}}), true)
		}, want: []want{{field.ErrorTypeRequired, "subsets[0].ports[0].name", ""}}},
		{name: "a slice of ready IPv4 endpoints is valid", run: func() field.ErrorList {
			return Create(slice(discoveryv1.AddressTypeIPv4, []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.5"},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}, NodeName: ptr.To("node-1")}},
				discoveryv1.EndpointPort{Port: ptr.To[int32](8080)}), true)
		}},
		{name: "a slice needs an address type", run: func() field.ErrorList {
			return Create(slice("", nil), true)
		}, want: []want{{field.ErrorTypeRequired, "addressType", ""}}},
		{name: "an unknown address type is not supported", run: func() field.ErrorList {
			return Create(slice("IP", nil), true)
		}, want: []want{{field.ErrorTypeNotSupported, "addressType", ""}}},
		{name: "a slice holds at most 1000 endpoints", run: func() field.ErrorList {
			return Create(slice(discoveryv1.AddressTypeIPv4, many), true)
		}, want: []want{{field.ErrorTypeTooMany, "endpoints", ""}}},
		{name: "an IPv4 slice may not hold IPv6 addresses", run: func() field.ErrorList {
			return Create(slice(discoveryv1.AddressTypeIPv4, []discoveryv1.Endpoint{{Addresses: []string{"fd00::5"}}}), true)
		}, want: []want{{field.ErrorTypeInvalid, "endpoints[0].addresses[0]", "must be a valid IPv4 address"}}},
		{name: "an endpoint needs an address", run: func() field.ErrorList {
			return Create(slice(discoveryv1.AddressTypeIPv4, []discoveryv1.Endpoint{{}}), true)
		}, want: []want{{field.ErrorTypeRequired, "endpoints[0].addresses", "must contain at least 1 address"}}},
		{name: "slice port names must be unique", run: func() field.ErrorList {
			return Create(slice(discoveryv1.AddressTypeIPv4, nil, discoveryv1.EndpointPort{Name: ptr.To("http")},
				discoveryv1.EndpointPort{Name: ptr.To("http")}), true)
		}, want: []want{{field.ErrorTypeDuplicate, "ports[1].name", ""}}},
		{name: "a slice's address type may not change", run: func() field.ErrorList {
			old := slice(discoveryv1.AddressTypeIPv4, nil)
			return Update(slice(discoveryv1.AddressTypeIPv6, nil), old, true)
		}, want: []want{{field.ErrorTypeInvalid, "addressType", "field is immutable"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertErrors(t, tc.run(), tc.want)
		})
	}
}
