package svcutil

import (
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func sliceAt(uid, rv string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), ResourceVersion: rv}}
}

func TestSliceTracker(t *testing.T) {
	const key = "default/web"
	cases := []struct {
		name      string
		writes    func(tr *SliceTracker)
		cached    []*discoveryv1.EndpointSlice
		wantStale bool
	}{
		{"nothing written: never stale", func(*SliceTracker) {}, nil, false},
		{"a created slice the cache does not show yet is stale",
			func(tr *SliceTracker) { tr.Expect(key, sliceAt("a", "10")) }, nil, true},
		{"an updated slice the cache shows at an older version is stale",
			func(tr *SliceTracker) { tr.Expect(key, sliceAt("a", "10")) }, []*discoveryv1.EndpointSlice{sliceAt("a", "9")}, true},
		{"the cache at the written version or later is fresh",
			func(tr *SliceTracker) { tr.Expect(key, sliceAt("a", "10")) }, []*discoveryv1.EndpointSlice{sliceAt("a", "11")}, false},
		{"a deleted slice still cached is stale",
			func(tr *SliceTracker) { tr.ExpectDeletion(key, sliceAt("a", "10")) }, []*discoveryv1.EndpointSlice{sliceAt("a", "10")}, true},
		{"a deleted slice gone from the cache is fresh",
			func(tr *SliceTracker) { tr.ExpectDeletion(key, sliceAt("a", "10")) }, nil, false},
		{"a created slice that someone else deleted meanwhile is no longer waited for",
			func(tr *SliceTracker) { tr.Expect(key, sliceAt("a", "10")); tr.Deleted(sliceAt("a", "12")) }, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewSliceTracker()
			tc.writes(tr)
			if got := tr.Stale(key, tc.cached); got != tc.wantStale {
				t.Errorf("stale = %v, want %v", got, tc.wantStale)
			}
		})
	}
	t.Run("the event of the controller's own last write needs no sync; a later one does", func(t *testing.T) {
		tr := NewSliceTracker()
		tr.Expect(key, sliceAt("a", "10"))
		if !tr.Own(sliceAt("a", "10")) || tr.Own(sliceAt("a", "11")) {
			t.Error("own(rv 10) should be true, own(rv 11) false")
		}
		if !tr.Stale(key, nil) {
			t.Error("not yet seen: stale")
		}
		if tr.Stale(key, []*discoveryv1.EndpointSlice{sliceAt("a", "10")}) || tr.Stale(key, nil) {
			t.Error("once seen, the write is no longer tracked")
		}
	})
}
