package apiserver

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A large answer is gzipped for a client that accepts it, as
// kube-apiserver compresses responses over 128 KiB; small ones and
// clients that do not ask get plain bodies.
func TestLargeAnswersAreGzippedWhenTheClientAcceptsIt(t *testing.T) {
	ts := startTestServer(t)
	admin := ts.client(t)
	value := strings.Repeat("x", 4096)
	for i := range 40 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + string(rune('a'+i/26)) + string(rune('a'+i%26)), Namespace: "default"},
			Data: map[string]string{"v": value}}
		if _, err := admin.ConfigMaps().Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// DisableCompression: the transport neither asks nor decompresses.
	raw := &http.Client{Transport: &http.Transport{TLSClientConfig: ts.config.TLS.Clone(), DisableCompression: true}}
	get := func(path, acceptEncoding, accept string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ts.config.Host+path, nil)
		if acceptEncoding != "" {
			req.Header.Set("Accept-Encoding", acceptEncoding)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := raw.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	t.Run("a large list is gzipped and decodes to every object", func(t *testing.T) {
		resp := get("/api/v1/namespaces/default/configmaps", "gzip, deflate", "")
		if resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("Content-Encoding %q, want gzip", resp.Header.Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		var list corev1.ConfigMapList
		if err := json.NewDecoder(zr).Decode(&list); err != nil || len(list.Items) != 40 {
			t.Fatalf("decoded %d items, %v", len(list.Items), err)
		}
	})
	t.Run("a large table is gzipped too", func(t *testing.T) {
		resp := get("/api/v1/namespaces/default/configmaps?includeObject=Object", "gzip", "application/json;as=Table;v=v1;g=meta.k8s.io")
		if resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("Content-Encoding %q, want gzip", resp.Header.Get("Content-Encoding"))
		}
	})
	t.Run("without Accept-Encoding the body is plain", func(t *testing.T) {
		resp := get("/api/v1/namespaces/default/configmaps", "", "")
		body, _ := io.ReadAll(resp.Body)
		if resp.Header.Get("Content-Encoding") != "" || !json.Valid(body) {
			t.Fatalf("Content-Encoding %q, valid JSON %v", resp.Header.Get("Content-Encoding"), json.Valid(body))
		}
	})
	t.Run("gzip;q=0 is a refusal", func(t *testing.T) {
		if resp := get("/api/v1/namespaces/default/configmaps", "gzip;q=0", ""); resp.Header.Get("Content-Encoding") != "" {
			t.Fatalf("Content-Encoding %q", resp.Header.Get("Content-Encoding"))
		}
	})
	t.Run("a small answer is never compressed", func(t *testing.T) {
		if resp := get("/api/v1/namespaces/default/configmaps/cm-aa", "gzip", ""); resp.Header.Get("Content-Encoding") != "" {
			t.Fatalf("Content-Encoding %q for one object", resp.Header.Get("Content-Encoding"))
		}
	})
	t.Run("a Go client's list decompresses transparently", func(t *testing.T) {
		list, err := admin.ConfigMaps().List(t.Context(), "default", metav1.ListOptions{})
		if err != nil || len(list.Items) != 40 {
			t.Fatalf("%d items, %v", len(list.Items), err)
		}
	})
}
