package defaults

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestNetworkPolicyDefaults(t *testing.T) {
	tcp, udp := ptr.To(corev1.ProtocolTCP), ptr.To(corev1.ProtocolUDP)
	port := func(p int32, proto *corev1.Protocol) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Port: ptr.To(intstr.FromInt32(p)), Protocol: proto}
	}
	ingressRule := networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{port(80, nil), port(53, udp)}}
	egressRule := networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{port(5432, nil)}}
	tests := []struct {
		name string
		in   networkingv1.NetworkPolicySpec
		want networkingv1.NetworkPolicySpec
	}{
		{
			name: "a policy without rules is an Ingress policy",
			want: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}},
		},
		{
			name: "a policy with only ingress rules is an Ingress policy, and its ports without a protocol are TCP",
			in:   networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{ingressRule}},
			want: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{port(80, tcp), port(53, udp)}}}},
		},
		{
			name: "egress rules make it an Egress policy too, and their ports are TCP as well",
			in:   networkingv1.NetworkPolicySpec{Egress: []networkingv1.NetworkPolicyEgressRule{egressRule}},
			want: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
				Egress: []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{port(5432, tcp)}}}},
		},
		{
			name: "policy types the client set are kept, even an egress-only policy with ingress rules",
			in: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
				Ingress: []networkingv1.NetworkPolicyIngressRule{{}}},
			want: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
				Ingress: []networkingv1.NetworkPolicyIngressRule{{}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := &networkingv1.NetworkPolicy{Spec: *tt.in.DeepCopy()}
			Object(np)
			assertEqual(t, tt.want, np.Spec)
			Object(np)
			assertEqual(t, tt.want, np.Spec) // idempotent
		})
	}
}

func TestIngressClassDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   *networkingv1.IngressClassParametersReference
		want *networkingv1.IngressClassParametersReference
	}{
		{name: "a class without parameters stays without"},
		{
			name: "parameters without a scope refer to a cluster-scoped object",
			in:   &networkingv1.IngressClassParametersReference{Kind: "IngressParameters", Name: "lb"},
			want: &networkingv1.IngressClassParametersReference{Kind: "IngressParameters", Name: "lb",
				Scope: ptr.To(networkingv1.IngressClassParametersReferenceScopeCluster)},
		},
		{
			name: "a Namespace scope is kept",
			in: &networkingv1.IngressClassParametersReference{Kind: "IngressParameters", Name: "lb",
				Scope: ptr.To(networkingv1.IngressClassParametersReferenceScopeNamespace), Namespace: ptr.To("ingress")},
			want: &networkingv1.IngressClassParametersReference{Kind: "IngressParameters", Name: "lb",
				Scope: ptr.To(networkingv1.IngressClassParametersReferenceScopeNamespace), Namespace: ptr.To("ingress")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ic := &networkingv1.IngressClass{Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx", Parameters: tt.in.DeepCopy()}}
			Object(ic)
			assertEqual(t, tt.want, ic.Spec.Parameters)
		})
	}
}

func TestIngressHasNoDefaults(t *testing.T) {
	// networking.k8s.io/v1 defaults nothing of an Ingress: a path's
	// pathType stays unset, for validation to require.
	ing := &networkingv1.Ingress{Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
		IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/", Backend: networkingv1.IngressBackend{
				Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
	want := ing.DeepCopy()
	Object(ing)
	assertEqual(t, want, ing)
}
