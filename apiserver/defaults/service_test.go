package defaults

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestServiceDefaults(t *testing.T) {
	cluster := ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	tests := []struct {
		name string
		in   corev1.ServiceSpec
		want corev1.ServiceSpec
	}{
		{
			name: "a bare service is a ClusterIP service with TCP ports targeting themselves",
			in:   corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
			want: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone,
				InternalTrafficPolicy: cluster,
				Ports:                 []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)}}},
		},
		{
			name: "a named target port is kept",
			in:   corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolUDP}}},
			want: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone,
				InternalTrafficPolicy: cluster,
				Ports:                 []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("http")}}},
		},
		{
			name: "a NodePort service gets externalTrafficPolicy Cluster",
			in:   corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort},
			want: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, SessionAffinity: corev1.ServiceAffinityNone,
				InternalTrafficPolicy: cluster, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster},
		},
		{
			name: "a LoadBalancer allocates node ports by default",
			in:   corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
			want: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, SessionAffinity: corev1.ServiceAffinityNone,
				InternalTrafficPolicy: cluster, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
				AllocateLoadBalancerNodePorts: ptr.To(true)},
		},
		{
			name: "ClientIP affinity gets the 3 hour timeout",
			in:   corev1.ServiceSpec{SessionAffinity: corev1.ServiceAffinityClientIP},
			want: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityClientIP,
				InternalTrafficPolicy: cluster,
				SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](10800)}}},
		},
		{
			name: "an ExternalName service gets no traffic policies",
			in:   corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"},
			want: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com", SessionAffinity: corev1.ServiceAffinityNone},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: tc.in}
			Object(svc)
			if diff := cmp.Diff(tc.want, svc.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			again := svc.DeepCopy()
			Object(again)
			if diff := cmp.Diff(svc, again); diff != "" {
				t.Errorf("defaulting twice changed the object (-once +twice):\n%s", diff)
			}
		})
	}
}

func TestEndpointPortDefaults(t *testing.T) {
	ep := &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 80}}}}}
	Object(ep)
	if got := ep.Subsets[0].Ports[0].Protocol; got != corev1.ProtocolTCP {
		t.Errorf("endpoints port protocol = %q, want TCP", got)
	}
	s := &discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}}}
	Object(s)
	if p := s.Ports[0]; p.Name == nil || *p.Name != "" || p.Protocol == nil || *p.Protocol != corev1.ProtocolTCP {
		t.Errorf("slice port = %+v, want name \"\" and protocol TCP", p)
	}
}
