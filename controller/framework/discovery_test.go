package framework_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik/client"
	"minik/controller/framework"
	"minik/controller/internal/synctest"
)

var gcVerbs = []string{"list", "watch", "delete"}

func groupOf(name string, versions ...string) metav1.APIGroup {
	g := metav1.APIGroup{Name: name}
	for _, v := range versions {
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: name + "/" + v, Version: v})
	}
	g.PreferredVersion = g.Versions[0]
	return g
}

func resourceList(gv string, rs ...metav1.APIResource) *metav1.APIResourceList {
	return &metav1.APIResourceList{GroupVersion: gv, APIResources: rs}
}

func apiResource(name, kind string, namespaced bool, verbs ...string) metav1.APIResource {
	return metav1.APIResource{Name: name, Kind: kind, Namespaced: namespaced, Verbs: verbs}
}

var all = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// discovery is an apiserver's discovery: autoscaling prefers v2 and
// serves v1 too; example.com serves gadgets only in its older version.
func discovery() synctest.Reads {
	return synctest.Reads{
		"/api": &metav1.APIVersions{Versions: []string{"v1"}},
		"/apis": &metav1.APIGroupList{Groups: []metav1.APIGroup{groupOf("autoscaling", "v2", "v1"),
			groupOf("rbac.authorization.k8s.io", "v1"), groupOf("events.k8s.io", "v1"), groupOf("example.com", "v2", "v1")}},
		"/apis/autoscaling": groupOf("autoscaling", "v2", "v1"),
		"/api/v1": resourceList("v1", apiResource("configmaps", "ConfigMap", true, all...),
			apiResource("pods", "Pod", true, all...), apiResource("pods/status", "Pod", true, "get", "patch", "update"),
			apiResource("events", "Event", true, all...), apiResource("bindings", "Binding", true, "create"),
			apiResource("componentstatuses", "ComponentStatus", false, "get", "list")),
		"/apis/autoscaling/v2": resourceList("autoscaling/v2", apiResource("horizontalpodautoscalers", "HorizontalPodAutoscaler", true, all...)),
		"/apis/autoscaling/v1": resourceList("autoscaling/v1", apiResource("horizontalpodautoscalers", "HorizontalPodAutoscaler", true, all...)),
		"/apis/rbac.authorization.k8s.io/v1": resourceList("rbac.authorization.k8s.io/v1",
			apiResource("roles", "Role", true, all...), apiResource("clusterroles", "ClusterRole", false, all...)),
		"/apis/events.k8s.io/v1": resourceList("events.k8s.io/v1", apiResource("events", "Event", true, all...)),
		"/apis/example.com/v2":   resourceList("example.com/v2", apiResource("widgets", "Widget", true, all...)),
		"/apis/example.com/v1": resourceList("example.com/v1", apiResource("widgets", "Widget", true, all...),
			apiResource("gadgets", "Gadget", false, all...)),
	}
}

func names(rs []framework.APIResource) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.API.String())
	}
	slices.Sort(out)
	return out
}

// TestDiscoverResources reads each resource once, without subresources,
// in its group's preferred version where it is served there.
func TestDiscoverResources(t *testing.T) {
	cases := []struct {
		name   string
		groups []string
		want   string
	}{
		{name: "every group: the preferred version, or the first that serves the resource",
			want: "bindings/v1 clusterroles.rbac.authorization.k8s.io/v1 componentstatuses/v1 configmaps/v1 events.events.k8s.io/v1 " +
				"events/v1 gadgets.example.com/v1 horizontalpodautoscalers.autoscaling/v2 pods/v1 roles.rbac.authorization.k8s.io/v1 widgets.example.com/v2"},
		{name: "one group", groups: []string{"autoscaling"}, want: "horizontalpodautoscalers.autoscaling/v2"},
		{name: "the core group", groups: []string{""}, want: "bindings/v1 componentstatuses/v1 configmaps/v1 events/v1 pods/v1"},
		{name: "a group not served has no resources", groups: []string{"nothing.example.com"}, want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := framework.DiscoverResources(context.Background(), discovery().Client(), tc.groups...)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(names(rs), " "); got != tc.want {
				t.Errorf("discovered %s\nwant       %s", got, tc.want)
			}
		})
	}
	t.Run("the aggregated form finds the same, in two reads", func(t *testing.T) {
		reads := aggregated(discovery())
		rs, err := framework.DiscoverResources(context.Background(), reads.Client())
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Join(names(rs), " "), strings.Join(names(must(framework.DiscoverResources(context.Background(), discovery().Client()))), " "); got != want {
			t.Errorf("aggregated %s\nlegacy     %s", got, want)
		}
	})
	t.Run("a failed read is an error", func(t *testing.T) {
		if _, err := framework.DiscoverResources(context.Background(), synctest.Reads{}.Client()); err == nil {
			t.Fatal("no error without /apis")
		}
	})
}

func crd(group, plural, kind string, established bool, versions ...string) *apiextv1.CustomResourceDefinition {
	c := &apiextv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextv1.CustomResourceDefinitionSpec{Group: group, Scope: apiextv1.NamespaceScoped,
			Names: apiextv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind}}}
	for _, v := range versions {
		c.Spec.Versions = append(c.Spec.Versions, apiextv1.CustomResourceDefinitionVersion{Name: v, Served: true})
	}
	if established {
		c.Status.AcceptedNames = c.Spec.Names
		c.Status.Conditions = []apiextv1.CustomResourceDefinitionCondition{{Type: apiextv1.Established, Status: apiextv1.ConditionTrue}}
	}
	return c
}

// TestFollowed: every discovered kind with the verbs, none of those
// skipped, each once; a CRD's kind in its CRD's version.
func TestFollowed(t *testing.T) {
	rs, err := framework.DiscoverResources(context.Background(), discovery().Client())
	if err != nil {
		t.Fatal(err)
	}
	skip := map[schema.GroupResource]bool{{Resource: "events"}: true, {Group: "events.k8s.io", Resource: "events"}: true,
		{Resource: "pods"}: true}
	cases := []struct {
		name string
		crds []*apiextv1.CustomResourceDefinition
		want string
	}{
		{name: "discovery alone: what takes list, watch and delete, not skipped",
			want: "clusterroles.rbac.authorization.k8s.io/v1 configmaps/v1 gadgets.example.com/v1 " +
				"horizontalpodautoscalers.autoscaling/v2 roles.rbac.authorization.k8s.io/v1 widgets.example.com/v2"},
		{name: "a served CRD's kind is followed in its CRD's version, once",
			crds: []*apiextv1.CustomResourceDefinition{crd("example.com", "widgets", "Widget", true, "v1beta1", "v1")},
			want: "clusterroles.rbac.authorization.k8s.io/v1 configmaps/v1 gadgets.example.com/v1 " +
				"horizontalpodautoscalers.autoscaling/v2 roles.rbac.authorization.k8s.io/v1 widgets.example.com/v1"},
		{name: "a CRD not established keeps its kind unfollowed, whatever discovery said",
			crds: []*apiextv1.CustomResourceDefinition{crd("example.com", "widgets", "Widget", false, "v2")},
			want: "clusterroles.rbac.authorization.k8s.io/v1 configmaps/v1 gadgets.example.com/v1 " +
				"horizontalpodautoscalers.autoscaling/v2 roles.rbac.authorization.k8s.io/v1"},
		{name: "a CRD discovery does not list yet is followed",
			crds: []*apiextv1.CustomResourceDefinition{crd("example.org", "things", "Thing", true, "v1")},
			want: "clusterroles.rbac.authorization.k8s.io/v1 configmaps/v1 gadgets.example.com/v1 " +
				"horizontalpodautoscalers.autoscaling/v2 roles.rbac.authorization.k8s.io/v1 things.example.org/v1 widgets.example.com/v2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for gr, r := range framework.Followed(tc.crds, rs, skip, gcVerbs) {
				if r.API.GroupResource() != gr {
					t.Errorf("%v followed under %v", r.API, gr)
				}
				got = append(got, r.API.String())
			}
			slices.Sort(got)
			if s := strings.Join(got, " "); s != tc.want {
				t.Errorf("followed %s\nwant     %s", s, tc.want)
			}
		})
	}
}

// TestMetadataResourcesFollowDiscovery: each kind discovery lists is
// added once, and removed when discovery no longer lists it; the shared
// ones never.
func TestMetadataResourcesFollowDiscovery(t *testing.T) {
	reads := discovery()
	var added, removed []string
	m := framework.NewMetadataResources(reads.Client(), slog.New(slog.DiscardHandler), framework.MetadataConfig{
		Shared: []*framework.Resource{{API: client.ConfigMaps}, {API: client.ClusterRoles}},
		Skip:   []schema.GroupResource{{Resource: "events"}, {Group: "events.k8s.io", Resource: "events"}},
		Verbs:  gcVerbs,
		OnAdd:  func(r *framework.Resource) { added = append(added, r.API.String()+" "+r.GVK.Kind) },
		OnRemove: func(r *framework.Resource) {
			removed = append(removed, r.API.String())
		},
		OnSynced: func(*framework.Resource) {},
	})
	check := func(what string, got []string, want string) {
		t.Helper()
		slices.Sort(got)
		if s := strings.Join(got, ", "); s != want {
			t.Errorf("%s %s, want %s", what, s, want)
		}
	}
	if err := m.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("added", added, "customresourcedefinitions.apiextensions.k8s.io/v1 CustomResourceDefinition, "+
		"gadgets.example.com/v1 Gadget, horizontalpodautoscalers.autoscaling/v2 HorizontalPodAutoscaler, "+
		"pods/v1 Pod, roles.rbac.authorization.k8s.io/v1 Role, widgets.example.com/v2 Widget")
	if _, ok := m.Informer(schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"}); !ok {
		t.Error("no informer of roles")
	}
	added = nil
	if err := m.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("added again", added, "")

	delete(reads, "/apis/example.com/v1")
	reads["/apis/autoscaling/v2"] = resourceList("autoscaling/v2")
	if err := m.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("removed", removed, "gadgets.example.com/v1, horizontalpodautoscalers.autoscaling/v2")
	check("added", added, "horizontalpodautoscalers.autoscaling/v1 HorizontalPodAutoscaler")

	removed = nil
	if err := m.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	delete(reads, "/apis")
	if err := m.Refresh(context.Background()); err == nil {
		t.Fatal("a failed discovery is no error")
	}
	check("removed after a failed discovery", removed, "")
}

// TestMetadataInformerKeepsWhatItsReadersUse: owners, finalizers and
// labels stay in the cache; managedFields and annotations do not.
func TestMetadataInformerKeepsWhatItsReadersUse(t *testing.T) {
	inf := framework.NewMetadataInformer(synctest.Reads{}.Client(), client.Roles, slog.New(slog.DiscardHandler))
	inf.Replace([]*metav1.PartialObjectMetadata{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r",
		Labels: map[string]string{"app": "a"}, Finalizers: []string{"orphan"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "u"}},
		Annotations:     map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"},
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}})
	o, ok := inf.Store().Get("ns", "r")
	if !ok {
		t.Fatal("not cached")
	}
	if len(o.OwnerReferences) != 1 || len(o.Finalizers) != 1 || o.Labels["app"] != "a" {
		t.Errorf("owners, finalizers or labels dropped: %+v", o.ObjectMeta)
	}
	if o.Annotations != nil || o.ManagedFields != nil {
		t.Errorf("annotations or managedFields kept: %+v", o.ObjectMeta)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// aggregated is legacy's discovery in the aggregated form only: /api and
// /apis, nothing per group version.
func aggregated(legacy synctest.Reads) synctest.Reads {
	group := func(name string, versions []string) apidiscoveryv2.APIGroupDiscovery {
		g := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, v := range versions {
			path := "/apis/" + name + "/" + v
			if name == "" {
				path = "/api/" + v
			}
			vd := apidiscoveryv2.APIVersionDiscovery{Version: v}
			for _, r := range legacy[path].(*metav1.APIResourceList).APIResources {
				if strings.Contains(r.Name, "/") {
					continue
				}
				scope := apidiscoveryv2.ScopeCluster
				if r.Namespaced {
					scope = apidiscoveryv2.ScopeNamespace
				}
				vd.Resources = append(vd.Resources, apidiscoveryv2.APIResourceDiscovery{Resource: r.Name, Scope: scope,
					ResponseKind: &metav1.GroupVersionKind{Group: name, Version: v, Kind: r.Kind}, Verbs: r.Verbs})
			}
			g.Versions = append(g.Versions, vd)
		}
		return g
	}
	apis := &apidiscoveryv2.APIGroupDiscoveryList{}
	for _, g := range legacy["/apis"].(*metav1.APIGroupList).Groups {
		var versions []string
		for _, v := range g.Versions {
			versions = append(versions, v.Version)
		}
		apis.Items = append(apis.Items, group(g.Name, versions))
	}
	return synctest.Reads{
		"/api":  &apidiscoveryv2.APIGroupDiscoveryList{Items: []apidiscoveryv2.APIGroupDiscovery{group("", []string{"v1"})}},
		"/apis": apis,
	}
}
