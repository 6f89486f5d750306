package apiserver

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pods/proxy passes a request on to the pod's IP and port, path and
// query kept, as the PreStop conformance spec reads its server pod.
func TestPodProxy(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Method+" "+r.URL.RequestURI())
	}))
	t.Cleanup(backend.Close)
	_, port, _ := net.SplitHostPort(backend.Listener.Addr().String())

	ts := startTestServer(t)
	admin := ts.client(t)
	ctx := t.Context()
	pod, err := admin.Pods().Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "server", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Pods().Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod.Status.PodIP = "127.0.0.1"
	if _, err := admin.Pods().UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		method   string
		path     string
		wantCode int
		wantBody string
	}{
		{"a GET reaches the pod's port with its path and query", http.MethodGet, "/api/v1/namespaces/default/pods/server:" + port + "/proxy/read?x=1", http.StatusOK, "GET /read?x=1"},
		{"a trailing slash is kept", http.MethodGet, "/api/v1/namespaces/default/pods/http:server:" + port + "/proxy/dir/", http.StatusOK, "GET /dir/"},
		{"a POST is passed on", http.MethodPost, "/api/v1/namespaces/default/pods/server:" + port + "/proxy/write", http.StatusOK, "POST /write"},
		{"a pod without an IP cannot be reached", http.MethodGet, "/api/v1/namespaces/default/pods/pending:80/proxy/", http.StatusServiceUnavailable, ""},
		{"an unknown pod is not found", http.MethodGet, "/api/v1/namespaces/default/pods/nope:80/proxy/", http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := ts.do(t, tt.method, tt.path, "")
			if code != tt.wantCode || (tt.wantBody != "" && string(body) != tt.wantBody) {
				t.Errorf("%d %q, want %d %q", code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
}
