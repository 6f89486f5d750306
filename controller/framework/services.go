package framework

import (
	"context"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"minik/client"
	"minik/client/informer"
)

// The resources of Services, named here so the controllers need nothing
// new from the client package.
var (
	ServicesResource       = client.Resource{Version: "v1", Resource: "services", Namespaced: true}
	EndpointsResource      = client.Resource{Version: "v1", Resource: "endpoints", Namespaced: true}
	EndpointSlicesResource = client.Resource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices", Namespaced: true}
)

// ServiceSelectorIndex indexes Services by "namespace/key=value" for every
// pair of their spec.selector, and by "namespace/*" when the selector is
// empty but set (it selects every pod of the namespace). Services without
// a selector are not indexed. A pod's Services are then found by looking
// up its own labels, not by matching every Service of its namespace.
const ServiceSelectorIndex = "serviceSelector"

// ServiceNameIndex indexes EndpointSlices by "namespace/name" of the
// Service their kubernetes.io/service-name label names.
const ServiceNameIndex = "serviceName"

// AddServiceInformers makes the Services, Endpoints and EndpointSlices
// informers, with their indexes. Call it before Start, and only when the
// apiserver serves those resources: an informer of a resource that is not
// served never syncs, and Start would wait for it forever.
func (inf *Informers) AddServiceInformers() {
	if inf.Services != nil {
		return
	}
	inf.Services = informer.New(client.For[corev1.Service](inf.Client, ServicesResource), inf.cfg)
	inf.Endpoints = informer.New(client.For[corev1.Endpoints](inf.Client, EndpointsResource), inf.cfg)
	inf.EndpointSlices = informer.New(client.For[discoveryv1.EndpointSlice](inf.Client, EndpointSlicesResource), inf.cfg)
	_ = inf.Services.AddIndex(ServiceSelectorIndex, serviceSelectorKeys)
	_ = inf.EndpointSlices.AddIndex(ServiceNameIndex, func(s *discoveryv1.EndpointSlice) []string {
		if name := s.Labels[discoveryv1.LabelServiceName]; name != "" {
			return []string{s.Namespace + "/" + name}
		}
		return nil
	})
	addOwnerIndexes(inf.Services)
	addOwnerIndexes(inf.Endpoints)
	addOwnerIndexes(inf.EndpointSlices)
}

func serviceSelectorKeys(svc *corev1.Service) []string {
	sel := svc.Spec.Selector
	if sel == nil {
		return nil
	}
	if len(sel) == 0 {
		return []string{svc.Namespace + "/*"}
	}
	out := make([]string, 0, len(sel))
	for k, v := range sel {
		out = append(out, svc.Namespace+"/"+k+"="+v)
	}
	return out
}

// ServicesOfPod returns the Services whose selector selects pod, as
// Kubernetes' GetPodServiceMemberships does (selectorless Services select
// nothing), each once. It costs one index lookup per pod label plus a
// selector match per candidate.
func ServicesOfPod(services *informer.Store[corev1.Service], pod *corev1.Pod) []*corev1.Service {
	return ServicesOfLabels(services, pod.Namespace, pod.Labels)
}

// ServicesOfLabels is ServicesOfPod for a pod in ns with labels set.
func ServicesOfLabels(services *informer.Store[corev1.Service], ns string, set map[string]string) []*corev1.Service {
	return servicesOfLabels(func(v string) []*corev1.Service { return services.ByIndex(ServiceSelectorIndex, v) }, ns, set)
}

// servicesOfLabels looks candidates up by index value and keeps those
// whose whole selector matches.
func servicesOfLabels(byIndex func(value string) []*corev1.Service, ns string, set map[string]string) []*corev1.Service {
	var out []*corev1.Service
	seen := map[string]bool{}
	consider := func(candidates []*corev1.Service) {
		for _, svc := range candidates {
			if seen[svc.Name] {
				continue
			}
			seen[svc.Name] = true
			if labels.SelectorFromValidatedSet(svc.Spec.Selector).Matches(labels.Set(set)) {
				out = append(out, svc)
			}
		}
	}
	consider(byIndex(ns + "/*"))
	for k, v := range set {
		consider(byIndex(ns + "/" + k + "=" + v))
	}
	return out
}

// ServedResources asks the apiserver's discovery which of res it serves.
// A discovery error answers "served" for every resource of that group
// version: the informers then retry, as they do for any failed list.
func ServedResources(ctx context.Context, c *client.Client, res ...client.Resource) map[client.Resource]bool {
	out := map[client.Resource]bool{}
	lists := map[string]*metav1.APIResourceList{}
	for _, r := range res {
		path := "/api/" + r.Version
		if r.Group != "" {
			path = "/apis/" + r.Group + "/" + r.Version
		}
		list, ok := lists[path]
		if !ok {
			list = &metav1.APIResourceList{}
			if err := c.Do(ctx, http.MethodGet, path, nil, nil, list); err != nil {
				if !apierrors.IsNotFound(err) {
					list = nil // unknown: assume served
				} else {
					list = &metav1.APIResourceList{}
				}
			}
			lists[path] = list
		}
		if list == nil {
			out[r] = true
			continue
		}
		for _, ar := range list.APIResources {
			if ar.Name == r.Resource {
				out[r] = true
			}
		}
	}
	return out
}
