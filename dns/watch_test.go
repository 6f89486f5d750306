package dns

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The informers keep slim copies (slimService, slimSlice); the records
// built from a slim copy must be the records of the whole object.
func TestSlimCopiesBuildTheSameRecords(t *testing.T) {
	full := func(s *corev1.Service) *corev1.Service {
		s.UID, s.ResourceVersion, s.Generation = "u-1", "42", 3
		s.Labels = map[string]string{"app": "web"}
		s.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{…}"}
		s.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
		s.Spec.Selector = map[string]string{"app": "web"}
		for i := range s.Spec.Ports {
			s.Spec.Ports[i].TargetPort = intstr.FromString("http")
			s.Spec.Ports[i].AppProtocol = ptr.To("http")
		}
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.1"}}
		return s
	}
	services := map[string]*corev1.Service{
		"a ClusterIP Service with two ports": full(makeService("shop", "web").IPs("10.96.0.20").
			Port("http", 80, corev1.ProtocolTCP).Port("dns", 53, corev1.ProtocolUDP).Obj()),
		"a dual-stack Service":           full(makeService("shop", "v6").IPs("10.96.0.21", "fd00::21").Port("http", 80, "").Obj()),
		"a headless Service":             full(makeService("shop", "db").Headless().PublishNotReady().Port("sql", 5432, corev1.ProtocolTCP).Obj()),
		"an ExternalName Service":        full(makeService("shop", "ext").ExternalName("Example.COM").Obj()),
		"a Service without a cluster IP": full(makeService("shop", "pending").Port("http", 80, corev1.ProtocolTCP).Obj()),
	}
	for name, svc := range services {
		t.Run(name, func(t *testing.T) {
			slim := slimService(svc)
			if got, want := buildService(slim, "cluster.local.", 30), buildService(svc, "cluster.local.", 30); !reflect.DeepEqual(got, want) {
				t.Errorf("records differ:\nslim: %+v\nfull: %+v", got, want)
			}
			if slim.Name != svc.Name || slim.Namespace != svc.Namespace || slim.UID != svc.UID || slim.ResourceVersion != svc.ResourceVersion {
				t.Errorf("the informer's metadata is lost: %+v", slim.ObjectMeta)
			}
			if slim.Annotations != nil || slim.ManagedFields != nil || slim.Spec.Selector != nil || len(slim.Status.LoadBalancer.Ingress) != 0 {
				t.Errorf("the slim copy keeps what records never read: %+v", slim)
			}
		})
	}

	withExtras := func(b sliceBuilder) *discoveryv1.EndpointSlice {
		s := b.Obj()
		s.UID, s.ResourceVersion = "u-2", "43"
		s.Labels[discoveryv1.LabelManagedBy] = "endpointslice-controller.k8s.io"
		s.OwnerReferences = []metav1.OwnerReference{{Kind: "Service", Name: "web"}}
		for i := range s.Endpoints {
			s.Endpoints[i].NodeName = ptr.To("node-a")
			s.Endpoints[i].TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: "web-1"}
			s.Endpoints[i].Conditions.Serving = ptr.To(true)
		}
		return s
	}
	slicesOf := map[string]*discoveryv1.EndpointSlice{
		"ready and unready endpoints with and without hostnames": withExtras(makeSlice("shop", "web-abc", "web").
			Port("http", 8080, corev1.ProtocolTCP).Ready("web-0", "10.244.0.5").Ready("", "10.244.1.7").NotReady("", "10.244.2.9")),
		"an IPv6 slice": withExtras(makeSlice("shop", "v6-abc", "v6").Type(discoveryv1.AddressTypeIPv6).
			Port("http", 8080, "").Ready("", "fd00::5")),
		"an FQDN slice": withExtras(makeSlice("shop", "f-abc", "f").Type(discoveryv1.AddressTypeFQDN).Ready("", "example.com")),
	}
	for name, sl := range slicesOf {
		t.Run(name, func(t *testing.T) {
			slim := slimSlice(sl)
			if got, want := buildSlice(slim, "cluster.local.", 30), buildSlice(sl, "cluster.local.", 30); !reflect.DeepEqual(got, want) {
				t.Errorf("records differ:\nslim: %+v\nfull: %+v", got, want)
			}
			if sliceService(slim) != sliceService(sl) || slim.ResourceVersion != sl.ResourceVersion {
				t.Errorf("the slim copy lost its Service or version: %+v", slim.ObjectMeta)
			}
			if len(slim.Labels) != 1 || slim.OwnerReferences != nil || slim.Endpoints[0].TargetRef != nil {
				t.Errorf("the slim copy keeps what records never read: %+v", slim)
			}
		})
	}
}
