package endpointslice

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/client/record"
	"minik/controller/framework"
	"minik/controller/internal/svcutil"
	"minik/controller/internal/synctest"
	. "minik/controller/internal/testutil"
)

// TestSyncRunsThePlanThroughTheSink drives the controller's sync over
// caches filled by hand and a FakeSink: no apiserver.
func TestSyncRunsThePlanThroughTheSink(t *testing.T) {
	web := Service("web").Selector("app", "web").Port("http", 80, 8080).Obj()
	ours := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1", UID: "uid-web-1",
		ResourceVersion: "5", Labels: map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ControllerName},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: web.UID}}},
		AddressType: discoveryv1.AddressTypeIPv4}
	refused := errors.New("refused")
	cases := []struct {
		name     string
		services []*corev1.Service
		pods     []*corev1.Pod
		slices   []*discoveryv1.EndpointSlice
		wrote    *discoveryv1.EndpointSlice // the tracker's record of our last write
		fail     ActionType                 // the sink refuses this action with failErr
		failErr  error
		wantDone []string
		wantErr  string
	}{
		{name: "a new Service's pods get a slice",
			services: []*corev1.Service{web}, pods: []*corev1.Pod{webPod("a", "10.0.0.1").Ready(t1).Obj()},
			wantDone: []string{"CreateSlice default/web-*"}},
		{name: "a slice that lists no pod any more is filled in place",
			services: []*corev1.Service{web}, pods: []*corev1.Pod{webPod("a", "10.0.0.1").Ready(t1).Obj()},
			slices: []*discoveryv1.EndpointSlice{ours}, wantDone: []string{"UpdateSlice default/web-1"}},
		{name: "a pod on a node not known yet is left out, and the sync is retried",
			services: []*corev1.Service{web},
			pods:     []*corev1.Pod{webPod("a", "10.0.0.1").Ready(t1).Obj(), webPod("b", "10.0.0.2").Node("n9").Ready(t1).Obj()},
			wantDone: []string{"CreateSlice default/web-*"}, wantErr: "pods on nodes [n9] left out"},
		{name: "a cache behind the controller's own writes is not acted on",
			services: []*corev1.Service{web}, pods: []*corev1.Pod{webPod("a", "10.0.0.1").Ready(t1).Obj()},
			slices: []*discoveryv1.EndpointSlice{ours}, wrote: func() *discoveryv1.EndpointSlice {
				s := ours.DeepCopy()
				s.ResourceVersion = "6"
				return s
			}(), wantErr: errStale.Error()},
		{name: "a deleted Service's slices are left to the garbage collector",
			slices: []*discoveryv1.EndpointSlice{ours}},
		{name: "a refused write ends the sync with its error",
			services: []*corev1.Service{web}, fail: svcutil.CreateSlice, failErr: refused, wantErr: "refused"},
		{name: "a create refused in a terminating namespace ends the sync without error",
			services: []*corev1.Service{web}, fail: svcutil.CreateSlice, failErr: svcutil.ErrNamespaceTerminating},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
			inf.AddServiceInformers()
			inf.Services.Replace(tc.services)
			inf.Pods.Replace(tc.pods)
			inf.Nodes.Replace([]*corev1.Node{Node("n1").Obj()})
			inf.EndpointSlices.Replace(tc.slices)
			sink := synctest.RefusingWith(func(a Action) bool { return a.Type == tc.fail }, tc.failErr)
			ec := &Controller{services: inf.Services, pods: inf.Pods, nodes: inf.Nodes, slices: inf.EndpointSlices,
				rec: record.NewRecorder(&client.Client{}, Name, "test"), tracker: svcutil.NewSliceTracker(),
				triggers: map[string]*svcutil.TriggerState{},
				sink:     func(string, *corev1.Service) framework.Sink[Action] { return sink }}
			if tc.wrote != nil {
				ec.tracker.Expect("default/web", tc.wrote)
			}
			_, err := ec.sync(context.Background(), "default/web")
			synctest.Check(t, err, tc.wantErr, sink, tc.wantDone)
		})
	}
}
