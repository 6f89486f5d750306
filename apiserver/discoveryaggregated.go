package apiserver

import (
	"encoding/json"
	"mime"
	"net/http"
	"sort"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/apiserver/registry"
)

// Aggregated discovery (apidiscovery.k8s.io/v2, GA in Kubernetes 1.30):
// a client whose Accept asks for an APIGroupDiscoveryList gets every
// group, version and resource of /api (the core group) or /apis (the
// others) in one answer, instead of one request per group version.
// client-go's discovery (kubectl, Helm, the garbage collector's 30s
// refresh) asks for it first and tells the two forms apart by the
// answer's Content-Type.
//
//	GET /api or /apis, Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList
//	   ─▶ allGroups (built-in, then custom resources') ─▶ APIGroupDiscovery per group,
//	      versions in preference order, each resource with its verbs, scope, kind and subresources
//	   ─▶ Content-Type: the same media type, so the client knows the form

// aggregatedDiscoveryType is the media type of an aggregated answer.
const aggregatedDiscoveryType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// aggregatedDiscoveryRequested reports whether the first media type in
// Accept that minik serves is the aggregated form (its nopeer profile
// too: minik has no peer servers).
func aggregatedDiscoveryRequested(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if _, conversion := params["as"]; !conversion {
			if mt == "application/json" || mt == "*/*" || mt == "application/*" {
				return false
			}
			continue
		}
		if mt == "application/json" && params["as"] == "APIGroupDiscoveryList" && params["g"] == apidiscoveryv2.SchemeGroupVersion.Group && params["v"] == "v2" {
			return true
		}
	}
	return false
}

// serveAggregatedDiscovery answers /api (core) or /apis (named groups).
func (s *Server) serveAggregatedDiscovery(w http.ResponseWriter, r *http.Request, core bool) {
	list := apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: apidiscoveryv2.SchemeGroupVersion.String()}}
	groups := s.allGroups()
	for i := range groups {
		if (groups[i].group == "") == core {
			list.Items = append(list.Items, groupDiscovery(&groups[i]))
		}
	}
	if list.Items == nil {
		list.Items = []apidiscoveryv2.APIGroupDiscovery{}
	}
	data, err := json.Marshal(&list)
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Vary", "Accept")
	writeBody(w, r, http.StatusOK, aggregatedDiscoveryType, data)
}

// groupDiscovery is one group in the aggregated form; its versions come
// in preference order, as its APIGroup lists them.
func groupDiscovery(g *groupVersions) apidiscoveryv2.APIGroupDiscovery {
	out := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g.group}}
	for _, v := range g.versions {
		vd := apidiscoveryv2.APIVersionDiscovery{Version: v, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
		for _, rs := range g.resources[v] {
			vd.Resources = append(vd.Resources, resourceDiscovery(rs))
		}
		sort.SliceStable(vd.Resources, func(a, b int) bool { return vd.Resources[a].Resource < vd.Resources[b].Resource })
		out.Versions = append(out.Versions, vd)
	}
	return out
}

// resourceDiscovery describes rs as its /apis/G/V resource list does
// (resourceListEntry), in the aggregated form.
func resourceDiscovery(rs *registry.Resource) apidiscoveryv2.APIResourceDiscovery {
	e := resourceListEntry(rs)
	scope := apidiscoveryv2.ScopeCluster
	if rs.Namespaced {
		scope = apidiscoveryv2.ScopeNamespace
	}
	out := apidiscoveryv2.APIResourceDiscovery{Resource: e.Name, SingularResource: e.SingularName, Scope: scope,
		ResponseKind: &metav1.GroupVersionKind{Group: rs.Group, Version: rs.Version, Kind: e.Kind},
		Verbs:        e.Verbs, ShortNames: e.ShortNames, Categories: e.Categories}
	for _, sub := range rs.Subresources {
		d := subresourceDiscovery(rs, sub)
		kind := metav1.GroupVersionKind{Group: rs.Group, Version: rs.Version, Kind: d.Kind}
		if d.Version != "" {
			kind.Group, kind.Version = d.Group, d.Version
		}
		out.Subresources = append(out.Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource: strings.TrimPrefix(d.Name, rs.Resource+"/"), ResponseKind: &kind, Verbs: d.Verbs})
	}
	return out
}
