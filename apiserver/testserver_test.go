package apiserver

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"minik/client"
	"minik/internal/etcd"
	"minik/internal/pki"
)

// testServer is an apiserver on an embedded etcd and a loopback HTTPS
// port, in this process, with an admin client config for it.
type testServer struct {
	srv    *Server
	config client.Config
	ca     *pki.CA
	pkiDir string
	// stopEtcd closes the embedded etcd member (a fault test).
	stopEtcd func()
}

// startTestServer runs a whole apiserver in-process, so that a profile of
// a benchmark sees the server, its etcd and the client together. Like
// Kubernetes' API-only integration servers it runs without the
// ServiceAccount admission plugin (no controller creates the accounts of
// new namespaces); a change to Config.DisableAdmissionPlugins in
// startTestServerWith turns it on.
func startTestServer(tb testing.TB) *testServer {
	tb.Helper()
	return startTestServerWith(tb, nil)
}

// startTestServerWith is startTestServer with changes to the Config.
func startTestServerWith(tb testing.TB, change func(*Config)) *testServer {
	tb.Helper()
	dir := tb.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	member, cli, err := etcd.StartEmbedded(ctx, dir)
	if err != nil {
		tb.Fatal(err)
	}
	closeEtcd := sync.OnceFunc(member.Close)
	pkiDir := filepath.Join(dir, "pki")
	ca, err := pki.EnsureCA(pkiDir)
	if err != nil {
		tb.Fatal(err)
	}
	certFile, keyFile, err := ca.EnsureServing(pkiDir, "apiserver", nil)
	if err != nil {
		tb.Fatal(err)
	}
	adminCert, adminKey, err := ca.EnsureClient(pkiDir, "admin", pki.AdminUser, []string{pki.MastersGroup})
	if err != nil {
		tb.Fatal(err)
	}
	saKey, err := pki.EnsureServiceAccountKey(pkiDir)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	cfg := Config{Etcd: cli, Listener: ln, TLSCertFile: certFile, TLSKeyFile: keyFile,
		ClientCAFile: filepath.Join(pkiDir, "ca.crt"), CompactionInterval: -1, ServiceAccountSigningKeyFile: saKey,
		// As in Kubernetes' API-only integration servers (no controller
		// creates the accounts of new namespaces); change may turn it on.
		DisableAdmissionPlugins: []string{ServiceAccountPlugin}}
	if change != nil {
		change(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-done:
		tb.Fatalf("apiserver stopped: %v", err)
	}
	tb.Cleanup(func() {
		cancel()
		<-done
		cli.Close()
		closeEtcd()
	})
	pair, err := tls.LoadX509KeyPair(adminCert, adminKey)
	if err != nil {
		tb.Fatal(err)
	}
	return &testServer{srv: srv, ca: ca, pkiDir: pkiDir, stopEtcd: closeEtcd, config: client.Config{Host: "https://" + ln.Addr().String(),
		TLS: &tls.Config{RootCAs: ca.CertPool(), Certificates: []tls.Certificate{pair}}}}
}

// clientAs returns a client authenticated as user in groups.
func (ts *testServer) clientAs(tb testing.TB, user string, groups ...string) *client.Client {
	tb.Helper()
	certFile, keyFile, err := ts.ca.EnsureClient(ts.pkiDir, strings.ReplaceAll(user, ":", "-"), user, groups)
	if err != nil {
		tb.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := ts.config
	cfg.TLS = &tls.Config{RootCAs: ts.ca.CertPool(), Certificates: []tls.Certificate{pair}}
	c, err := client.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// clientWithToken returns a client that authenticates with a bearer token.
func (ts *testServer) clientWithToken(tb testing.TB, token string) *client.Client {
	tb.Helper()
	cfg := ts.config
	cfg.TLS = &tls.Config{RootCAs: ts.ca.CertPool()}
	cfg.BearerToken = token
	c, err := client.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// client returns a new client: its own HTTP/2 connection.
func (ts *testServer) client(tb testing.TB) *client.Client {
	tb.Helper()
	c, err := client.New(ts.config)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// do sends a raw request as the admin (headers are name, value pairs)
// and returns the answer's code and body.
func (ts *testServer) do(t *testing.T, method, path, body string, headers ...string) (int, []byte) {
	t.Helper()
	resp, data := ts.response(t, method, path, body, headers...)
	return resp.StatusCode, data
}

// response is do, returning the whole response (its body read).
func (ts *testServer) response(t *testing.T, method, path, body string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, ts.config.Host+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	raw := &http.Client{Transport: &http.Transport{TLSClientConfig: ts.config.TLS.Clone()}}
	resp, err := raw.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}
