package printers

import (
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestNetworkingTablesMatchGolden(t *testing.T) {
	rule := func(host string) networkingv1.IngressRule { return networkingv1.IngressRule{Host: host} }
	assertGoldenTables(t, []goldenTable{
		{
			name: "network policies show their pod selector, <none> for all pods",
			kind: "NetworkPolicy",
			objs: []runtime.Object{
				&networkingv1.NetworkPolicy{ObjectMeta: objectMeta("web-from-frontend", time.Hour),
					Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"},
						MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}}},
				&networkingv1.NetworkPolicy{ObjectMeta: objectMeta("default-deny", time.Minute)},
			},
			golden: "networkpolicy.golden",
		},
		{
			name: "ingresses show class, three hosts at most, the load balancer's addresses and 443 with TLS",
			kind: "Ingress",
			objs: []runtime.Object{
				&networkingv1.Ingress{ObjectMeta: objectMeta("web", time.Hour),
					Spec: networkingv1.IngressSpec{IngressClassName: ptr("nginx"), Rules: []networkingv1.IngressRule{rule("web.example.com")},
						TLS: []networkingv1.IngressTLS{{Hosts: []string{"web.example.com"}, SecretName: "web-tls"}}},
					Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{
						{IP: "192.0.2.20"}, {Hostname: "lb.example.com"}, {IP: "192.0.2.10"}, {IP: "192.0.2.10"}}}}},
				&networkingv1.Ingress{ObjectMeta: objectMeta("many", 2*time.Minute),
					Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{rule("a.example.com"), rule(""), rule("b.example.com"),
						rule("c.example.com"), rule("d.example.com")}}},
				&networkingv1.Ingress{ObjectMeta: objectMeta("catch-all", time.Minute),
					Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{}}},
			},
			golden: "ingress.golden",
		},
		{
			name: "ingress classes show the controller, the parameters and which class is the default",
			kind: "IngressClass",
			objs: []runtime.Object{
				&networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx", CreationTimestamp: ago(time.Hour),
					Annotations: map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}},
					Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}},
				&networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "external", CreationTimestamp: ago(time.Minute)},
					Spec: networkingv1.IngressClassSpec{Controller: "example.com/ingress-controller",
						Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr("k8s.example.com"), Kind: "IngressParameters", Name: "external-lb"}}},
				&networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "core", CreationTimestamp: ago(time.Minute)},
					Spec: networkingv1.IngressClassSpec{Controller: "example.com/core",
						Parameters: &networkingv1.IngressClassParametersReference{Kind: "ConfigMap", Name: "core-params"}}},
			},
			golden: "ingressclass.golden",
		},
	})
}
