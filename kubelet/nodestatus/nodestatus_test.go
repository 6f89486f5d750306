package nodestatus

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
)

func TestReadyCondition(t *testing.T) {
	cases := []struct {
		name       string
		networkErr error
		status     corev1.ConditionStatus
		reason     string
		inMessage  string
	}{
		{"a node whose pods can get a network is ready", nil, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"},
		{"a node whose pod network is broken is not ready, with the runtime's reason", errors.New("CNI plugin bridge not found"),
			corev1.ConditionFalse, "KubeletNotReady", "NetworkReady=false reason:NetworkPluginNotReady message:CNI plugin bridge not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := readyCondition(tc.networkErr)
			if c.status != tc.status || c.reason != tc.reason || !strings.Contains(c.message, tc.inMessage) {
				t.Fatalf("readyCondition = %+v, want %s %s containing %q", c, tc.status, tc.reason, tc.inMessage)
			}
		})
	}
}

// fakeLeases is the Lease API in memory; it counts the requests.
type fakeLeases struct {
	stored        *coordinationv1.Lease
	gets, updates int
	failUpdate    bool
}

func (f *fakeLeases) Get(_ context.Context, _, _ string, _ metav1.GetOptions) (*coordinationv1.Lease, error) {
	f.gets++
	if f.stored == nil {
		return nil, apierrors.NewNotFound(coordinationv1.Resource("leases"), "n1")
	}
	return f.stored.DeepCopy(), nil
}

func (f *fakeLeases) Create(_ context.Context, l *coordinationv1.Lease, _ metav1.CreateOptions) (*coordinationv1.Lease, error) {
	f.stored = l.DeepCopy()
	return l, nil
}

func (f *fakeLeases) Update(_ context.Context, l *coordinationv1.Lease, _ metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	f.updates++
	if f.failUpdate {
		return nil, apierrors.NewConflict(coordinationv1.Resource("leases"), "n1", errors.New("changed"))
	}
	f.stored = l.DeepCopy()
	return l, nil
}

func TestLeaseRenewalReadsOnlyAfterAFailure(t *testing.T) {
	fc := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := New(Config{NodeName: "n1", LeaseDuration: 40 * time.Second, Clock: fc})
	api := &fakeLeases{}
	steps := []struct {
		name          string
		failUpdate    bool
		gets, updates int // the requests so far
		wantErr       bool
	}{
		{name: "the first renewal finds no Lease and creates it", gets: 1, updates: 0},
		{name: "the next renews the copy it wrote, without reading", gets: 1, updates: 1},
		{name: "and so on", gets: 1, updates: 2},
		{name: "a failed renewal is reported", failUpdate: true, gets: 1, updates: 3, wantErr: true},
		{name: "the renewal after a failure reads the Lease again", gets: 2, updates: 4},
	}
	var last *coordinationv1.Lease
	for _, s := range steps {
		fc.Step(10 * time.Second)
		api.failUpdate = s.failUpdate
		var err error
		last, err = m.renewLease(context.Background(), api, last)
		if (err != nil) != s.wantErr || api.gets != s.gets || api.updates != s.updates {
			t.Fatalf("%s: err %v, %d gets and %d updates; want error %v, %d and %d", s.name, err, api.gets, api.updates, s.wantErr, s.gets, s.updates)
		}
		if !s.wantErr && !api.stored.Spec.RenewTime.Time.Equal(fc.Now()) {
			t.Errorf("%s: renewTime %v, want %v", s.name, api.stored.Spec.RenewTime, fc.Now())
		}
	}
}
