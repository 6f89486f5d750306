package endpoints

import (
	"context"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/controller/framework"
	"minik/controller/internal/svcutil"
	"minik/controller/internal/synctest"
	. "minik/controller/internal/testutil"
)

// TestSyncRunsThePlanThroughTheSink drives the controller's sync over
// caches filled by hand and a FakeSink: no apiserver.
func TestSyncRunsThePlanThroughTheSink(t *testing.T) {
	web := Service("web").Selector("app", "web").Port("http", 80, 8080).Obj()
	empty := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-ep-web"}}
	cases := []struct {
		name      string
		services  []*corev1.Service
		pods      []*corev1.Pod
		endpoints []*corev1.Endpoints
		fail      ActionType // the sink refuses this action
		wantDone  []string
		wantErr   string
	}{
		{name: "a new Service with a ready pod gets its Endpoints",
			services: []*corev1.Service{web}, pods: []*corev1.Pod{webPod("a", "10.0.0.1").Ready(t1).Obj()},
			wantDone: []string{"CreateEndpoints default/web"}},
		{name: "Endpoints that no longer list the Service's pods are updated",
			services: []*corev1.Service{web}, pods: []*corev1.Pod{webPod("a", "10.0.0.1").Ready(t1).Obj()},
			endpoints: []*corev1.Endpoints{empty}, wantDone: []string{"UpdateEndpoints default/web"}},
		{name: "the Endpoints of a deleted Service are deleted",
			endpoints: []*corev1.Endpoints{empty}, wantDone: []string{"DeleteEndpoints default/web"}},
		{name: "a Service without selector keeps the Endpoints its user writes",
			services: []*corev1.Service{Service("web").NoSelector().Obj()}, endpoints: []*corev1.Endpoints{empty}},
		{name: "a refused write ends the sync with its error",
			services: []*corev1.Service{web}, fail: CreateEndpoints, wantErr: "refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
			inf.AddServiceInformers()
			inf.Services.Replace(tc.services)
			inf.Pods.Replace(tc.pods)
			inf.Endpoints.Replace(tc.endpoints)
			sink := synctest.Refusing(func(a Action) bool { return a.Type == tc.fail })
			ec := &Controller{services: inf.Services, pods: inf.Pods, endpoints: inf.Endpoints,
				triggers: map[string]*svcutil.TriggerState{},
				sink:     func(*corev1.Service) framework.Sink[Action] { return sink }}
			_, err := ec.sync(context.Background(), "default/web")
			synctest.Check(t, err, tc.wantErr, sink, tc.wantDone)
		})
	}
}
