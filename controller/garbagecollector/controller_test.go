package garbagecollector

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"minik/client"
	"minik/controller/framework"
	"minik/controller/internal/synctest"
	"minik/controller/internal/testutil"
)

// TestSyncRunsThePlanThroughTheSink drives the collector's sync over
// caches filled by hand and a FakeSink: no apiserver. Every owner here is
// cached, so no live GET is needed to judge it.
func TestSyncRunsThePlanThroughTheSink(t *testing.T) {
	rs := func(finalizer string) *appsv1.ReplicaSet {
		r := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "default", UID: "uid-rs"}}
		if finalizer != "" {
			now := metav1.NewTime(testutil.T0)
			r.DeletionTimestamp, r.Finalizers = &now, []string{finalizer}
		}
		return r
	}
	// One dependent each: the cache's index returns several in no order.
	pods := func(owner *appsv1.ReplicaSet, name string) []*corev1.Pod {
		return []*corev1.Pod{testutil.Pod(name).Owner(owner, "apps/v1", "ReplicaSet").Obj()}
	}
	orphaning, foreground := rs(metav1.FinalizerOrphanDependents), rs(metav1.FinalizerDeleteDependents)
	cases := []struct {
		name     string
		rs       *appsv1.ReplicaSet
		pods     []*corev1.Pod
		key      string
		fail     ActionType // the sink refuses this action
		wantDone []string
		wantErr  string
	}{
		{name: "an owner deleted with orphan frees its dependents, then drops its finalizer",
			rs: orphaning, pods: pods(orphaning, "p1"), key: "replicasets.apps|default|rs",
			wantDone: []string{"RemoveOwnerRefs default/p1", "RemoveFinalizer default/rs"}},
		{name: "a foreground owner queues its blocking dependents and keeps its finalizer",
			rs: foreground, pods: pods(foreground, "p1"), key: "replicasets.apps|default|rs",
			wantDone: []string{"Enqueue default/p1"}},
		{name: "a dependent of an owner waiting in the foreground is deleted",
			rs: foreground, pods: pods(foreground, "p1"), key: "pods|default|p1",
			wantDone: []string{"Delete default/p1"}},
		{name: "a dependent of a solid owner is left alone",
			rs: rs(""), pods: pods(rs(""), "p1"), key: "pods|default|p1"},
		{name: "a refused write ends the sync with its error; the finalizer stays",
			rs: orphaning, pods: pods(orphaning, "p1"), key: "replicasets.apps|default|rs", fail: RemoveOwnerRefs,
			wantErr: "RemoveOwnerRefs default/p1: refused"},
		{name: "an object no longer in the cache is nothing to do", key: "pods|default|gone"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
			if tc.rs != nil {
				inf.ReplicaSets.Replace([]*appsv1.ReplicaSet{tc.rs})
			}
			inf.Pods.Replace(tc.pods)
			sink := synctest.Refusing(func(a Action) bool { return a.Type == tc.fail })
			gc := New(&client.Client{}, inf, slog.New(slog.DiscardHandler))
			gc.sink = sink
			_, err := gc.sync(context.Background(), tc.key)
			synctest.Check(t, err, tc.wantErr, sink, tc.wantDone)
		})
	}
}

// TestDependentsOfEveryCachedKind: an owner's dependents are found in the
// cache of each kind the shared informers hold whole, claims and
// cluster-scoped kinds too; a deleted owner queues them all.
func TestDependentsOfEveryCachedKind(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "uid-owner"}
	meta := func(ns, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), OwnerReferences: []metav1.OwnerReference{owner}}
	}
	inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
	inf.PersistentVolumeClaims.Replace([]*corev1.PersistentVolumeClaim{{ObjectMeta: meta("default", "claim")}})
	inf.PersistentVolumes.Replace([]*corev1.PersistentVolume{{ObjectMeta: meta("", "pv")}})
	inf.Namespaces.Replace([]*corev1.Namespace{{ObjectMeta: meta("", "ns")}})
	inf.ClusterRoles.Replace([]*rbacv1.ClusterRole{{ObjectMeta: meta("", "role")}})
	inf.StorageClasses.Replace([]*storagev1.StorageClass{{ObjectMeta: meta("", "class")}})
	gc := New(&client.Client{}, inf, slog.New(slog.DiscardHandler))
	var got []string
	for _, d := range gc.dependents("uid-owner") {
		got = append(got, d.key)
	}
	slices.Sort(got)
	want := []string{"clusterroles.rbac.authorization.k8s.io||role", "namespaces||ns", "persistentvolumeclaims|default|claim",
		"persistentvolumes||pv", "storageclasses.storage.k8s.io||class"}
	if !slices.Equal(got, want) {
		t.Errorf("dependents %v, want %v", got, want)
	}
}

// TestSyncFollowsEveryServedKind: the kinds with no shared informer that
// discovery lists (HorizontalPodAutoscalers, Ingresses, Roles) are
// followed through metadata-only caches, as owners and as dependents.
// A gone owner is confirmed by a live GET, here a NotFound.
func TestSyncFollowsEveryServedKind(t *testing.T) {
	all := []string{"create", "delete", "get", "list", "patch", "update", "watch"}
	group := func(name string) metav1.APIGroup {
		v := metav1.GroupVersionForDiscovery{GroupVersion: name + "/v1", Version: "v1"}
		return metav1.APIGroup{Name: name, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v}
	}
	resources := func(gv string, rs ...metav1.APIResource) *metav1.APIResourceList {
		return &metav1.APIResourceList{GroupVersion: gv, APIResources: rs}
	}
	discovery := synctest.Reads{
		"/api": &metav1.APIVersions{Versions: []string{"v1"}},
		"/apis": &metav1.APIGroupList{Groups: []metav1.APIGroup{group("autoscaling"), group("networking.k8s.io"),
			group("rbac.authorization.k8s.io"), group("events.k8s.io")}},
		"/api/v1": resources("v1", metav1.APIResource{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: all},
			metav1.APIResource{Name: "events", Namespaced: true, Kind: "Event", Verbs: all}),
		"/apis/autoscaling/v1": resources("autoscaling/v1",
			metav1.APIResource{Name: "horizontalpodautoscalers", Namespaced: true, Kind: "HorizontalPodAutoscaler", Verbs: all}),
		"/apis/networking.k8s.io/v1": resources("networking.k8s.io/v1",
			metav1.APIResource{Name: "ingresses", Namespaced: true, Kind: "Ingress", Verbs: all}),
		"/apis/rbac.authorization.k8s.io/v1": resources("rbac.authorization.k8s.io/v1",
			metav1.APIResource{Name: "roles", Namespaced: true, Kind: "Role", Verbs: all}),
		"/apis/events.k8s.io/v1": resources("events.k8s.io/v1",
			metav1.APIResource{Name: "events", Namespaced: true, Kind: "Event", Verbs: all}),
	}
	ref := func(apiVersion, kind, name string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("uid-" + name)}
	}
	meta := func(name string, owners ...metav1.OwnerReference) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), OwnerReferences: owners}
	}
	partial := func(m metav1.ObjectMeta) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: m}
	}
	hpa := ref("autoscaling/v1", "HorizontalPodAutoscaler", "hpa")
	ingress := ref("networking.k8s.io/v1", "Ingress", "web")
	cm := ref("v1", "ConfigMap", "cm")
	roles := schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"}
	ingresses := schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}
	cases := []struct {
		name       string
		configMaps []*corev1.ConfigMap
		cached     map[schema.GroupResource][]*metav1.PartialObjectMetadata
		key        string
		wantDone   []string
	}{
		{name: "a ConfigMap owned by a deleted HorizontalPodAutoscaler is deleted",
			configMaps: []*corev1.ConfigMap{{ObjectMeta: meta("owned", hpa)}}, key: "configmaps|default|owned",
			wantDone: []string{"Delete default/owned"}},
		{name: "a ConfigMap owned by an Ingress still there is kept",
			configMaps: []*corev1.ConfigMap{{ObjectMeta: meta("owned", ingress)}}, key: "configmaps|default|owned",
			cached: map[schema.GroupResource][]*metav1.PartialObjectMetadata{ingresses: {partial(meta("web"))}}},
		{name: "a Role owned by a deleted ConfigMap is deleted",
			cached: map[schema.GroupResource][]*metav1.PartialObjectMetadata{roles: {partial(meta("r", cm))}},
			key:    "roles.rbac.authorization.k8s.io|default|r", wantDone: []string{"Delete default/r"}},
		{name: "an Ingress owned by a deleted Role, and by a ConfigMap still there, loses only the Role",
			configMaps: []*corev1.ConfigMap{{ObjectMeta: meta("cm")}},
			cached: map[schema.GroupResource][]*metav1.PartialObjectMetadata{
				ingresses: {partial(meta("web", ref("rbac.authorization.k8s.io/v1", "Role", "gone"), cm))}},
			key: "ingresses.networking.k8s.io|default|web", wantDone: []string{"RemoveOwnerRefs default/web"}},
		{name: "events are not followed",
			key: "events|default|e"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reads := maps.Clone(discovery)
			c := reads.Client()
			inf := framework.NewInformers(c, slog.New(slog.DiscardHandler))
			inf.ConfigMaps.Replace(tc.configMaps)
			gc := New(c, inf, slog.New(slog.DiscardHandler))
			sink := &framework.FakeSink[Action]{}
			gc.sink = sink
			if err := gc.followed.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
			for gr, objs := range tc.cached {
				mi, ok := gc.followed.Informer(gr)
				if !ok {
					t.Fatalf("%v not followed", gr)
				}
				mi.Replace(objs)
			}
			for _, gr := range []schema.GroupResource{{Resource: "events"}, {Group: "events.k8s.io", Resource: "events"}} {
				if _, ok := gc.followed.Informer(gr); ok {
					t.Fatalf("%v followed", gr)
				}
			}
			// The apiserver holds what the cache holds: a dangling owner
			// makes the collector read the object again.
			key := strings.Split(tc.key, "|")
			if r := gc.byName[key[0]]; r != nil {
				if obj, ok := r.Get(key[1], key[2]); ok {
					reads[r.API.Path(key[1], key[2])] = obj
				}
			}
			_, err := gc.sync(context.Background(), tc.key)
			synctest.Check(t, err, "", sink, tc.wantDone)
		})
	}
}

// TestSyncJudgesADanglingOwnerOnTheLiveObject: the cache may still show an
// owner reference that a write (the collector's own orphaning patch) has
// already dropped when the owner goes. Before acting on a dangling owner
// the collector reads the object again and plans from that copy.
func TestSyncJudgesADanglingOwnerOnTheLiveObject(t *testing.T) {
	gone := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-web"}
	rs := func(uid types.UID, rv string, owners ...metav1.OwnerReference) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "default", UID: uid,
			ResourceVersion: rv, OwnerReferences: owners}}
	}
	cached := rs("uid-rs", "5", gone)
	const path = "/apis/apps/v1/namespaces/default/replicasets/rs"
	cases := []struct {
		name     string
		live     *appsv1.ReplicaSet // nil: NotFound
		wantDone []string
	}{
		{name: "the live object still names the gone owner: deleted", live: cached, wantDone: []string{"Delete default/rs"}},
		{name: "the live object was orphaned since: kept", live: rs("uid-rs", "6")},
		{name: "the live object gained a solid owner since: it loses the gone one",
			live:     rs("uid-rs", "7", gone, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "uid-cm"}),
			wantDone: []string{"RemoveOwnerRefs default/rs"}},
		{name: "the object is gone: nothing to do"},
		{name: "a new object of that name: left to its own event", live: rs("uid-other", "8")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reads := synctest.Reads{}
			if tc.live != nil {
				reads[path] = tc.live
			}
			inf := framework.NewInformers(reads.Client(), slog.New(slog.DiscardHandler))
			inf.ReplicaSets.Replace([]*appsv1.ReplicaSet{cached})
			inf.ConfigMaps.Replace([]*corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default", UID: "uid-cm"}}})
			gc := New(reads.Client(), inf, slog.New(slog.DiscardHandler))
			sink := &framework.FakeSink[Action]{}
			gc.sink = sink
			_, err := gc.sync(context.Background(), "replicasets.apps|default|rs")
			synctest.Check(t, err, "", sink, tc.wantDone)
		})
	}
}

// Only a change of owners or of deletion queues an object again: a
// status update or a Lease renewal does not.
func TestGCRelevantChange(t *testing.T) {
	owner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n", UID: "u1"}}
	base := func() *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Name: "x", OwnerReferences: owner, ResourceVersion: "1", Labels: map[string]string{"a": "b"}}
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		change func(m *metav1.ObjectMeta)
		want   bool
	}{
		{"a new resourceVersion and labels", func(m *metav1.ObjectMeta) { m.ResourceVersion, m.Labels = "2", nil }, false},
		{"another owner", func(m *metav1.ObjectMeta) {
			m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{Name: "m", UID: "u2"})
		}, true},
		{"owners dropped", func(m *metav1.ObjectMeta) { m.OwnerReferences = nil }, true},
		{"blockOwnerDeletion set", func(m *metav1.ObjectMeta) {
			yes := true
			m.OwnerReferences = []metav1.OwnerReference{owner[0]}
			m.OwnerReferences[0].BlockOwnerDeletion = &yes
		}, true},
		{"deletion starts", func(m *metav1.ObjectMeta) { m.DeletionTimestamp = &now }, true},
		{"a finalizer added", func(m *metav1.ObjectMeta) { m.Finalizers = []string{metav1.FinalizerDeleteDependents} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := base()
			tc.change(next)
			if got := gcRelevantChange(base(), next); got != tc.want {
				t.Fatalf("gcRelevantChange = %v, want %v", got, tc.want)
			}
		})
	}
}
