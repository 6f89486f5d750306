package endpointslicemirroring

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
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
	external := Service("db").NoSelector().Obj()
	db := makeEndpoints("db", subset([]string{"192.0.2.10"}, nil, 5432))
	mirrored := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db-1", UID: "uid-db-1",
		Labels: map[string]string{discoveryv1.LabelServiceName: "db", discoveryv1.LabelManagedBy: ControllerName}},
		AddressType: discoveryv1.AddressTypeIPv4}
	cases := []struct {
		name      string
		services  []*corev1.Service
		endpoints []*corev1.Endpoints
		slices    []*discoveryv1.EndpointSlice
		fail      ActionType // the sink refuses this action with failErr
		failErr   error
		wantDone  []string
		wantErr   string
	}{
		{name: "the Endpoints of a selectorless Service get a mirrored slice",
			services: []*corev1.Service{external}, endpoints: []*corev1.Endpoints{db},
			wantDone: []string{"CreateSlice default/db-*"}},
		{name: "an address that is no IP is a warning before the writes",
			services:  []*corev1.Service{external},
			endpoints: []*corev1.Endpoints{makeEndpoints("db", subset([]string{"192.0.2.10", "db.example.com"}, nil, 5432))},
			wantDone:  []string{"Warn InvalidIPAddress", "CreateSlice default/db-*"}},
		{name: "a Service that gained a selector loses the mirrored slices",
			services: []*corev1.Service{Service("db").Selector("app", "db").Obj()}, endpoints: []*corev1.Endpoints{db},
			slices: []*discoveryv1.EndpointSlice{mirrored}, wantDone: []string{"DeleteSlice default/db-1"}},
		{name: "neither Endpoints nor slices is nothing to do", services: []*corev1.Service{external}},
		{name: "a refused write ends the sync with its error",
			services:  []*corev1.Service{external},
			endpoints: []*corev1.Endpoints{makeEndpoints("db", subset([]string{"192.0.2.10", "db.example.com"}, nil, 5432))},
			fail:      svcutil.CreateSlice, failErr: errors.New("refused"),
			wantDone: []string{"Warn InvalidIPAddress"}, wantErr: "refused"},
		{name: "a create refused in a terminating namespace ends the sync without error",
			services: []*corev1.Service{external}, endpoints: []*corev1.Endpoints{db},
			fail: svcutil.CreateSlice, failErr: svcutil.ErrNamespaceTerminating},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
			inf.AddServiceInformers()
			inf.Services.Replace(tc.services)
			inf.Endpoints.Replace(tc.endpoints)
			inf.EndpointSlices.Replace(tc.slices)
			sink := synctest.RefusingWith(func(a Action) bool { return a.Type == tc.fail }, tc.failErr)
			mc := &Controller{services: inf.Services, endpoints: inf.Endpoints, slices: inf.EndpointSlices,
				tracker: svcutil.NewSliceTracker(),
				sink:    func(string, *corev1.Endpoints) framework.Sink[Action] { return sink }}
			_, err := mc.sync(context.Background(), "default/db")
			synctest.Check(t, err, tc.wantErr, sink, tc.wantDone)
		})
	}
}
