package apiserver

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/internal/hostip"
)

// pods/proxy passes a request on to the pod's IP and port, path and
// query kept, as the PreStop conformance spec reads its server pod;
// services/proxy to a ready address of the Service's Endpoints, as the
// Guestbook spec reads its frontend.
func TestPodAndServiceProxy(t *testing.T) {
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Method+" "+r.URL.RequestURI())
	}))
	// Every address: the pod is on loopback, the Service's endpoint on
	// the host's own address.
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	backend.Listener.Close()
	backend.Listener = l
	backend.Start()
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
	backendPort, _ := strconv.Atoi(port)
	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "empty", Namespace: "default"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
	} {
		if _, err := client.For[corev1.Service](admin, client.Resource{Version: "v1", Resource: "services", Namespaced: true}).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.For[corev1.Endpoints](admin, client.Resource{Version: "v1", Resource: "endpoints", Namespaced: true}).Create(ctx, &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		// An endpoint may not be a loopback address: the host's own.
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: hostip.PrimaryIPv4()}},
			Ports: []corev1.EndpointPort{{Port: int32(backendPort)}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[corev1.Endpoints](admin, client.Resource{Version: "v1", Resource: "endpoints", Namespaced: true}).Create(ctx, &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "empty", Namespace: "default"}},
		metav1.CreateOptions{}); err != nil {
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
		{"a Service's only port reaches an endpoint's target port", http.MethodGet, "/api/v1/namespaces/default/services/web/proxy/guestbook?cmd=get", http.StatusOK, "GET /guestbook?cmd=get"},
		{"a Service port by number is that port", http.MethodPost, "/api/v1/namespaces/default/services/http:web:80/proxy/write", http.StatusOK, "POST /write"},
		{"a port the Service does not have is refused", http.MethodGet, "/api/v1/namespaces/default/services/web:81/proxy/", http.StatusServiceUnavailable, ""},
		{"a Service without endpoints cannot be reached", http.MethodGet, "/api/v1/namespaces/default/services/empty/proxy/", http.StatusServiceUnavailable, ""},
		{"an unknown Service is not found", http.MethodGet, "/api/v1/namespaces/default/services/nope:80/proxy/", http.StatusNotFound, ""},
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
