package apiserver

import (
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

type countingTransport struct {
	next  http.RoundTripper
	calls atomic.Int32
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.calls.Add(1)
	return c.next.RoundTrip(r)
}

// client-go's discovery reads every group and resource in two requests
// (/api and /apis) in the aggregated form, and finds exactly what the
// per-group-version form lists.
func TestAggregatedDiscovery(t *testing.T) {
	ts := startTestServer(t)
	read := func(legacy bool) ([]*metav1.APIGroup, []*metav1.APIResourceList, int32) {
		t.Helper()
		cfg := ts.restConfig(t)
		counter := &countingTransport{}
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter }
		dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
		dc.UseLegacyDiscovery = legacy
		groups, resources, err := dc.ServerGroupsAndResources()
		if err != nil {
			t.Fatalf("discovery (legacy %v): %v", legacy, err)
		}
		sort.Slice(resources, func(a, b int) bool { return resources[a].GroupVersion < resources[b].GroupVersion })
		for _, l := range resources {
			l.TypeMeta = metav1.TypeMeta{}
			sort.Slice(l.APIResources, func(a, b int) bool { return l.APIResources[a].Name < l.APIResources[b].Name })
			gv, _ := schema.ParseGroupVersion(l.GroupVersion)
			for i := range l.APIResources {
				// client-go fills these in from the aggregated form: the
				// list's own group version, and a subresource's parent's
				// singular name.
				r := &l.APIResources[i]
				r.StorageVersionHash = ""
				if r.Group == gv.Group && r.Version == gv.Version {
					r.Group, r.Version = "", ""
				}
				if strings.Contains(r.Name, "/") {
					r.SingularName = ""
				}
			}
		}
		return groups, resources, counter.calls.Load()
	}
	aggGroups, aggResources, aggCalls := read(false)
	groups, resources, calls := read(true)
	t.Logf("client-go's discovery: %d requests aggregated, %d legacy", aggCalls, calls)
	if aggCalls != 2 {
		t.Errorf("aggregated discovery took %d requests, want 2 (/api and /apis)", aggCalls)
	}
	if calls <= aggCalls {
		t.Errorf("legacy discovery took %d requests: was the aggregated form used at all?", calls)
	}
	if !equality.Semantic.DeepEqual(aggGroups, groups) {
		t.Errorf("groups differ:\naggregated %v\nlegacy     %v", aggGroups, groups)
	}
	if len(aggResources) != len(resources) {
		t.Fatalf("%d group versions aggregated, %d legacy", len(aggResources), len(resources))
	}
	for i := range resources {
		if !equality.Semantic.DeepEqual(aggResources[i], resources[i]) {
			t.Errorf("%s differs:\naggregated %+v\nlegacy     %+v", resources[i].GroupVersion, aggResources[i], resources[i])
		}
	}

	resp, _ := ts.response(t, "GET", "/apis", "", "Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer,application/json")
	if ct := resp.Header.Get("Content-Type"); ct != aggregatedDiscoveryType {
		t.Errorf("nopeer profile answered %q", ct)
	}
	resp, _ = ts.response(t, "GET", "/apis", "", "Accept", "application/json")
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("plain JSON answered %q", ct)
	}
}
