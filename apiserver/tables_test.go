package apiserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A resource without a Table form (an access review) answers 406 with a
// complete Status when the client accepts only a Table, as kube-apiserver's
// negotiation does (the "Servers with support for Table transformation"
// conformance spec); a client that also takes plain JSON gets JSON, and a
// stored resource still answers as a Table.
func TestTableOfAResourceWithoutOne(t *testing.T) {
	ts := startTestServer(t)
	const table = "application/json;as=Table;v=v1;g=meta.k8s.io"
	review := `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"nonResourceAttributes":{"path":"/","verb":"get"}}}`
	tests := []struct {
		name     string
		path     string
		body     string
		accept   string
		wantCode int
		wantKind string
	}{
		{"a review asked for only as a Table is refused with 406", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review, table, http.StatusNotAcceptable, "Status"},
		{"a review asked for as a Table or JSON answers JSON", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review, table + ", application/json", http.StatusCreated, "SelfSubjectAccessReview"},
		{"a review asked for as JSON answers JSON", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review, "application/json", http.StatusCreated, "SelfSubjectAccessReview"},
		{"a stored object asked for as a Table answers a Table", "/api/v1/namespaces/default/configmaps",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"as-table"}}`, table, http.StatusCreated, "Table"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, data := ts.do(t, http.MethodPost, tt.path, tt.body, "Content-Type", "application/json", "Accept", tt.accept)
			var kind metav1.TypeMeta
			if err := json.Unmarshal(data, &kind); err != nil {
				t.Fatalf("%d %s: %v", code, data, err)
			}
			if code != tt.wantCode || kind.Kind != tt.wantKind {
				t.Fatalf("%d %s, want %d and a %s", code, data, tt.wantCode, tt.wantKind)
			}
			var got metav1.Status
			if tt.wantCode == http.StatusNotAcceptable && (json.Unmarshal(data, &got) != nil ||
				got.Reason != metav1.StatusReasonNotAcceptable || got.Code != http.StatusNotAcceptable || got.Details == nil ||
				!strings.Contains(got.Message, "only the following media types are accepted")) {
				t.Errorf("Status %s, want reason NotAcceptable, code 406, details and the accepted media types", data)
			}
		})
	}
}
