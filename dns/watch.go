package dns

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/client/informer"
)

// The resources the DNS watches.
var (
	ServicesResource       = client.Resource{Version: "v1", Resource: "services", Namespaced: true}
	EndpointSlicesResource = client.Resource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices", Namespaced: true}
)

// serviceHandler feeds a Service informer's events to the store: each
// event rebuilds the records of that one Service.
func serviceHandler(s *Store) informer.Handler[corev1.Service] {
	return informer.Handler[corev1.Service]{
		OnAdd: s.UpsertService,
		OnUpdate: func(old, svc *corev1.Service) {
			if old != svc { // a resync repeats the object: nothing changed
				s.UpsertService(svc)
			}
		},
		OnDelete: func(svc *corev1.Service) { s.DeleteService(svc.Namespace, svc.Name) },
	}
}

// sliceHandler feeds an EndpointSlice informer's events to the store:
// each event rebuilds the records of that one slice.
func sliceHandler(s *Store) informer.Handler[discoveryv1.EndpointSlice] {
	return informer.Handler[discoveryv1.EndpointSlice]{
		OnAdd: s.UpsertSlice,
		OnUpdate: func(old, sl *discoveryv1.EndpointSlice) {
			if old != sl {
				s.UpsertSlice(sl)
			}
		},
		OnDelete: func(sl *discoveryv1.EndpointSlice) { s.DeleteSlice(sl.Namespace, sl.Name) },
	}
}

// slimService is the DNS informer's transform: a new Service holding
// only what records read (and what the informer needs: name, namespace,
// UID, resourceVersion). Being a new object, it lets the decoded list or
// event it came from be freed, instead of the cache pinning whole list
// pages.
func slimService(s *corev1.Service) *corev1.Service {
	out := &corev1.Service{
		ObjectMeta: slimMeta(s.ObjectMeta, nil),
		Spec: corev1.ServiceSpec{
			Type: s.Spec.Type, ClusterIP: s.Spec.ClusterIP, ClusterIPs: s.Spec.ClusterIPs,
			ExternalName: s.Spec.ExternalName, PublishNotReadyAddresses: s.Spec.PublishNotReadyAddresses,
		},
	}
	if len(s.Spec.Ports) > 0 {
		out.Spec.Ports = make([]corev1.ServicePort, len(s.Spec.Ports))
		for i, p := range s.Spec.Ports {
			out.Spec.Ports[i] = corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port}
		}
	}
	return out
}

// slimSlice is slimService for an EndpointSlice: its service-name label,
// address type, ports, and each endpoint's addresses, ready condition
// and hostname.
func slimSlice(s *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	var labels map[string]string
	if name, ok := s.Labels[discoveryv1.LabelServiceName]; ok {
		labels = map[string]string{discoveryv1.LabelServiceName: name}
	}
	out := &discoveryv1.EndpointSlice{ObjectMeta: slimMeta(s.ObjectMeta, labels), AddressType: s.AddressType, Ports: s.Ports}
	if len(s.Endpoints) > 0 {
		out.Endpoints = make([]discoveryv1.Endpoint, len(s.Endpoints))
		for i, e := range s.Endpoints {
			out.Endpoints[i] = discoveryv1.Endpoint{Addresses: e.Addresses, Hostname: e.Hostname,
				Conditions: discoveryv1.EndpointConditions{Ready: e.Conditions.Ready}}
		}
	}
	return out
}

func slimMeta(m metav1.ObjectMeta, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion, Labels: labels}
}
