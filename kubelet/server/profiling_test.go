package server

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"minik/internal/pki"
)

// TestDebugPprofServesTheKubeletsProfilesToAdminsOnly: /debug/pprof/
// answers the apiserver and system:masters, as the kubelet's other
// endpoints; a node's own certificate gets 403.
func TestDebugPprofServesTheKubeletsProfilesToAdminsOnly(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.EnsureCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	servingCert, servingKey, err := ca.EnsureServing(dir, "kubelet-serving", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Config{NodeName: "n", TLSCertFile: servingCert, TLSKeyFile: servingKey,
		ClientCAFile: filepath.Join(dir, "ca.crt"), Clock: clocktesting.NewFakeClock(time.Now())})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(t.Context(), l) }()
	get := func(user string, groups []string) (int, string) {
		certFile, keyFile, err := ca.EnsureClient(dir, user, user, groups)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.CertPool(), Certificates: []tls.Certificate{cert}}}}
		resp, err := hc.Get("https://" + l.Addr().String() + "/debug/pprof/cmdline")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("admin", []string{"system:masters"}); code != http.StatusOK || !strings.Contains(body, "server.test") {
		t.Fatalf("admin: %d %q, want 200 and the test binary's command line", code, body)
	}
	if code, body := get(pki.NodeUser("n"), []string{pki.NodesGroup}); code != http.StatusForbidden {
		t.Fatalf("a node: %d %q, want 403", code, body)
	}
}
