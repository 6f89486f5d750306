package kubelet

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"minik/client"
	"minik/kubelet/podstep"
)

// fakeServicesAPI answers /api/v1/services as an apiserver that does not
// serve them yet (404), fails (500), or serves a list and holds watches.
type fakeServicesAPI struct {
	mu       sync.Mutex
	status   int // 0: serve the list
	services []corev1.Service
	lists    int
}

func (f *fakeServicesAPI) set(status int, services ...corev1.Service) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.services = status, services
}

func (f *fakeServicesAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/services" {
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	status, services := f.status, f.services
	f.lists++
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if status != 0 {
		w.WriteHeader(status)
		reason := metav1.StatusReasonNotFound
		if status != http.StatusNotFound {
			reason = metav1.StatusReasonInternalError
		}
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Code: int32(status), Reason: reason, Message: "the server could not find the requested resource"})
		return
	}
	if r.URL.Query().Get("watch") == "true" {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	list := corev1.ServiceList{TypeMeta: metav1.TypeMeta{Kind: "ServiceList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: services}
	_ = json.NewEncoder(w).Encode(list)
}

// fastClock is the real clock with every wait 100 times shorter.
type fastClock struct{ clock.RealClock }

func (fastClock) After(d time.Duration) <-chan time.Time { return time.After(d / 100) }

func service(ns, name, ip string, port int32) corev1.Service {
	s := corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "5"}}
	s.Spec.ClusterIP = ip
	s.Spec.Ports = []corev1.ServicePort{{Port: port, Protocol: corev1.ProtocolTCP}}
	return s
}

func envMap(env []corev1.EnvVar) map[string]string {
	m := map[string]string{}
	for _, e := range env {
		m[e.Name] = e.Value
	}
	return m
}

func startServiceSource(t *testing.T, api *fakeServicesAPI) *Kubelet {
	t.Helper()
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	c, err := client.New(client.Config{Host: srv.URL, JSON: true})
	if err != nil {
		t.Fatal(err)
	}
	k := &Kubelet{cfg: Config{Clock: fastClock{}, Client: c}}
	k.services = newServiceSource(c, fastClock{}, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = k.services.run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return k
}

func TestServiceEnvWhenTheAPIServerServesNoServices(t *testing.T) {
	api := &fakeServicesAPI{}
	api.set(http.StatusNotFound)
	k := startServiceSource(t, api)
	pod := makePod("main").Obj()
	pod.Namespace = "shop"

	select {
	case <-k.services.ready:
	case <-time.After(10 * time.Second):
		t.Fatal("the source is not ready although the apiserver said it serves no services")
	}
	env, err := k.serviceEnv(context.Background(), pod)
	if err != nil || len(env) != 0 {
		t.Fatalf("serviceEnv = %v, %v; want no variables and no error", env, err)
	}

	// The apiserver starts serving services: the source notices, lists
	// and watches them.
	api.set(0, service("default", "kubernetes", "10.96.0.1", 443), service("shop", "web", "10.96.0.20", 80),
		service("other", "db", "10.96.0.30", 5432))
	waitFor(t, 10*time.Second, "the services to be listed", func() bool { return k.services.inf.HasSynced() })
	env, err = k.serviceEnv(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	got := envMap(env)
	want := map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "WEB_SERVICE_HOST": "10.96.0.20",
		"WEB_PORT": "tcp://10.96.0.20:80"}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %q, want %q (all: %v)", name, got[name], v, got)
		}
	}
	if _, ok := got["DB_SERVICE_HOST"]; ok {
		t.Error("a Service of another namespace gave variables")
	}

	pod.Spec.EnableServiceLinks = ptr.To(false)
	env, _ = k.serviceEnv(context.Background(), pod)
	got = envMap(env)
	if _, ok := got["WEB_SERVICE_HOST"]; ok || got["KUBERNETES_SERVICE_HOST"] != "10.96.0.1" {
		t.Errorf("with enableServiceLinks false: %v; want only the kubernetes Service's variables", got)
	}

	// The container's own variables win, and $(VAR) expands from the
	// service variables.
	pod.Spec.EnableServiceLinks = nil
	c := &corev1.Container{Name: "main", Env: []corev1.EnvVar{
		{Name: "WEB_SERVICE_PORT", Value: "9999"},
		{Name: "URL", Value: "http://$(WEB_SERVICE_HOST):$(WEB_SERVICE_PORT)/"},
	}}
	cenv, err := k.containerEnv(context.Background(), pod, c, "10.244.0.5")
	if err != nil {
		t.Fatal(err)
	}
	got = envMap(cenv)
	if got["WEB_SERVICE_PORT"] != "9999" || got["URL"] != "http://10.96.0.20:9999/" || got["WEB_SERVICE_HOST"] != "10.96.0.20" {
		t.Errorf("container env %v", got)
	}
	if cenv[0].Name != "WEB_SERVICE_PORT" || cenv[1].Name != "URL" {
		t.Errorf("the container's own variables should come first: %v", cenv)
	}
	n := 0
	for _, e := range cenv {
		if e.Name == "WEB_SERVICE_PORT" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("WEB_SERVICE_PORT appears %d times", n)
	}
}

func TestServiceEnvWaitsForTheFirstList(t *testing.T) {
	api := &fakeServicesAPI{}
	api.set(http.StatusInternalServerError)
	k := startServiceSource(t, api)
	pod := makePod("main").Obj()
	pod.Namespace = "shop"

	// servicesWait (5s) on the fast clock: 50ms.
	_, err := k.serviceEnv(context.Background(), pod)
	if err == nil || !strings.Contains(err.Error(), "services have not yet been read at least once, cannot construct envvars") {
		t.Fatalf("err = %v; want the kubelet's CreateContainerConfigError message", err)
	}
	if _, ok := err.(*podstep.ConfigError); !ok {
		t.Errorf("err is %T, want a *podstep.ConfigError (CreateContainerConfigError)", err)
	}

	// A static pod does not wait.
	static := pod.DeepCopy()
	static.Annotations = map[string]string{annotationConfigSource: "file"}
	if env, err := k.serviceEnv(context.Background(), static); err != nil || len(env) != 0 {
		t.Errorf("static pod: %v, %v; want no variables, no error", env, err)
	}

	api.set(0, service("shop", "web", "10.96.0.20", 80))
	waitFor(t, 10*time.Second, "the services to be listed", func() bool { return k.services.inf.HasSynced() })
	env, err := k.serviceEnv(context.Background(), pod)
	if err != nil || envMap(env)["WEB_SERVICE_HOST"] != "10.96.0.20" {
		t.Errorf("after the list: %v, %v", env, err)
	}
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
