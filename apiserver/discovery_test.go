package apiserver

import (
	"testing"
)

// Discovery answers with or without a trailing slash, as kube-apiserver's
// does: `kubectl proxy` users (and upstream's e2e suite) ask for /api/.
func TestDiscoveryWithATrailingSlash(t *testing.T) {
	ts := startTestServer(t)
	c := ts.client(t)
	for _, tc := range []struct{ path, kind string }{
		{"/api", "APIVersions"}, {"/apis", "APIGroupList"}, {"/apis/apps", "APIGroup"},
		{"/api/v1", "APIResourceList"}, {"/apis/apps/v1", "APIResourceList"},
	} {
		for _, p := range []string{tc.path, tc.path + "/"} {
			var out struct {
				Kind string `json:"kind"`
			}
			if err := c.Do(t.Context(), "GET", p, nil, nil, &out); err != nil || out.Kind != tc.kind {
				t.Errorf("GET %s: kind %q, %v; want %s", p, out.Kind, err, tc.kind)
			}
		}
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := c.Do(t.Context(), "GET", "/version/", nil, nil, &v); err != nil || v.GitVersion == "" {
		t.Errorf("GET /version/: %+v, %v", v, err)
	}
}
