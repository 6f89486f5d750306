package kubelet

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik/kubelet/runtime/fake"
)

// A lifecycle hook runs its handler as upstream's kubelet: an exec in the
// container, a GET at the handler's host or the pod's IP (any answer is
// a success, only an unreachable server fails), or a sleep.
func TestRunHook(t *testing.T) {
	got := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.RequestURI()
		w.WriteHeader(http.StatusInternalServerError) // still a success for a hook
	}))
	t.Cleanup(srv.Close)
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()

	k := &Kubelet{rt: fake.New(fake.Config{})}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	c := &corev1.Container{Name: "c", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: int32(port)}}}
	httpGet := func(host string, p intstr.IntOrString, path string) *corev1.LifecycleHandler {
		return &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Host: host, Port: p, Path: path}}
	}
	tests := []struct {
		name     string
		h        *corev1.LifecycleHandler
		wantErr  string
		wantPath string
	}{
		{"a GET goes to the pod's IP with its path and query", httpGet("", intstr.FromInt(port), "/echo?msg=poststart"), "", "/echo?msg=poststart"},
		{"a named port is the container's", httpGet("", intstr.FromString("web"), "prestop"), "", "/prestop"},
		{"an unreachable server fails the hook", httpGet("", intstr.FromInt(closedPort), "/"), "HTTP lifecycle hook (/) for Container \"c\" in Pod \"p\" failed", ""},
		{"an exec in a container that is not there fails the hook", &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
			`Exec lifecycle hook ([true]) for Container "c" in Pod "p" failed`, ""},
		{"a sleep sleeps", &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 0}}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := k.runHook(context.Background(), pod, c, "missing", "127.0.0.1", tt.h, 5*time.Second)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if tt.wantPath != "" {
				if p := <-got; p != tt.wantPath {
					t.Errorf("GET %s, want %s", p, tt.wantPath)
				}
			}
		})
	}
}
