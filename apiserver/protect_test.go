package apiserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
)

// A client that trickles a request body holds a mutating slot only until
// the body deadline; while the slots are full others get 429 with
// Retry-After, never a hang, except reads and node heartbeats, which have
// slots of their own.
func TestInflightLimitAndSlowBodies(t *testing.T) {
	ts := startTestServerWith(t, func(c *Config) {
		c.MaxMutatingRequestsInflight = 1
		// Long enough for the checks below to run while the slow body
		// holds the slot, on a loaded machine too.
		c.RequestTimeout = 5 * time.Second
	})
	ctx := t.Context()
	cfg := ts.config
	cfg.MaxRetries = -1 // this test looks at the 429 itself
	admin, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(ts.config.Host, "https://")
	// An authenticated one holds the slot while it trickles.
	authed := ts.config.TLS.Clone()
	authed.NextProtos = []string{"http/1.1"}
	conn, err := tls.Dial("tcp", host, authed)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Headers of a 100-byte body, then nothing: the slot is held.
	fmt.Fprintf(conn, "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", host)
	// The server takes the slot when it has read those headers, which on
	// a loaded machine may come late: wait for it, rather than race it
	// with creates (under make test's load, ten seconds of them once all
	// got in).
	for deadline := time.Now().Add(20 * time.Second); len(ts.srv.limiter.mutating) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the trickling request never took the mutating slot")
		}
	}
	// A create waits for the slot a quarter of the request timeout, then
	// is refused: the slow body holds the slot until its own deadline.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "x-", Namespace: "default"}}
	_, busy := admin.ConfigMaps().Create(ctx, cm, metav1.CreateOptions{})
	if !apierrors.IsTooManyRequests(busy) {
		t.Fatalf("a create while the one slot is held: %v, want 429", busy)
	}
	if secs, ok := apierrors.SuggestsClientDelay(busy); !ok || secs != 1 {
		t.Errorf("429 suggests a delay of %d (%v), want 1s", secs, ok)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: ts.config.TLS}}
	if _, m := scrape(t, hc, ts.config.Host); sample(m, "apiserver_request_total", map[string]string{"verb": "POST", "code": "429"}) != 1 {
		t.Errorf("the refused create is not counted as a 429 in apiserver_request_total")
	}
	// An anonymous client, coming while the slot is held, is not given
	// one: it is answered 401 before its body is read (not 429), as
	// kube-apiserver authenticates before its in-flight limits, and is
	// cut off at the body deadline too.
	anon, err := tls.Dial("tcp", host, &tls.Config{RootCAs: ts.ca.CertPool(), NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()
	fmt.Fprintf(anon, "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000000\r\n\r\n{", host)
	// Reads have their own slots, and so do node heartbeats.
	if _, err := admin.ConfigMaps().List(ctx, "default", metav1.ListOptions{}); err != nil {
		t.Errorf("a read while the mutating slot is held: %v", err)
	}
	if _, err := admin.Leases().Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n2", Namespace: "kube-node-lease"}}, metav1.CreateOptions{}); !apierrors.IsTooManyRequests(err) {
		t.Errorf("creating a Lease (not a heartbeat) while the mutating slot is held: %v, want 429", err)
	}
	// A renewal gets a slot (and then its answer: there is no such Lease).
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease"}}
	if _, err := admin.Leases().Update(ctx, lease, metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("renewing a node's Lease while the mutating slot is held: %v, want NotFound", err)
	}
	// The trickling client is cut off at the body deadline.
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	start := time.Now()
	reply, _ := io.ReadAll(conn)
	if time.Since(start) > 10*time.Second {
		t.Errorf("the slow body was held for %v", time.Since(start))
	}
	t.Logf("slow client got: %q", firstLine(string(reply)))
	_ = anon.SetReadDeadline(time.Now().Add(20 * time.Second))
	start = time.Now()
	reply, _ = io.ReadAll(anon)
	if time.Since(start) > 10*time.Second || !strings.Contains(string(reply), "401") {
		t.Errorf("the anonymous slow body: %q after %v, want 401 and the connection closed", firstLine(string(reply)), time.Since(start))
	}
	waitFor(t, func() bool {
		_, err := admin.ConfigMaps().Create(ctx, cm, metav1.CreateOptions{})
		return err == nil
	})
}

// With etcd gone, requests fail within the request timeout with a
// Status, and /readyz reports the etcd check as failed.
func TestEtcdUnreachable(t *testing.T) {
	ts := startTestServerWith(t, func(c *Config) { c.RequestTimeout = 2 * time.Second })
	ctx := t.Context()
	admin := ts.client(t)
	if _, err := admin.ConfigMaps().List(ctx, "default", metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	ts.stopEtcd()
	start := time.Now()
	_, err := admin.ConfigMaps().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "y", Namespace: "default"}}, metav1.CreateOptions{})
	if err == nil {
		t.Fatal("a create without etcd succeeded")
	}
	if _, ok := err.(apierrors.APIStatus); !ok {
		t.Errorf("error %v is not a Status", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the create failed after %v, want within the 2s timeout", d)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ts.ca.CertPool()}}, Timeout: 10 * time.Second}
	resp, err := hc.Get(ts.config.Host + "/readyz?verbose")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), "[-]etcd failed") {
		t.Errorf("/readyz: %d %s, want 500 with [-]etcd failed", resp.StatusCode, body)
	}
	resp, err = hc.Get(ts.config.Host + "/livez")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/livez: %v %v, want 200 (etcd is not part of liveness)", err, resp)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Watches are long-running, so the in-flight slots do not bound them: a
// user may hold MaxWatchesPerUser at once, the next gets 429, other users
// are not affected, and closing one frees its place.
func TestWatchesPerUserAreBounded(t *testing.T) {
	ts := startTestServerWith(t, func(c *Config) { c.MaxWatchesPerUser = 2 })
	httpClient := func(cfg *tls.Config) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg.Clone()}}
	}
	admin := httpClient(ts.config.TLS)
	url := ts.config.Host + "/api/v1/namespaces/default/configmaps?watch=true"
	open := func(c *http.Client) *http.Response {
		t.Helper()
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first, second := open(admin), open(admin)
	defer second.Body.Close()
	for _, r := range []*http.Response{first, second} {
		if r.StatusCode != http.StatusOK {
			t.Fatalf("watch within the limit: %s", r.Status)
		}
	}
	third := open(admin)
	body, _ := io.ReadAll(third.Body)
	third.Body.Close()
	if third.StatusCode != http.StatusTooManyRequests || third.Header.Get("Retry-After") == "" ||
		!strings.Contains(string(body), `too many watches open by user \"admin\" (limit 2 per user)`) {
		t.Fatalf("a third watch: %s %q, want 429 with Retry-After and the reason", third.Status, body)
	}
	// Another user has its own count.
	other := httpClient(bobTLS(t, ts))
	if r := open(other); r.StatusCode != http.StatusOK {
		t.Fatalf("another user's watch: %s", r.Status)
	} else {
		r.Body.Close()
	}
	// Closing a watch frees its place (the server notices the closed stream).
	first.Body.Close()
	waitFor(t, func() bool {
		r := open(admin)
		defer r.Body.Close()
		return r.StatusCode == http.StatusOK
	})
}

func bobTLS(t *testing.T, ts *testServer) *tls.Config {
	t.Helper()
	certFile, keyFile, err := ts.ca.EnsureClient(ts.pkiDir, "bob", "bob", []string{"system:masters"})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: ts.ca.CertPool(), Certificates: []tls.Certificate{pair}}
}

func TestRequestTimeoutTakesTheClientsWhenShorter(t *testing.T) {
	cases := []struct {
		name, query string
		want        time.Duration
		bad         bool
	}{
		{"no timeout: the server's", "", time.Minute, false},
		{"a shorter one is the client's", "timeout=20s", 20 * time.Second, false},
		{"a longer one is capped at the server's", "timeout=5m", time.Minute, false},
		{"zero means none given", "timeout=0s", time.Minute, false},
		{"garbage is a 400", "timeout=soon", 0, true},
		{"negative is a 400", "timeout=-1s", 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodGet, "/api/v1/pods?"+c.query, nil)
			got, err := requestTimeout(r, time.Minute)
			if c.bad {
				if !apierrors.IsBadRequest(err) {
					t.Fatalf("got %v, %v; want 400", got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func TestNodeHeartbeatRequests(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node1", true},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node1", true},
		{"POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", false},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", false},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/node1", false},
		{"PUT", "/api/v1/nodes/node1/status", true},
		{"PATCH", "/api/v1/nodes/node1/status", true},
		{"GET", "/api/v1/nodes/node1", true},
		{"GET", "/api/v1/nodes", false},
		{"DELETE", "/api/v1/nodes/node1", false},
		{"GET", "/api/v1/nodes/node1/proxy/metrics", false},
		{"PUT", "/api/v1/namespaces/default/pods/p/status", false},
	} {
		r, _ := http.NewRequest(tc.method, "https://x"+tc.path, nil)
		if got := nodeHeartbeat(r); got != tc.want {
			t.Errorf("%s %s: heartbeat %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}

// A request that finds its slots busy waits for one (up to queueWait), as
// priority and fairness queues a burst; at most as many wait as there are
// slots of their kind, except node heartbeats.
func TestRequestsWaitForASlot(t *testing.T) {
	l := newLimiter(1, 1, 4*time.Second, 10)
	l.nodeHeartbeats = make(chan struct{}, 1)
	renewal := func() *http.Request {
		return httptest.NewRequest(http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", nil)
	}
	create := func() *http.Request {
		return httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/configmaps", nil)
	}
	// waitInTurn starts n acquires of request(), which must all still be
	// waiting 100ms later, and returns their outcomes.
	waitInTurn := func(n int, request func() *http.Request) chan error {
		t.Helper()
		waited := make(chan error, n)
		for range n {
			go func() {
				release, err := l.acquire(request())
				if err == nil {
					release()
				}
				waited <- err
			}()
		}
		select {
		case err := <-waited:
			t.Fatalf("a request did not wait for the busy slot: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		return waited
	}

	// Two renewals wait for the one heartbeat slot: their number is not bounded.
	release, err := l.acquire(renewal())
	if err != nil {
		t.Fatal(err)
	}
	waited := waitInTurn(2, renewal)
	release()
	for range 2 {
		if err := <-waited; err != nil {
			t.Fatalf("a waiting renewal, once the slot was free: %v", err)
		}
	}

	// One create waits for the one mutating slot; a second is refused at
	// once, as one already waits; the first gets the slot when it is free.
	release, err = l.acquire(create())
	if err != nil {
		t.Fatal(err)
	}
	waited = waitInTurn(1, create)
	for deadline := time.Now().Add(10 * time.Second); l.mutatingWaiting.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) { // on a loaded machine it may start late
			t.Fatal("the first create never waited")
		}
	}
	start := time.Now()
	if _, err := l.acquire(create()); !apierrors.IsTooManyRequests(err) {
		t.Errorf("a second create waiting for the busy slot: %v, want 429", err)
	}
	if d := time.Since(start); d > 40*time.Millisecond {
		t.Errorf("the second create waited %v, want a refusal at once", d)
	}
	// Reads have their own slots.
	read, err := l.acquire(httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/configmaps", nil))
	if err != nil {
		t.Errorf("a read with the mutating slot busy: %v", err)
	} else {
		read()
	}
	release()
	if err := <-waited; err != nil {
		t.Fatalf("the waiting create, once the slot was free: %v", err)
	}

	// A request waits queueWait at most, or until its client goes away.
	l.queueWait = 50 * time.Millisecond
	release, err = l.acquire(create())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	start = time.Now()
	if _, err := l.acquire(create()); !apierrors.IsTooManyRequests(err) || time.Since(start) < l.queueWait {
		t.Errorf("a create still waiting after queueWait: %v after %v, want 429 after %v", err, time.Since(start), l.queueWait)
	}
	if _, err := l.acquire(renewal()); err != nil {
		t.Errorf("a renewal with the heartbeat slot free: %v", err)
	}
	l.queueWait = time.Minute
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := l.acquire(create().WithContext(ctx)); !apierrors.IsTooManyRequests(err) {
		t.Errorf("a create whose client went away: %v, want 429", err)
	}
	if n := l.mutatingWaiting.Load(); n != 0 {
		t.Errorf("%d requests still counted as waiting", n)
	}
}
