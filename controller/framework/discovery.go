package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik/client"
)

// APIResource is one resource as discovery lists it: where it is served,
// the kind of its objects and the verbs it takes.
type APIResource struct {
	API   client.Resource
	Kind  string
	Verbs []string
}

// Has reports whether r takes every one of verbs.
func (r APIResource) Has(verbs ...string) bool {
	for _, v := range verbs {
		if !slices.Contains(r.Verbs, v) {
			return false
		}
	}
	return true
}

// DiscoverResources asks the apiserver's discovery for the resources of
// groups ("" is the core group; none: every group it serves) and returns
// each resource once, without subresources, in the version upstream's
// ServerPreferredResources picks: the group's preferred version if it
// serves the resource there, else the first version that does. A group
// or version the apiserver does not serve (any more) has no resources;
// any other failure is an error.
func DiscoverResources(ctx context.Context, c *client.Client, groups ...string) ([]APIResource, error) {
	var found []metav1.APIGroup
	if len(groups) == 0 {
		// Every group: in two requests when the apiserver serves the
		// aggregated form, as kube-apiserver and minik's do.
		if out, ok, err := discoverAggregated(ctx, c); ok || err != nil {
			return out, err
		}
		var list metav1.APIGroupList
		if err := c.Do(ctx, http.MethodGet, "/apis", nil, nil, &list); err != nil {
			return nil, fmt.Errorf("discovery: %w", err)
		}
		found = append([]metav1.APIGroup{coreGroup}, list.Groups...)
	}
	for _, name := range groups {
		if name == "" {
			found = append(found, coreGroup)
			continue
		}
		var g metav1.APIGroup
		err := c.Do(ctx, http.MethodGet, "/apis/"+name, nil, nil, &g)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("discovery of %s: %w", name, err)
		}
		found = append(found, g)
	}
	var out []APIResource
	for _, g := range found {
		rs, err := groupResources(ctx, c, g)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// coreGroup is the core group as /apis would list it: only v1.
var coreGroup = metav1.APIGroup{
	Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: "v1", Version: "v1"}},
	PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "v1", Version: "v1"},
}

// groupResources reads the resource list of every version of g, the
// preferred one first, and keeps each resource in the first version
// that lists it.
func groupResources(ctx context.Context, c *client.Client, g metav1.APIGroup) ([]APIResource, error) {
	versions := []string{g.PreferredVersion.Version}
	for _, v := range g.Versions {
		if !slices.Contains(versions, v.Version) {
			versions = append(versions, v.Version)
		}
	}
	var out []APIResource
	seen := map[string]bool{}
	for _, v := range versions {
		if v == "" {
			continue
		}
		gv := schema.GroupVersion{Group: g.Name, Version: v}
		path := "/apis/" + gv.String()
		if g.Name == "" {
			path = "/api/" + v
		}
		var list metav1.APIResourceList
		err := c.Do(ctx, http.MethodGet, path, nil, nil, &list)
		switch {
		case apierrors.IsNotFound(err):
			continue // removed since the group was read (its last CRD went)
		case err != nil:
			return nil, fmt.Errorf("discovery of %s: %w", path, err)
		}
		for _, ar := range list.APIResources {
			if strings.Contains(ar.Name, "/") || seen[ar.Name] {
				continue
			}
			seen[ar.Name] = true
			out = append(out, APIResource{
				API:   client.Resource{Group: g.Name, Version: v, Resource: ar.Name, Namespaced: ar.Namespaced},
				Kind:  ar.Kind,
				Verbs: ar.Verbs,
			})
		}
	}
	return out, nil
}

// aggregatedAccept asks for aggregated discovery, else the plain form.
const aggregatedAccept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"

// discoverAggregated reads /api and /apis in the aggregated form; ok is
// false when the apiserver answered the plain form instead.
func discoverAggregated(ctx context.Context, c *client.Client) (out []APIResource, ok bool, err error) {
	for _, path := range []string{"/api", "/apis"} {
		body, contentType, err := c.GetAs(ctx, path, aggregatedAccept)
		if err != nil {
			return nil, false, fmt.Errorf("discovery: %w", err)
		}
		if mt, params, err := mime.ParseMediaType(contentType); err != nil || mt != "application/json" || params["as"] != "APIGroupDiscoveryList" || params["v"] != "v2" {
			return nil, false, nil
		}
		var list apidiscoveryv2.APIGroupDiscoveryList
		if err := json.Unmarshal(body, &list); err != nil {
			return nil, false, fmt.Errorf("discovery: %s: %w", path, err)
		}
		for _, g := range list.Items {
			out = append(out, aggregatedGroupResources(g)...)
		}
	}
	return out, true, nil
}

// aggregatedGroupResources keeps each resource of g in the first of its
// versions (the preferred one first) that serves it, as groupResources.
func aggregatedGroupResources(g apidiscoveryv2.APIGroupDiscovery) []APIResource {
	var out []APIResource
	seen := map[string]bool{}
	for _, v := range g.Versions {
		for _, r := range v.Resources {
			if seen[r.Resource] {
				continue
			}
			seen[r.Resource] = true
			kind := ""
			if r.ResponseKind != nil {
				kind = r.ResponseKind.Kind
			}
			out = append(out, APIResource{
				API:   client.Resource{Group: g.Name, Version: v.Version, Resource: r.Resource, Namespaced: r.Scope == apidiscoveryv2.ScopeNamespace},
				Kind:  kind,
				Verbs: r.Verbs,
			})
		}
	}
	return out
}
