package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/knftables"

	"minik/client"
)

// fakeServer serves one list and then a held-open watch for Services and
// EndpointSlices, in JSON; events pushed to its channels go down the
// watches.
type fakeServer struct {
	services []corev1.Service
	slices   []discoveryv1.EndpointSlice
	svcEv    chan string
	sliceEv  chan string
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var items any
	var events chan string
	switch r.URL.Path {
	case "/api/v1/services":
		items, events = client.List[corev1.Service]{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: f.services}, f.svcEv
	case "/apis/discovery.k8s.io/v1/endpointslices":
		items, events = client.List[discoveryv1.EndpointSlice]{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: f.slices}, f.sliceEv
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Query().Get("watch") != "true" {
		_ = json.NewEncoder(w).Encode(items)
		return
	}
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	for {
		select {
		case ev := <-events:
			_, _ = w.Write([]byte(ev))
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			return
		}
	}
}

func watchEvent(typ string, obj runtime.Object) string {
	b, _ := json.Marshal(map[string]any{"type": typ, "object": obj})
	return string(b) + "\n"
}

// lockedFake lets the test read the fake while the proxy writes it.
type lockedFake struct {
	mu sync.Mutex
	*knftables.Fake
}

func (l *lockedFake) Run(ctx context.Context, tx *knftables.Transaction) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.Fake.Run(ctx, tx)
}

func (l *lockedFake) dump() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.Fake.Dump()
}

func TestRunFollowsTheAPI(t *testing.T) {
	svc := makeService("default", "web", "10.96.0.10").Port("http", tcp, 80, num(8080)).Obj()
	svc.ResourceVersion = "1"
	slice := makeSlice("default", "web-1", "web").Port("http", tcp, 8080).Endpoint("10.244.0.5", "node-a", ready).Obj()
	slice.ResourceVersion = "1"
	f := &fakeServer{services: []corev1.Service{*svc}, slices: []discoveryv1.EndpointSlice{*slice},
		svcEv: make(chan string, 10), sliceEv: make(chan string, 10)}
	srv := httptest.NewUnstartedServer(f)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	c, err := client.New(client.Config{Host: srv.URL, JSON: true, TLS: &tls.Config{RootCAs: pool}})
	if err != nil {
		t.Fatal(err)
	}

	nft := &lockedFake{Fake: knftables.NewFake(knftables.IPv4Family, TableName)}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, RunConfig{Options: Options{Config: testConfig, NFT: nft}, Client: c, Ready: ready, SkipKernelSetup: true})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run ended: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no first sync after 10s")
	}
	eventually := func(what string, ok func(dump string) bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !ok(nft.dump()) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not seen in 5s; table:\n%s", what, nft.dump())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	eventually("the listed Service is programmed", func(d string) bool {
		return strings.Contains(d, "service-ips { 10.96.0.10 . tcp . 80 : goto service-")
	})

	none := slice.DeepCopy()
	none.ResourceVersion, none.Endpoints = "2", nil
	f.sliceEv <- watchEvent("MODIFIED", none)
	eventually("a watched endpoint change rejects the Service", func(d string) bool {
		return strings.Contains(d, "no-endpoint-services { 10.96.0.10 . tcp . 80") && !strings.Contains(d, "service-ips { 10.96.0.10")
	})

	gone := svc.DeepCopy()
	gone.ResourceVersion = "3"
	f.svcEv <- watchEvent("DELETED", gone)
	eventually("a watched deletion removes the Service's rules", func(d string) bool {
		return !strings.Contains(d, "10.96.0.10") && !strings.Contains(d, "default/web")
	})

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
