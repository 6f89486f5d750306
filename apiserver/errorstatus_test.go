package apiserver

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Every error answer is a complete Status, details included: kubectl
// reads details unchecked (kubectl debug crashed on a 404 without them).
func TestErrorsAreCompleteStatuses(t *testing.T) {
	ts := startTestServer(t)
	admin := ts.client(t)
	if _, err := admin.Pods().Create(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	httpFor := func(cfg *tls.Config) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	admHTTP := httpFor(ts.config.TLS)
	anon := ts.config.TLS.Clone()
	anon.Certificates = nil
	certFile, keyFile, err := ts.ca.EnsureClient(ts.pkiDir, "nobody", "nobody", nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	nobody := ts.config.TLS.Clone()
	nobody.Certificates = []tls.Certificate{pair}
	cases := []struct {
		name       string
		client     *http.Client
		method     string
		path       string
		body       string
		header     map[string]string
		wantCode   int32
		wantReason metav1.StatusReason
		// wantName and wantKind are the details expected ("" for none).
		wantName, wantKind string
	}{
		{name: "an unknown path is NotFound", client: admHTTP, method: "GET", path: "/api/v1/nothings", wantCode: 404, wantReason: metav1.StatusReasonNotFound},
		{name: "a missing pod is NotFound, naming it", client: admHTTP, method: "GET", path: "/api/v1/namespaces/default/pods/nope",
			wantCode: 404, wantReason: metav1.StatusReasonNotFound, wantName: "nope", wantKind: "pods"},
		{name: "a missing pod's ephemeral containers are NotFound, naming it", client: admHTTP, method: "GET", path: "/api/v1/namespaces/default/pods/nope/ephemeralcontainers",
			wantCode: 404, wantReason: metav1.StatusReasonNotFound, wantName: "nope", wantKind: "pods"},
		{name: "an existing pod created again is AlreadyExists", client: admHTTP, method: "POST", path: "/api/v1/namespaces/default/pods",
			body:     `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`,
			wantCode: 409, wantReason: metav1.StatusReasonAlreadyExists, wantName: "p", wantKind: "pods"},
		{name: "an invalid pod is Invalid", client: admHTTP, method: "POST", path: "/api/v1/namespaces/default/pods",
			body:     `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad"},"spec":{"containers":[]}}`,
			wantCode: 422, wantReason: metav1.StatusReasonInvalid, wantName: "bad", wantKind: "Pod"},
		{name: "exec without a command is BadRequest", client: admHTTP, method: "GET", path: "/api/v1/namespaces/default/pods/p/exec",
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantName: "p", wantKind: "pods"},
		{name: "attach without an upgrade is BadRequest", client: admHTTP, method: "POST", path: "/api/v1/namespaces/default/pods/p/attach",
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantName: "p", wantKind: "pods"},
		{name: "a body of an unknown type is UnsupportedMediaType", client: admHTTP, method: "POST", path: "/api/v1/namespaces/default/pods",
			body: "x", header: map[string]string{"Content-Type": "text/plain"}, wantCode: 415, wantReason: metav1.StatusReasonUnsupportedMediaType, wantKind: "pods"},
		{name: "an anonymous request is Unauthorized", client: httpFor(anon), method: "GET", path: "/api/v1/namespaces/default/pods/p",
			wantCode: 401, wantReason: metav1.StatusReasonUnauthorized},
		{name: "a user without the right is Forbidden", client: httpFor(nobody), method: "GET", path: "/api/v1/namespaces/default/pods/p",
			wantCode: 403, wantReason: metav1.StatusReasonForbidden, wantName: "p", wantKind: "pods"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tc.method, ts.config.Host+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := tc.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			data, _ := io.ReadAll(resp.Body)
			var st metav1.Status
			if err := json.Unmarshal(data, &st); err != nil {
				t.Fatalf("answer %q is not JSON: %v", data, err)
			}
			if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure || st.Message == "" ||
				st.Code != tc.wantCode || int(st.Code) != resp.StatusCode || st.Reason != tc.wantReason {
				t.Errorf("status %s (HTTP %d), want a Failure Status with code %d, reason %s and a message", data, resp.StatusCode, tc.wantCode, tc.wantReason)
			}
			if st.Details == nil {
				t.Fatalf("status %s has no details", data)
			}
			if st.Details.Name != tc.wantName || st.Details.Kind != tc.wantKind {
				t.Errorf("details %+v, want name %q and kind %q", st.Details, tc.wantName, tc.wantKind)
			}
		})
	}
}
