package dns

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

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
