package apiserver

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// pods/portforward without an upgrade kubectl could make is a 400 that
// says which upgrades it takes.
func TestPortForwardNeedsAnUpgrade(t *testing.T) {
	ts := startTestServer(t)
	err := ts.client(t).Do(t.Context(), "POST", "/api/v1/namespaces/default/pods/p/portforward", nil, nil, nil)
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "SPDY/3.1") {
		t.Errorf("a plain POST: %v, want 400 naming SPDY/3.1", err)
	}
}
