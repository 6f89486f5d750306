package nodestatus

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeLeases holds at most one Lease and records the calls made to it.
type fakeLeases struct {
	lease *coordinationv1.Lease
	rv    int
	calls []string
}

var leaseGR = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

func (f *fakeLeases) Get(_ context.Context, _, name string, _ metav1.GetOptions) (*coordinationv1.Lease, error) {
	f.calls = append(f.calls, "get")
	if f.lease == nil {
		return nil, apierrors.NewNotFound(leaseGR, name)
	}
	return f.lease.DeepCopy(), nil
}

func (f *fakeLeases) Create(_ context.Context, l *coordinationv1.Lease, _ metav1.CreateOptions) (*coordinationv1.Lease, error) {
	f.calls = append(f.calls, "create")
	f.store(l)
	return f.lease.DeepCopy(), nil
}

func (f *fakeLeases) Update(_ context.Context, l *coordinationv1.Lease, _ metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	f.calls = append(f.calls, "update")
	if f.lease == nil || l.ResourceVersion != f.lease.ResourceVersion {
		return nil, apierrors.NewConflict(leaseGR, l.Name, nil)
	}
	f.store(l)
	return f.lease.DeepCopy(), nil
}

func (f *fakeLeases) store(l *coordinationv1.Lease) {
	f.rv++
	f.lease = l.DeepCopy()
	f.lease.ResourceVersion = string(rune('0' + f.rv))
}

func TestRenewLease(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		// renewals is how many times the loop renews; changedBehind
		// makes someone else write the Lease before the last one.
		renewals      int
		changedBehind bool
		wantCalls     string
	}{
		{"the first renewal reads the Lease and creates it when there is none", 1, false, "get create"},
		{"later renewals update the Lease last written without reading it", 3, false, "get create update update"},
		{"a renewal whose write conflicts reads the Lease as it is and updates that", 2, true, "get create update get update"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(Config{NodeName: "n1", LeaseDuration: 40 * time.Second, Clock: clocktesting.NewFakeClock(now)})
			f := &fakeLeases{}
			var last *coordinationv1.Lease
			for i := range tc.renewals {
				if tc.changedBehind && i == tc.renewals-1 {
					f.store(f.lease) // another writer: a new resourceVersion
				}
				var err error
				if last, err = m.renewLease(context.Background(), f, last); err != nil {
					t.Fatalf("renewal %d: %v", i, err)
				}
			}
			if got := strings.Join(f.calls, " "); got != tc.wantCalls {
				t.Errorf("calls %q, want %q", got, tc.wantCalls)
			}
			if l := f.lease; l == nil || *l.Spec.HolderIdentity != "n1" || *l.Spec.LeaseDurationSeconds != 40 || !l.Spec.RenewTime.Time.Equal(now) {
				t.Errorf("lease %+v, want held by n1 for 40s, renewed now", f.lease)
			}
			if last == nil || last.ResourceVersion != f.lease.ResourceVersion {
				t.Errorf("the loop keeps %+v, want the Lease last written", last)
			}
		})
	}
}
