package integration

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"minik/internal/testcluster"
)

// TestBadInputGetsAStatus sends raw requests and checks the HTTP code and
// the Status reason of each answer.
func TestBadInputGetsAStatus(t *testing.T) {
	c := testcluster.StartAPIOnly(t)
	transport, err := rest.TransportFor(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: transport}
	base := "https://" + c.Listen
	do := func(method, path, contentType, body string) (int, metav1.Status) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st metav1.Status
		_ = json.NewDecoder(resp.Body).Decode(&st)
		return resp.StatusCode, st
	}
	pods := "/api/v1/namespaces/default/pods"
	good := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"ok"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`
	if code, st := do("POST", pods, "application/json", good); code != 201 {
		t.Fatalf("create: %d %s", code, st.Message)
	}
	cases := []struct {
		name, method, path, contentType, body string
		code                                  int
		reason                                metav1.StatusReason
		contains                              string
	}{
		{"malformed JSON is a 400 in kube-apiserver's words", "POST", pods, "application/json", `{"kind":`, 400, metav1.StatusReasonBadRequest,
			`the object provided is unrecognized (must be of type Pod): couldn't get version/kind; json parse error: unexpected end of JSON input ({"kind":)`},
		{"malformed YAML is a 400", "POST", pods, "application/yaml", "a: [b", 400, metav1.StatusReasonBadRequest, ""},
		{"an unknown field under Strict is a 400 naming it", "POST", pods + "?fieldValidation=Strict", "application/json",
			strings.Replace(good, `"name":"ok"`, `"name":"ok2","bogus":1`, 1), 400, metav1.StatusReasonBadRequest,
			`Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "metadata.bogus"`},
		{"an unknown field in a patch under Strict is a 400 naming it", "PATCH", pods + "/ok?fieldValidation=Strict", "application/merge-patch+json",
			`{"spec":{"bogus":1}}`, 400, metav1.StatusReasonBadRequest, `strict decoding error: unknown field "spec.bogus"`},
		{"a patch that gives a field the wrong type is a 422 on the patch", "PATCH", pods + "/ok", "application/merge-patch+json",
			`{"spec":{"containers":"x"}}`, 422, metav1.StatusReasonInvalid, "patch: Invalid value"},
		{"a missing object is a 404", "GET", pods + "/nope", "", "", 404, metav1.StatusReasonNotFound, `pods "nope" not found`},
		{"an existing name is a 409 AlreadyExists", "POST", pods, "application/json", good, 409, metav1.StatusReasonAlreadyExists, ""},
		{"a bad name is a 422 with a cause", "POST", pods, "application/json", strings.Replace(good, `"name":"ok"`, `"name":"Bad_Name"`, 1),
			422, metav1.StatusReasonInvalid, "metadata.name"},
		{"a bad label is a 422", "POST", pods, "application/json", strings.Replace(good, `"name":"ok"`, `"name":"l","labels":{"a b":"c"}`, 1),
			422, metav1.StatusReasonInvalid, "metadata.labels"},
		{"missing containers are a 422", "POST", pods, "application/json", `{"metadata":{"name":"x"},"spec":{}}`, 422, metav1.StatusReasonInvalid, "spec.containers"},
		{"a bad quantity is a 400", "POST", pods, "application/json",
			strings.Replace(good, `"image":"busybox"`, `"image":"busybox","resources":{"limits":{"cpu":"lots"}}`, 1), 400, metav1.StatusReasonBadRequest,
			`Pod in version "v1" cannot be handled as a Pod: quantities must match the regular expression`},
		{"a body over 3 MiB is a 413", "POST", pods, "application/json", `{"x":"` + strings.Repeat("a", 3<<20+10) + `"}`, 413, metav1.StatusReasonRequestEntityTooLarge, ""},
		{"an unsupported method is a 405", "PATCH", pods, "application/merge-patch+json", `{}`, 405, metav1.StatusReasonMethodNotAllowed, ""},
		{"an unsupported media type is a 415", "POST", pods, "text/plain", good, 415, metav1.StatusReasonUnsupportedMediaType, ""},
		{"a create in a missing namespace is a 404", "POST", "/api/v1/namespaces/ghost/pods", "application/json", good, 404, metav1.StatusReasonNotFound, "ghost"},
		{"a stale resourceVersion on update is a 409 Conflict", "PUT", pods + "/ok", "application/json",
			strings.Replace(good, `"name":"ok"`, `"name":"ok","resourceVersion":"1"`, 1), 409, metav1.StatusReasonConflict, "modified"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, st := do(tc.method, tc.path, tc.contentType, tc.body)
			if code != tc.code || st.Reason != tc.reason || st.Kind != "Status" {
				t.Fatalf("got %d %q (%s), want %d %q", code, st.Reason, st.Message, tc.code, tc.reason)
			}
			if tc.contains != "" && !strings.Contains(st.Message, tc.contains) {
				t.Fatalf("message %q lacks %q", st.Message, tc.contains)
			}
		})
	}
	t.Run("an anonymous client is refused with 401", func(t *testing.T) {
		cfg := rest.AnonymousClientConfig(c.RESTConfig())
		tr, _ := rest.TransportFor(cfg)
		resp, err := (&http.Client{Transport: tr}).Get(base + pods)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("got %d", resp.StatusCode)
		}
	})
	t.Run("no bad request left a half-written object", func(t *testing.T) {
		code, _ := do("GET", pods+"/ok2", "", "")
		code2, _ := do("GET", pods+"/x", "", "")
		if code != 404 || code2 != 404 {
			t.Fatalf("got %d and %d", code, code2)
		}
	})
	_ = bytes.MinRead
}
