package apiserver

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestProfilingIsForMastersOnly(t *testing.T) {
	ts := startTestServer(t)
	if err := ts.client(t).Do(t.Context(), "GET", "/debug/pprof/", nil, nil, nil); err != nil {
		t.Fatalf("admin: %v", err)
	}
	err := ts.clientAs(t, "system:node:a", "system:nodes").Do(t.Context(), "GET", "/debug/pprof/", nil, nil, nil)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("a node: err %v, want Forbidden", err)
	}
}
