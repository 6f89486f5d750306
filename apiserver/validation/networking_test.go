package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// networkPolicy is a defaulted policy that lets the web pods take TCP 80
// from the frontend pods and reach 10.0.0.0/8 but 10.1.0.0/16.
func networkPolicy(edits ...func(*networkingv1.NetworkPolicy)) *networkingv1.NetworkPolicy {
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(80))}},
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "frontend"}}}},
			}},
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}}},
			}},
		}}
	return defaulted(np, edits)
}

func pathType(t networkingv1.PathType) *networkingv1.PathType { return &t }

// ingress routes web.example.com/ to the Service web's port 80, with TLS.
func ingress(edits ...func(*networkingv1.Ingress)) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr.To("nginx"),
			Rules: []networkingv1.IngressRule{{Host: "web.example.com", IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
					Path: "/", PathType: pathType(networkingv1.PathTypePrefix),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web",
						Port: networkingv1.ServiceBackendPort{Number: 80}}},
				}}},
			}}},
			TLS: []networkingv1.IngressTLS{{Hosts: []string{"web.example.com"}, SecretName: "web-tls"}},
		}}
	return defaulted(ing, edits)
}

// firstPath is the first path of the first rule.
func firstPath(ing *networkingv1.Ingress) *networkingv1.HTTPIngressPath {
	return &ing.Spec.Rules[0].HTTP.Paths[0]
}

func ingressClass(edits ...func(*networkingv1.IngressClass)) *networkingv1.IngressClass {
	ic := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx", ResourceVersion: "1"},
		Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx",
			Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr.To("k8s.example.com"),
				Kind: "IngressParameters", Name: "external-lb"}}}
	return defaulted(ic, edits)
}

func TestNetworkingKindsCreate(t *testing.T) {
	tests := []struct {
		name       string
		obj        runtime.Object
		namespaced bool
		want       []want
	}{
		{name: "a defaulted policy with ingress and egress rules is valid", obj: networkPolicy(), namespaced: true},
		{name: "a policy that selects every pod and allows nothing is valid", namespaced: true,
			obj: networkPolicy(func(np *networkingv1.NetworkPolicy) { np.Spec = networkingv1.NetworkPolicySpec{} })},
		{name: "a policy's pod selector is a valid label selector", namespaced: true,
			obj: networkPolicy(func(np *networkingv1.NetworkPolicy) {
				np.Spec.PodSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.podSelector.matchExpressions[0].operator", "not a valid selector operator"}}},
		{name: "a policy lives in a namespace", namespaced: true,
			obj:  networkPolicy(func(np *networkingv1.NetworkPolicy) { np.Namespace = "" }),
			want: []want{{field.ErrorTypeRequired, "metadata.namespace", ""}}},
		{name: "a port number is between 1 and 65535", namespaced: true,
			obj: networkPolicy(func(np *networkingv1.NetworkPolicy) {
				np.Spec.Ingress[0].Ports[0].Port = ptr.To(intstr.FromInt32(70000))
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.ingress[0].ports[0].port", "must be between 1 and 65535, inclusive"}}},
		{name: "a named port is an IANA service name", namespaced: true,
			obj: networkPolicy(func(np *networkingv1.NetworkPolicy) {
				np.Spec.Ingress[0].Ports[0].Port = ptr.To(intstr.FromString("Not_A_Name"))
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.ingress[0].ports[0].port", "must contain only alpha-numeric characters"}}},
		{name: "a port range ends at or after its start", namespaced: true,
			obj: networkPolicy(func(np *networkingv1.NetworkPolicy) {
				np.Spec.Ingress[0].Ports[0] = networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP),
					Port: ptr.To(intstr.FromInt32(8080)), EndPort: ptr.To[int32](8000)}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.ingress[0].ports[0].endPort", "must be greater than or equal to `port`"}}},
		{name: "a port range needs a numeric start", namespaced: true,
			obj: networkPolicy(func(np *networkingv1.NetworkPolicy) {
				np.Spec.Ingress[0].Ports[0] = networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP),
					Port: ptr.To(intstr.FromString("http")), EndPort: ptr.To[int32](8000)}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.ingress[0].ports[0].endPort", "may not be specified when `port` is non-numeric"}}},
		{name: "a port range needs a start at all", namespaced: true,
			obj: networkPolicy(func(np *networkingv1.NetworkPolicy) {
				np.Spec.Ingress[0].Ports[0] = networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), EndPort: ptr.To[int32](8000)}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.ingress[0].ports[0].endPort", "may not be specified when `port` is not specified"}}},
		{name: "a port's protocol is TCP, UDP or SCTP", namespaced: true,
			obj: networkPolicy(func(np *networkingv1.NetworkPolicy) {
				np.Spec.Ingress[0].Ports[0].Protocol = ptr.To(corev1.Protocol("ICMP"))
			}),
			want: []want{{field.ErrorTypeNotSupported, "spec.ingress[0].ports[0].protocol", `"TCP", "UDP", "SCTP"`}}},
		{name: "an ipBlock's cidr is a CIDR", namespaced: true,
			obj: networkPolicy(func(np *networkingv1.NetworkPolicy) {
				np.Spec.Egress[0].To[0].IPBlock = &networkingv1.IPBlock{CIDR: "10.0.0.0/33"}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.egress[0].to[0].ipBlock.cidr", "must be a valid CIDR value"}}},
		{name: "an ipBlock needs a cidr", namespaced: true,
			obj: networkPolicy(func(np *networkingv1.NetworkPolicy) {
				np.Spec.Egress[0].To[0].IPBlock = &networkingv1.IPBlock{}
			}),
			want: []want{{field.ErrorTypeRequired, "spec.egress[0].to[0].ipBlock.cidr", ""}}},
		{name: "an exception lies strictly within the cidr", namespaced: true,
			obj: networkPolicy(func(np *networkingv1.NetworkPolicy) {
				np.Spec.Egress[0].To[0].IPBlock.Except = []string{"192.168.0.0/16", "10.0.0.0/8"}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.egress[0].to[0].ipBlock.except[0]", "must be a strict subset of `cidr`"},
				{field.ErrorTypeInvalid, "spec.egress[0].to[0].ipBlock.except[1]", "must be a strict subset of `cidr`"}}},
		{name: "a peer selects something", namespaced: true,
			obj: networkPolicy(func(np *networkingv1.NetworkPolicy) {
				np.Spec.Ingress[0].From[0] = networkingv1.NetworkPolicyPeer{}
			}),
			want: []want{{field.ErrorTypeRequired, "spec.ingress[0].from[0]", "must specify a peer"}}},
		{name: "an ipBlock peer stands alone", namespaced: true,
			obj: networkPolicy(func(np *networkingv1.NetworkPolicy) {
				np.Spec.Egress[0].To[0].NamespaceSelector = &metav1.LabelSelector{}
			}),
			want: []want{{field.ErrorTypeForbidden, "spec.egress[0].to[0]", "may not specify both ipBlock and another peer"}}},
		{name: "policy types are Ingress or Egress", namespaced: true,
			obj: networkPolicy(func(np *networkingv1.NetworkPolicy) {
				np.Spec.PolicyTypes = []networkingv1.PolicyType{"Ingress", "Sideways"}
			}),
			want: []want{{field.ErrorTypeNotSupported, "spec.policyTypes[1]", `"Ingress", "Egress"`}}},
		{name: "a policy has at most two policy types", namespaced: true,
			obj: networkPolicy(func(np *networkingv1.NetworkPolicy) {
				np.Spec.PolicyTypes = []networkingv1.PolicyType{"Ingress", "Egress", "Ingress"}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.policyTypes", "may not specify more than two policyTypes"}}},

		{name: "an ingress with a rule, TLS and a class is valid", obj: ingress(), namespaced: true},
		{name: "an ingress with only a default backend is valid", namespaced: true,
			obj: ingress(func(ing *networkingv1.Ingress) {
				ing.Spec = networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Name: "http"}}}}
			})},
		{name: "an ingress needs rules or a default backend", namespaced: true,
			obj:  ingress(func(ing *networkingv1.Ingress) { ing.Spec.Rules = nil }),
			want: []want{{field.ErrorTypeInvalid, "spec", "either `defaultBackend` or `rules` must be specified"}}},
		{name: "a wildcard host has its star as the whole first label", namespaced: true,
			obj:  ingress(func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "web.*.example.com" }),
			want: []want{{field.ErrorTypeInvalid, "spec.rules[0].host", "a wildcard DNS-1123 subdomain must start with '*.'"}}},
		{name: "a wildcard host in the first label is valid", namespaced: true,
			obj: ingress(func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "*.example.com" })},
		{name: "a host is a DNS-1123 subdomain", namespaced: true,
			obj:  ingress(func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "Web_Example" }),
			want: []want{{field.ErrorTypeInvalid, "spec.rules[0].host", "a lowercase RFC 1123 subdomain"}}},
		{name: "a host is not an IP address", namespaced: true,
			obj:  ingress(func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "10.0.0.1" }),
			want: []want{{field.ErrorTypeInvalid, "spec.rules[0].host", "must be a DNS name, not an IP address"}}},
		{name: "an http rule has paths", namespaced: true,
			obj:  ingress(func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].HTTP.Paths = nil }),
			want: []want{{field.ErrorTypeRequired, "spec.rules[0].http.paths", ""}}},
		{name: "a path needs a pathType", namespaced: true,
			obj:  ingress(func(ing *networkingv1.Ingress) { firstPath(ing).PathType = nil }),
			want: []want{{field.ErrorTypeRequired, "spec.rules[0].http.paths[0].pathType", "pathType must be specified"}}},
		{name: "a pathType is Exact, Prefix or ImplementationSpecific", namespaced: true,
			obj:  ingress(func(ing *networkingv1.Ingress) { firstPath(ing).PathType = pathType("Regex") }),
			want: []want{{field.ErrorTypeNotSupported, "spec.rules[0].http.paths[0].pathType", `"Exact", "ImplementationSpecific", "Prefix"`}}},
		{name: "an Exact path is absolute", namespaced: true,
			obj: ingress(func(ing *networkingv1.Ingress) {
				firstPath(ing).Path, firstPath(ing).PathType = "api", pathType(networkingv1.PathTypeExact)
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.rules[0].http.paths[0].path", "must be an absolute path"}}},
		{name: "a Prefix path is clean", namespaced: true,
			obj: ingress(func(ing *networkingv1.Ingress) { firstPath(ing).Path = "/api//v1/.." }),
			want: []want{{field.ErrorTypeInvalid, "spec.rules[0].http.paths[0].path", "must not contain '//'"},
				{field.ErrorTypeInvalid, "spec.rules[0].http.paths[0].path", "cannot end with '/..'"}}},
		{name: "an ImplementationSpecific path may be empty", namespaced: true,
			obj: ingress(func(ing *networkingv1.Ingress) {
				firstPath(ing).Path, firstPath(ing).PathType = "", pathType(networkingv1.PathTypeImplementationSpecific)
			})},
		{name: "an ImplementationSpecific path, when set, is absolute", namespaced: true,
			obj: ingress(func(ing *networkingv1.Ingress) {
				firstPath(ing).Path, firstPath(ing).PathType = "api/(.*)", pathType(networkingv1.PathTypeImplementationSpecific)
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.rules[0].http.paths[0].path", "must be an absolute path"}}},
		{name: "a backend is a service or a resource", namespaced: true,
			obj:  ingress(func(ing *networkingv1.Ingress) { firstPath(ing).Backend = networkingv1.IngressBackend{} }),
			want: []want{{field.ErrorTypeInvalid, "spec.rules[0].http.paths[0].backend", "resource or service backend is required"}}},
		{name: "a backend is not both a service and a resource", namespaced: true,
			obj: ingress(func(ing *networkingv1.Ingress) {
				firstPath(ing).Backend.Resource = &corev1.TypedLocalObjectReference{APIGroup: ptr.To("k8s.example.com"), Kind: "StorageBucket", Name: "static"}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.rules[0].http.paths[0].backend", "cannot set both resource and service backends"}}},
		{name: "a resource backend names its kind and object", namespaced: true,
			obj: ingress(func(ing *networkingv1.Ingress) {
				firstPath(ing).Backend = networkingv1.IngressBackend{Resource: &corev1.TypedLocalObjectReference{Kind: "StorageBucket", Name: "a/b"}}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.rules[0].http.paths[0].backend.resource.name", "may not contain '/'"}}},
		{name: "a service backend names its service", namespaced: true,
			obj:  ingress(func(ing *networkingv1.Ingress) { firstPath(ing).Backend.Service.Name = "" }),
			want: []want{{field.ErrorTypeRequired, "spec.rules[0].http.paths[0].backend.service.name", ""}}},
		{name: "a service name is an RFC 1123 label, which may start with a digit", namespaced: true,
			obj: ingress(func(ing *networkingv1.Ingress) {
				firstPath(ing).Backend.Service.Name = "1web"
				ing.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web.api",
					Port: networkingv1.ServiceBackendPort{Number: 80}}}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.defaultBackend.service.name", "must not contain dots"}}},
		{name: "a service port is a name or a number, not both", namespaced: true,
			obj:  ingress(func(ing *networkingv1.Ingress) { firstPath(ing).Backend.Service.Port.Name = "http" }),
			want: []want{{field.ErrorTypeInvalid, "spec.rules[0].http.paths[0].backend", "cannot set both port name & port number"}}},
		{name: "a service port is given", namespaced: true,
			obj:  ingress(func(ing *networkingv1.Ingress) { firstPath(ing).Backend.Service.Port.Number = 0 }),
			want: []want{{field.ErrorTypeRequired, "spec.rules[0].http.paths[0].backend", "port name or number is required"}}},
		{name: "a service port number is a port", namespaced: true,
			obj:  ingress(func(ing *networkingv1.Ingress) { firstPath(ing).Backend.Service.Port.Number = 65536 }),
			want: []want{{field.ErrorTypeInvalid, "spec.rules[0].http.paths[0].backend.service.port.number", "must be between 1 and 65535"}}},
		{name: "the default backend is checked as the others", namespaced: true,
			obj: ingress(func(ing *networkingv1.Ingress) {
				ing.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web"}}
			}),
			want: []want{{field.ErrorTypeRequired, "spec.defaultBackend", "port name or number is required"}}},
		{name: "TLS hosts are DNS names, a wildcard allowed", namespaced: true,
			obj: ingress(func(ing *networkingv1.Ingress) {
				ing.Spec.TLS[0].Hosts = []string{"*.example.com", "a..example.com"}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.tls[0].hosts[1]", "a lowercase RFC 1123 subdomain"}}},
		{name: "a TLS secret name is a secret's name", namespaced: true,
			obj:  ingress(func(ing *networkingv1.Ingress) { ing.Spec.TLS[0].SecretName = "Web_TLS" }),
			want: []want{{field.ErrorTypeInvalid, "spec.tls[0].secretName", "a lowercase RFC 1123 subdomain"}}},
		{name: "ingressClassName is a valid name", namespaced: true,
			obj:  ingress(func(ing *networkingv1.Ingress) { ing.Spec.IngressClassName = ptr.To("Nginx!") }),
			want: []want{{field.ErrorTypeInvalid, "spec.ingressClassName", "a lowercase RFC 1123 subdomain"}}},
		{name: "the class annotation agrees with ingressClassName, at upstream's path", namespaced: true,
			obj: ingress(func(ing *networkingv1.Ingress) {
				ing.Annotations = map[string]string{"kubernetes.io/ingress.class": "traefik"}
			}),
			want: []want{{field.ErrorTypeInvalid, "annotations.kubernetes.io/ingress.class", "must match `ingressClassName` when both are specified"}}},
		{name: "the class annotation alone is valid", namespaced: true,
			obj: ingress(func(ing *networkingv1.Ingress) {
				ing.Annotations = map[string]string{"kubernetes.io/ingress.class": "traefik"}
				ing.Spec.IngressClassName = nil
			})},

		{name: "an ingress class with parameters is valid", obj: ingressClass()},
		{name: "an ingress class names its controller", obj: ingressClass(func(ic *networkingv1.IngressClass) { ic.Spec.Controller = "" }),
			want: []want{{field.ErrorTypeRequired, "spec.controller", ""}}},
		{name: "a controller is a domain-prefixed path",
			obj:  ingressClass(func(ic *networkingv1.IngressClass) { ic.Spec.Controller = "ingress-nginx" }),
			want: []want{{field.ErrorTypeInvalid, "spec.controller", `must be a domain-prefixed path (such as "acme.io/foo")`}}},
		{name: "a controller has at most 250 bytes",
			obj: ingressClass(func(ic *networkingv1.IngressClass) {
				ic.Spec.Controller = "example.com/" + strings.Repeat("a", 239)
			}),
			want: []want{{field.ErrorTypeTooLong, "spec.controller", "may not be more than 250 bytes"}}},
		{name: "parameters name a kind and an object",
			obj: ingressClass(func(ic *networkingv1.IngressClass) {
				ic.Spec.Parameters.Kind, ic.Spec.Parameters.Name = "", ""
			}),
			want: []want{{field.ErrorTypeRequired, "spec.parameters.kind", ""}, {field.ErrorTypeRequired, "spec.parameters.name", ""}}},
		{name: "parameters scoped to a namespace name it",
			obj: ingressClass(func(ic *networkingv1.IngressClass) {
				ic.Spec.Parameters.Scope = ptr.To(networkingv1.IngressClassParametersReferenceScopeNamespace)
			}),
			want: []want{{field.ErrorTypeRequired, "spec.parameters.namespace", "`parameters.scope` is set to 'Namespace'"}}},
		{name: "parameters scoped to the cluster name no namespace",
			obj: ingressClass(func(ic *networkingv1.IngressClass) {
				ic.Spec.Parameters.Namespace = ptr.To("ingress")
			}),
			want: []want{{field.ErrorTypeForbidden, "spec.parameters.namespace", "`parameters.scope` is set to 'Cluster'"}}},
		{name: "a parameters scope is Cluster or Namespace",
			obj: ingressClass(func(ic *networkingv1.IngressClass) {
				ic.Spec.Parameters.Scope = ptr.To("Node")
			}),
			want: []want{{field.ErrorTypeNotSupported, "spec.parameters.scope", `"Cluster", "Namespace"`}}},
		{name: "an ingress class is cluster-scoped",
			obj:  ingressClass(func(ic *networkingv1.IngressClass) { ic.Namespace = "default" }),
			want: []want{{field.ErrorTypeForbidden, "metadata.namespace", "not allowed on this type"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertErrors(t, Create(tt.obj, tt.namespaced), tt.want)
		})
	}
}

func TestNetworkingKindsUpdate(t *testing.T) {
	tests := []struct {
		name     string
		obj, old runtime.Object
		ns       bool
		want     []want
	}{
		{name: "a policy's rules may change", ns: true, old: networkPolicy(),
			obj: networkPolicy(func(np *networkingv1.NetworkPolicy) { np.Spec.Egress = nil })},
		{name: "a changed policy is checked as a new one", ns: true, old: networkPolicy(),
			obj: networkPolicy(func(np *networkingv1.NetworkPolicy) {
				np.Spec.Egress[0].To[0].IPBlock.Except = []string{"11.0.0.0/8"}
			}),
			want: []want{{field.ErrorTypeInvalid, "spec.egress[0].to[0].ipBlock.except[0]", "must be a strict subset of `cidr`"}}},
		{name: "an ingress's rules may change", ns: true, old: ingress(),
			obj: ingress(func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "www.example.com" })},
		{name: "an ingress's class may change", ns: true, old: ingress(),
			obj: ingress(func(ing *networkingv1.Ingress) { ing.Spec.IngressClassName = ptr.To("traefik") })},
		{name: "a changed ingress is checked as a new one", ns: true, old: ingress(),
			obj:  ingress(func(ing *networkingv1.Ingress) { firstPath(ing).PathType = nil }),
			want: []want{{field.ErrorTypeRequired, "spec.rules[0].http.paths[0].pathType", "pathType must be specified"}}},
		{name: "an ingress class's parameters may change", old: ingressClass(),
			obj: ingressClass(func(ic *networkingv1.IngressClass) { ic.Spec.Parameters = nil })},
		{name: "an ingress class's controller is immutable", old: ingressClass(),
			obj:  ingressClass(func(ic *networkingv1.IngressClass) { ic.Spec.Controller = "example.com/other" }),
			want: []want{{field.ErrorTypeInvalid, "spec.controller", "field is immutable"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertErrors(t, Update(tt.obj, tt.old, tt.ns), tt.want)
		})
	}
}

func TestIngressStatusUpdate(t *testing.T) {
	withAddress := func(in ...networkingv1.IngressLoadBalancerIngress) *networkingv1.Ingress {
		return ingress(func(ing *networkingv1.Ingress) { ing.Status.LoadBalancer.Ingress = in })
	}
	tests := []struct {
		name     string
		obj, old runtime.Object
		want     []want
	}{
		{name: "a controller reports an IP and a host name", old: ingress(),
			obj: withAddress(networkingv1.IngressLoadBalancerIngress{IP: "192.0.2.10"}, networkingv1.IngressLoadBalancerIngress{Hostname: "lb.example.com"})},
		{name: "a reported IP is an IP", old: ingress(),
			obj:  withAddress(networkingv1.IngressLoadBalancerIngress{IP: "192.0.2"}),
			want: []want{{field.ErrorTypeInvalid, "status.loadBalancer.ingress[0].ip", "must be a valid IP address"}}},
		{name: "a reported host name is a DNS name, not an IP", old: ingress(),
			obj:  withAddress(networkingv1.IngressLoadBalancerIngress{Hostname: "192.0.2.10"}),
			want: []want{{field.ErrorTypeInvalid, "status.loadBalancer.ingress[0].hostname", "must be a DNS name, not an IP address"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertErrors(t, StatusUpdate(tt.obj, tt.old), tt.want)
		})
	}
}
