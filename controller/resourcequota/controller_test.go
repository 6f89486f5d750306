package resourcequota

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	testingclock "k8s.io/utils/clock/testing"

	"minik/client"
	"minik/controller/framework"
	"minik/controller/internal/synctest"
	"minik/internal/quota"
)

// TestSyncRunsThePlanThroughTheSink drives the controller's sync over
// caches filled by hand (older than the quota), canned live lists and a
// FakeSink: no apiserver.
func TestSyncRunsThePlanThroughTheSink(t *testing.T) {
	const podsPath = "/api/v1/namespaces/ns/pods"
	cached := []*corev1.Pod{pod("a", corev1.PodRunning, nil)}
	live := func(names ...string) synctest.Reads {
		l := &corev1.PodList{}
		for _, n := range names {
			l.Items = append(l.Items, *pod(n, corev1.PodRunning, nil))
		}
		return synctest.Reads{podsPath: l}
	}
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "resourcequotas"}, "q", nil)
	cases := []struct {
		name        string
		quota       *corev1.ResourceQuota
		reads       synctest.Reads
		refuseWith  error
		wantDone    []string
		wantErr     string
		wantRequeue time.Duration
	}{
		{name: "a new quota gets its status from the caches, no live list needed to raise a usage",
			quota: podQuota(nil), reads: synctest.Reads{}, wantDone: []string{"UpdateStatus ns/q"}, wantRequeue: ResyncPeriod},
		{name: "a lowering the old cache suggests is checked by a live list, which has the charged pod",
			quota: podQuota(list("pods", "2")), reads: live("a", "b"), wantRequeue: ResyncPeriod},
		{name: "a lowering the live list confirms is written",
			quota: podQuota(list("pods", "2")), reads: live("a"), wantDone: []string{"UpdateStatus ns/q"}, wantRequeue: ResyncPeriod},
		{name: "a failed live list fails the sync, nothing written",
			quota: podQuota(list("pods", "2")), reads: synctest.Reads{}, wantErr: "listing pods"},
		{name: "a refused status write fails the sync",
			quota: podQuota(nil), reads: synctest.Reads{}, refuseWith: apierrors.NewForbidden(schema.GroupResource{Resource: "resourcequotas"}, "q", nil),
			wantErr: "UpdateStatus ns/q: "},
		{name: "a status write that meets a newer quota is retried soon, without an error",
			quota: podQuota(nil), reads: synctest.Reads{}, refuseWith: conflict, wantRequeue: conflictRetry},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.reads.Client()
			inf := framework.NewInformers(c, slog.New(slog.DiscardHandler))
			ctl := New(c, inf, testingclock.NewFakeClock(time.Unix(1000, 0)), slog.New(slog.DiscardHandler))
			inf.Pods.Replace(cached)
			ctl.quotas.Replace([]*corev1.ResourceQuota{tc.quota})
			sink := synctest.RefusingWith(func(Action) bool { return tc.refuseWith != nil }, tc.refuseWith)
			ctl.sink = sink
			res, err := ctl.sync(context.Background(), "ns")
			synctest.Check(t, err, tc.wantErr, sink, tc.wantDone)
			if res.RequeueAfter != tc.wantRequeue {
				t.Errorf("requeue after %v, want %v", res.RequeueAfter, tc.wantRequeue)
			}
		})
	}
}

// TestSyncCountsEveryKindAdmissionCharges drives sync for the kinds
// beyond pods: claims (count and storage), StatefulSets and CronJobs
// from the shared informers, and a custom resource through discovery and
// its own (never started, so never synced) informer. Each quota was just
// charged by admission (resourceVersion 5, newer than any cache here):
// the sync must find the charged object by a live list and leave the
// usage alone, and lower it once the object is gone.
func TestSyncCountsEveryKindAdmissionCharges(t *testing.T) {
	gold := "gold"
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &gold,
			Resources: corev1.VolumeResourceRequirements{Requests: list("storage", "1Gi")}}}
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"}}
	cron := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns"}}
	widget := metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns"}}
	widgetDiscovery := synctest.Reads{
		"/apis/example.com": &metav1.APIGroup{Name: "example.com",
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "example.com/v1", Version: "v1"}},
		"/apis/example.com/v1": &metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", Namespaced: true, Kind: "Widget", Verbs: []string{"create", "delete", "get", "list", "watch"}}}},
	}
	with := func(r synctest.Reads, path string, list any) synctest.Reads {
		out := synctest.Reads{path: list}
		for k, v := range r {
			out[k] = v
		}
		return out
	}
	const (
		claimsPath = "/api/v1/namespaces/ns/persistentvolumeclaims"
		setsPath   = "/apis/apps/v1/namespaces/ns/statefulsets"
		cronsPath  = "/apis/batch/v1/namespaces/ns/cronjobs"
		widgetPath = "/apis/example.com/v1/namespaces/ns/widgets"
	)
	claimQuota := list("persistentvolumeclaims", "2", "requests.storage", "2Gi", "gold.storageclass.storage.k8s.io/requests.storage", "1Gi")
	cases := []struct {
		name         string
		hard, used   corev1.ResourceList
		cachedClaims []*corev1.PersistentVolumeClaim
		reads        synctest.Reads
		wantUsed     string // of the status written; "" for no write
	}{
		{name: "a charged claim the old cache lacks is found by a live list: its count and storage stay",
			hard: claimQuota, used: list("persistentvolumeclaims", "1", "requests.storage", "1Gi", "gold.storageclass.storage.k8s.io/requests.storage", "1Gi"),
			reads: synctest.Reads{claimsPath: &corev1.PersistentVolumeClaimList{Items: []corev1.PersistentVolumeClaim{*claim}}}},
		{name: "a charged claim the cache holds needs no live list",
			hard: claimQuota, used: list("persistentvolumeclaims", "1", "requests.storage", "1Gi", "gold.storageclass.storage.k8s.io/requests.storage", "1Gi"),
			cachedClaims: []*corev1.PersistentVolumeClaim{claim}, reads: synctest.Reads{}},
		{name: "a deleted claim gives back its count and storage",
			hard: claimQuota, used: list("persistentvolumeclaims", "1", "requests.storage", "1Gi", "gold.storageclass.storage.k8s.io/requests.storage", "1Gi"),
			reads:    synctest.Reads{claimsPath: &corev1.PersistentVolumeClaimList{}},
			wantUsed: "gold.storageclass.storage.k8s.io/requests.storage=0,persistentvolumeclaims=0,requests.storage=0"},
		{name: "a new claim quota counts the claims there are",
			hard: claimQuota, cachedClaims: []*corev1.PersistentVolumeClaim{claim}, reads: synctest.Reads{},
			wantUsed: "gold.storageclass.storage.k8s.io/requests.storage=1Gi,persistentvolumeclaims=1,requests.storage=1Gi"},
		{name: "a charged StatefulSet stays counted",
			hard: list("count/statefulsets.apps", "1"), used: list("count/statefulsets.apps", "1"),
			reads: synctest.Reads{setsPath: &appsv1.StatefulSetList{Items: []appsv1.StatefulSet{*set}}}},
		{name: "a deleted StatefulSet is given back",
			hard: list("count/statefulsets.apps", "1"), used: list("count/statefulsets.apps", "1"),
			reads: synctest.Reads{setsPath: &appsv1.StatefulSetList{}}, wantUsed: "count/statefulsets.apps=0"},
		{name: "a charged CronJob stays counted",
			hard: list("count/cronjobs.batch", "1"), used: list("count/cronjobs.batch", "1"),
			reads: synctest.Reads{cronsPath: &batchv1.CronJobList{Items: []batchv1.CronJob{*cron}}}},
		{name: "a deleted CronJob is given back",
			hard: list("count/cronjobs.batch", "1"), used: list("count/cronjobs.batch", "1"),
			reads: synctest.Reads{cronsPath: &batchv1.CronJobList{}}, wantUsed: "count/cronjobs.batch=0"},
		{name: "a charged custom resource is found by discovery and a live list of its metadata",
			hard: list("count/widgets.example.com", "1"), used: list("count/widgets.example.com", "1"),
			reads: with(widgetDiscovery, widgetPath, &metav1.PartialObjectMetadataList{Items: []metav1.PartialObjectMetadata{widget}})},
		{name: "a deleted custom resource is given back",
			hard: list("count/widgets.example.com", "1"), used: list("count/widgets.example.com", "1"),
			reads: with(widgetDiscovery, widgetPath, &metav1.PartialObjectMetadataList{}), wantUsed: "count/widgets.example.com=0"},
		{name: "a kind whose CRD went between discovery and the list keeps its usage",
			hard: list("count/widgets.example.com", "1"), used: list("count/widgets.example.com", "1"), reads: widgetDiscovery},
		{name: "a kind the apiserver does not serve keeps its usage, or gets none",
			hard: list("count/widgets.example.com", "1", "configmaps", "2"), reads: synctest.Reads{}, wantUsed: "configmaps=0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.reads.Client()
			inf := framework.NewInformers(c, slog.New(slog.DiscardHandler))
			ctl := New(c, inf, testingclock.NewFakeClock(time.Unix(1000, 0)), slog.New(slog.DiscardHandler))
			inf.PersistentVolumeClaims.Replace(tc.cachedClaims)
			q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns", ResourceVersion: "5"},
				Spec: corev1.ResourceQuotaSpec{Hard: tc.hard}}
			if tc.used != nil {
				q.Status = corev1.ResourceQuotaStatus{Hard: tc.hard, Used: tc.used}
			}
			ctl.quotas.Replace([]*corev1.ResourceQuota{q})
			sink := &framework.FakeSink[Action]{}
			ctl.sink = sink
			_, err := ctl.sync(context.Background(), "ns")
			var wantDone []string
			if tc.wantUsed != "" {
				wantDone = []string{"UpdateStatus ns/q"}
			}
			synctest.Check(t, err, "", sink, wantDone)
			if done := sink.Done(); len(done) == 1 {
				if got := quota.String(done[0].Quota.Status.Used); got != tc.wantUsed {
					t.Errorf("used written %s, want %s", got, tc.wantUsed)
				}
			}
		})
	}
}

// TestDiscoveredKinds checks the life of a discovered kind's source:
// discovery is asked once per rediscoverPeriod, and the source is
// forgotten once no quota names its kind.
func TestDiscoveredKinds(t *testing.T) {
	reads := synctest.Reads{
		"/apis/example.com": &metav1.APIGroup{Name: "example.com",
			PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "example.com/v1", Version: "v1"}},
		"/apis/example.com/v1": &metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", Namespaced: true, Kind: "Widget", Verbs: []string{"list", "watch"}}}},
		"/apis/example.com/v1/namespaces/ns/widgets": &metav1.PartialObjectMetadataList{},
	}
	asked := 0
	c, err := client.New(client.Config{Host: "http://apiserver.invalid", Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.URL.Path == "/apis/example.com" {
			asked++
		}
		return reads.RoundTrip(req)
	})})
	if err != nil {
		t.Fatal(err)
	}
	inf := framework.NewInformers(c, slog.New(slog.DiscardHandler))
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	ctl := New(c, inf, clk, slog.New(slog.DiscardHandler))
	ctl.sink = &framework.FakeSink[Action]{}
	ctl.quotas.Replace([]*corev1.ResourceQuota{{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns", ResourceVersion: "5"},
		Spec: corev1.ResourceQuotaSpec{Hard: list("count/widgets.example.com", "1")}}})
	sync := func() {
		t.Helper()
		if _, err := ctl.sync(context.Background(), "ns"); err != nil {
			t.Fatal(err)
		}
	}
	sync()
	sync()
	if asked != 1 {
		t.Fatalf("discovery asked %d times within %v, want once", asked, rediscoverPeriod)
	}
	clk.Step(rediscoverPeriod)
	sync()
	if asked != 2 {
		t.Fatalf("discovery asked %d times after %v, want twice", asked, rediscoverPeriod)
	}
	ctl.quotas.Replace(nil)
	ctl.forgetUnnamed()
	if len(ctl.discovered) != 0 {
		t.Fatalf("kinds no quota names are still followed: %v", ctl.discovered)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestSlowDiscoveryHoldsUpNoOtherKind: discovery is asked without the
// controller's lock, so a kind already discovered is found at once while
// another kind's discovery waits on the apiserver.
func TestSlowDiscoveryHoldsUpNoOtherKind(t *testing.T) {
	group := func(name string) *metav1.APIGroup {
		return &metav1.APIGroup{Name: name, PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: name + "/v1", Version: "v1"}}
	}
	resources := func(name, resource, kind string) *metav1.APIResourceList {
		return &metav1.APIResourceList{GroupVersion: name + "/v1", APIResources: []metav1.APIResource{
			{Name: resource, Namespaced: true, Kind: kind, Verbs: []string{"list", "watch"}}}}
	}
	reads := synctest.Reads{
		"/apis/example.com": group("example.com"), "/apis/example.com/v1": resources("example.com", "widgets", "Widget"),
		"/apis/example.org": group("example.org"), "/apis/example.org/v1": resources("example.org", "gadgets", "Gadget"),
	}
	asking, release := make(chan struct{}), make(chan struct{})
	c, err := client.New(client.Config{Host: "http://apiserver.invalid", Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.URL.Path == "/apis/example.com" {
			close(asking)
			<-release
		}
		return reads.RoundTrip(req)
	})})
	if err != nil {
		t.Fatal(err)
	}
	ctl := New(c, framework.NewInformers(c, slog.New(slog.DiscardHandler)), testingclock.NewFakeClock(time.Unix(1000, 0)), slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gadgets, widgets := Kind{Resource: "gadgets", Group: "example.org"}, Kind{Resource: "widgets", Group: "example.com"}
	now := time.Unix(1000, 0)
	if s, err := ctl.sourceOf(ctx, gadgets, now); err != nil || s == nil {
		t.Fatalf("gadgets: %v, %v", s, err)
	}
	slow := make(chan error, 1)
	go func() {
		_, err := ctl.sourceOf(ctx, widgets, now)
		slow <- err
	}()
	<-asking
	found := make(chan struct{})
	go func() {
		_, _ = ctl.sourceOf(ctx, gadgets, now)
		close(found)
	}()
	select {
	case <-found:
	case <-time.After(5 * time.Second):
		t.Fatal("a discovered kind waited on another kind's discovery")
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
}
