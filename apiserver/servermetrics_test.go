package apiserver

import (
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/internal/metrics/metricstest"
)

func scrape(t *testing.T, hc *http.Client, url string) (int, metricstest.Families) {
	return metricstest.Scrape(t, hc, url+"/metrics")
}

func sample(f metricstest.Families, name string, want map[string]string) float64 {
	return f.Value(name, want)
}

func TestMetricsEndpoint(t *testing.T) {
	ts := startTestServer(t)
	ctx := context.Background()
	httpFor := func(c *tls.Config) *http.Client { return &http.Client{Transport: &http.Transport{TLSClientConfig: c}} }
	admin := httpFor(ts.config.TLS)
	url := ts.config.Host

	code, before := scrape(t, admin, url)
	if code != http.StatusOK {
		t.Fatalf("admin scrape: %d", code)
	}
	c := ts.client(t)
	w, err := c.ConfigMaps().Watch(ctx, "default", metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := c.ConfigMaps().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	<-w.Events()
	if _, err := c.ConfigMaps().Get(ctx, "default", "nope", metav1.GetOptions{}); err == nil {
		t.Fatal("got a configmap that does not exist")
	}
	_, after := scrape(t, admin, url)
	for _, name := range []string{"apiserver_request_total", "apiserver_request_duration_seconds", "apiserver_current_inflight_requests",
		"apiserver_current_inqueue_requests", "etcd_request_duration_seconds", "go_goroutines", "process_resident_memory_bytes"} {
		if after[name] == nil {
			t.Errorf("no %s in the scrape", name)
		}
	}

	moved := []struct {
		name   string
		labels map[string]string
	}{
		{"apiserver_request_total", map[string]string{"verb": "POST", "resource": "configmaps", "scope": "namespace", "code": "201", "component": "apiserver"}},
		{"apiserver_request_total", map[string]string{"verb": "GET", "resource": "configmaps", "scope": "resource", "code": "404"}},
		{"apiserver_request_duration_seconds", map[string]string{"verb": "POST", "resource": "configmaps", "group": "", "version": "v1"}},
		{"etcd_request_duration_seconds", map[string]string{"operation": "create", "type": "configmaps"}},
		{"apiserver_watch_events_total", map[string]string{"resource": "configmaps", "version": "v1"}},
	}
	for _, m := range moved {
		if b, a := sample(before, m.name, m.labels), sample(after, m.name, m.labels); a <= b {
			t.Errorf("%s%v did not move: %v before, %v after", m.name, m.labels, b, a)
		}
	}

	// The open watch is a long-running request until it ends.
	open := map[string]string{"verb": "WATCH", "resource": "configmaps", "scope": "namespace", "component": "apiserver"}
	if n := sample(after, "apiserver_longrunning_requests", open); n != 1 {
		t.Errorf("apiserver_longrunning_requests%v = %v with one watch open, want 1", open, n)
	}
	w.Stop()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, now := scrape(t, admin, url)
		n := sample(now, "apiserver_longrunning_requests", open)
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("apiserver_longrunning_requests%v = %v after the watch ended, want 0", open, n)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Authorized as kube-apiserver does: anonymous 401, a user without
	// a rule for /metrics 403, the group system:monitoring 200.
	if code, _ := scrape(t, httpFor(&tls.Config{RootCAs: ts.ca.CertPool()}), url); code != http.StatusUnauthorized {
		t.Errorf("anonymous scrape: %d, want 401", code)
	}
	asUser := func(user string, groups ...string) *http.Client {
		certFile, keyFile, err := ts.ca.EnsureClient(ts.pkiDir, strings.ReplaceAll(user, ":", "-"), user, groups)
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		return httpFor(&tls.Config{RootCAs: ts.ca.CertPool(), Certificates: []tls.Certificate{pair}})
	}
	if code, _ := scrape(t, asUser("jane"), url); code != http.StatusForbidden {
		t.Errorf("scrape by a user without the rule: %d, want 403", code)
	}
	if code, _ := scrape(t, asUser("prometheus", "system:monitoring"), url); code != http.StatusOK {
		t.Errorf("scrape by the group system:monitoring: %d, want 200", code)
	}
}
