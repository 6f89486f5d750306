package namespace

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"minik/controller/framework"
	"minik/controller/internal/synctest"
	"minik/controller/internal/testutil"
)

// TestSyncRunsThePlanThroughTheSink drives the controller's sync over a
// namespace cache filled by hand, canned discovery and lists, and a
// FakeSink: no apiserver.
func TestSyncRunsThePlanThroughTheSink(t *testing.T) {
	all := []string{"create", "delete", "deletecollection", "get", "list"}
	gone := metav1.NewTime(testutil.T0)
	discovery := synctest.Reads{
		"/api": &metav1.APIVersions{Versions: []string{"v1"}},
		"/api/v1": &metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Namespaced: true, Verbs: all}, {Name: "configmaps", Namespaced: true, Verbs: all}}},
		"/apis": &metav1.APIGroupList{Groups: []metav1.APIGroup{{Name: "apps",
			Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: "apps/v1", Version: "v1"}},
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "apps/v1", Version: "v1"}}}},
		"/apis/apps/v1": &metav1.APIResourceList{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Namespaced: true, Verbs: all}}},
		"/api/v1/namespaces/doomed/configmaps":        &metav1.PartialObjectMetadataList{},
		"/apis/apps/v1/namespaces/doomed/deployments": &metav1.PartialObjectMetadataList{},
	}
	with := func(podsLeft int, grace *int64) synctest.Reads {
		r := synctest.Reads{}
		for k, v := range discovery {
			r[k] = v
		}
		list := &metav1.PartialObjectMetadataList{}
		for range podsLeft {
			meta := metav1.ObjectMeta{Finalizers: []string{"example.com/hold"}}
			if grace != nil {
				meta = metav1.ObjectMeta{DeletionTimestamp: &gone, DeletionGracePeriodSeconds: grace}
			}
			list.Items = append(list.Items, metav1.PartialObjectMetadata{ObjectMeta: meta})
		}
		r["/api/v1/namespaces/doomed/pods"] = list
		return r
	}
	deletes := []string{"DeleteCollection doomed deployments.apps", "DeleteCollection doomed pods", "DeleteCollection doomed configmaps"}
	active := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	cases := []struct {
		name        string
		ns          *corev1.Namespace
		reads       synctest.Reads
		refuse      string // the String of the action the sink refuses
		wantDone    []string
		wantErr     string
		wantRequeue time.Duration
	}{
		{name: "an emptied namespace has its collections deleted, workloads first, then is finalized",
			ns: doomed(), reads: with(0, nil), wantDone: append(deletes, "Finalize doomed")},
		{name: "pods with a finalizer left after the deletes: the status says so and the namespace is looked at again",
			ns: doomed(), reads: with(2, nil), wantDone: append(deletes, "UpdateStatus doomed"), wantRequeue: 8 * time.Second},
		{name: "pods in their 30s grace period left after the deletes: looked at again in 16s",
			ns: doomed(), reads: with(2, testutil.Int64(30)), wantDone: append(deletes, "UpdateStatus doomed"), wantRequeue: 16 * time.Second},
		{name: "a refused delete ends the sync before the rest",
			ns: doomed(), reads: with(0, nil), refuse: "DeleteCollection doomed pods",
			wantDone: deletes[:1], wantErr: "DeleteCollection doomed pods: refused"},
		{name: "a refused finalize fails the sync",
			ns: doomed(), reads: with(0, nil), refuse: "Finalize doomed", wantDone: deletes, wantErr: "Finalize doomed: refused"},
		{name: "a failed list writes nothing more after the deletes",
			ns: doomed(), reads: discovery, wantDone: deletes, wantErr: "list pods"},
		{name: "a failed discovery writes nothing",
			ns: doomed(), reads: synctest.Reads{}, wantErr: "discovery"},
		{name: "an active namespace is neither read nor written", ns: active, reads: synctest.Reads{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.reads.Client()
			inf := framework.NewInformers(c, slog.New(slog.DiscardHandler))
			inf.Namespaces.Replace([]*corev1.Namespace{tc.ns})
			sink := synctest.Refusing(func(a Action) bool { return a.String() == tc.refuse })
			nc := &Controller{c: c, inf: inf, clock: testingclock.NewFakeClock(testutil.T0), sink: sink}
			res, err := nc.sync(context.Background(), "doomed")
			synctest.Check(t, err, tc.wantErr, sink, tc.wantDone)
			if res.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeue after %v, want %v", res.RequeueAfter, tc.wantRequeue)
			}
		})
	}
}
