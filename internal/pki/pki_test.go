package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	c, err := ParseCertPEM(readFile(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestEnsureCACreatesAP256CAValidForTenYearsWithAPrivateKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	ca, err := EnsureCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.IsCA || ca.Cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("certificate is not a signing CA: IsCA=%v usage=%v", ca.Cert.IsCA, ca.Cert.KeyUsage)
	}
	pub, ok := ca.Cert.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Errorf("CA key is %T, want ECDSA P-256", ca.Cert.PublicKey)
	}
	if got := ca.Cert.NotAfter.Sub(ca.Cert.NotBefore); got != CAValidity {
		t.Errorf("CA validity %v, want %v", got, CAValidity)
	}
	if got := mode(t, filepath.Join(dir, "ca.key")); got != 0o600 {
		t.Errorf("ca.key mode %o, want 600", got)
	}
	if !bytes.Equal(readFile(t, filepath.Join(dir, "ca.crt")), ca.CertPEM()) {
		t.Error("ca.crt on disk differs from CertPEM()")
	}
	if !bytes.Equal(readFile(t, filepath.Join(dir, "ca.key")), ca.KeyPEM()) {
		t.Error("ca.key on disk differs from KeyPEM()")
	}
}

func TestEnsureCAOnRestart(t *testing.T) {
	otherKey := func(t *testing.T) []byte {
		ca, err := EnsureCA(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return ca.KeyPEM()
	}
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string, first *CA)
		wantErr string // empty: succeeds
		wantNew bool   // a different CA than the first one
	}{
		{
			name:    "existing files are reused unchanged",
			prepare: func(*testing.T, string, *CA) {},
		},
		{
			name: "a certificate whose key was lost is an error, not a new CA",
			prepare: func(t *testing.T, dir string, _ *CA) {
				if err := os.Remove(filepath.Join(dir, "ca.key")); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "ca.key does not",
		},
		{
			name: "a key whose certificate was never written is replaced by a new pair",
			prepare: func(t *testing.T, dir string, _ *CA) {
				if err := os.Remove(filepath.Join(dir, "ca.crt")); err != nil {
					t.Fatal(err)
				}
			},
			wantNew: true,
		},
		{
			name: "a key that does not match the certificate is an error",
			prepare: func(t *testing.T, dir string, _ *CA) {
				if err := os.WriteFile(filepath.Join(dir, "ca.key"), otherKey(t), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: "does not match",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			first, err := EnsureCA(dir)
			if err != nil {
				t.Fatal(err)
			}
			tt.prepare(t, dir, first)
			second, err := EnsureCA(dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if same := bytes.Equal(first.CertPEM(), second.CertPEM()); same == tt.wantNew {
				t.Errorf("same CA after restart = %v, want %v", same, !tt.wantNew)
			}
			loaded, err := LoadCA(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(loaded.CertPEM(), second.CertPEM()) {
				t.Error("LoadCA returns a different CA than the one on disk")
			}
		})
	}
}

func TestEnsureServingCoversGivenAndDefaultHosts(t *testing.T) {
	dir := t.TempDir()
	ca, err := EnsureCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := ca.EnsureServing(dir, "apiserver", []string{"minik.example", "10.0.0.7", " ", "MINIK.example"})
	if err != nil {
		t.Fatal(err)
	}
	if certFile != filepath.Join(dir, "apiserver.crt") || keyFile != filepath.Join(dir, "apiserver.key") {
		t.Errorf("files = %s, %s", certFile, keyFile)
	}
	if got := mode(t, keyFile); got != 0o600 {
		t.Errorf("key mode %o, want 600", got)
	}
	cert := mustCert(t, certFile)
	if want := []string{"localhost", "minik.example"}; !slices.Equal(cert.DNSNames, want) {
		t.Errorf("DNS SANs = %v, want %v", cert.DNSNames, want)
	}
	for _, host := range []string{"localhost", "minik.example", "127.0.0.1", "::1", "10.0.0.7"} {
		_, err := cert.Verify(x509.VerifyOptions{
			DNSName:   host,
			Roots:     ca.CertPool(),
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		if err != nil {
			t.Errorf("certificate does not verify for %s: %v", host, err)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: "other.example", Roots: ca.CertPool()}); err == nil {
		t.Error("certificate verifies for a host it was not issued for")
	}
}

func TestEnsureClientPutsUserInCNAndGroupsInO(t *testing.T) {
	tests := []struct {
		name   string
		user   string
		groups []string
		wantO  []string
	}{
		{name: "admin is in system:masters", user: AdminUser, groups: []string{MastersGroup}, wantO: []string{"system:masters"}},
		{name: "the scheduler has no group", user: SchedulerUser, wantO: nil},
		{name: "the controller manager has no group", user: ControllerUser, wantO: nil},
		{name: "a kubelet is system:node:NAME in system:nodes", user: NodeUser("n1"), groups: []string{NodesGroup}, wantO: []string{"system:nodes"}},
		{name: "groups are sorted and deduplicated", user: "u", groups: []string{"b", "a", "b"}, wantO: []string{"a", "b"}},
	}
	dir := t.TempDir()
	ca, err := EnsureCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := strings.ReplaceAll(tt.user, ":", "-")
			certFile, keyFile, err := ca.EnsureClient(dir, name, tt.user, tt.groups)
			if err != nil {
				t.Fatal(err)
			}
			if got := mode(t, keyFile); got != 0o600 {
				t.Errorf("key mode %o, want 600", got)
			}
			cert := mustCert(t, certFile)
			if cert.Subject.CommonName != tt.user {
				t.Errorf("CN = %q, want %q", cert.Subject.CommonName, tt.user)
			}
			if !slices.Equal(cert.Subject.Organization, tt.wantO) {
				t.Errorf("O = %q, want %q", cert.Subject.Organization, tt.wantO)
			}
			_, err = cert.Verify(x509.VerifyOptions{Roots: ca.CertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
			if err != nil {
				t.Errorf("certificate does not verify as a client certificate: %v", err)
			}
		})
	}
}

func TestLeafCertificatesOnRestart(t *testing.T) {
	serving := func(hosts ...string) func(*CA, string) error {
		return func(ca *CA, dir string) error {
			_, _, err := ca.EnsureServing(dir, "apiserver", hosts)
			return err
		}
	}
	client := func(groups ...string) func(*CA, string) error {
		return func(ca *CA, dir string) error {
			_, _, err := ca.EnsureClient(dir, "apiserver", "admin", groups)
			return err
		}
	}
	tests := []struct {
		name      string
		first     func(*CA, string) error
		second    func(*CA, string) error
		secondCA  func(t *testing.T, dir string, first *CA) *CA
		wantReuse bool
	}{
		{name: "a serving certificate is reused for the same hosts", first: serving("a.example"), second: serving("a.example"), wantReuse: true},
		{name: "a serving certificate is reused for a subset of its hosts", first: serving("a.example", "b.example"), second: serving("b.example"), wantReuse: true},
		{name: "a serving certificate is reissued for a new host", first: serving("a.example"), second: serving("a.example", "10.1.2.3")},
		{name: "a client certificate is reused for the same groups in any order", first: client("x", "y"), second: client("y", "x"), wantReuse: true},
		{name: "a client certificate is reissued for other groups", first: client("x"), second: client("x", "y")},
		{name: "a serving certificate is not reused as a client certificate", first: serving(), second: client()},
		{
			name: "a certificate signed by another CA is reissued", first: serving(), second: serving(),
			secondCA: func(t *testing.T, _ string, _ *CA) *CA {
				other, err := EnsureCA(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				return other
			},
		},
		{
			name: "a certificate close to expiry is renewed", first: serving(), second: serving(),
			secondCA: func(_ *testing.T, _ string, first *CA) *CA {
				late := *first
				late.now = func() time.Time { return time.Now().Add(LeafValidity - RenewBefore + 24*time.Hour) }
				return &late
			},
		},
		{
			name: "a certificate with time left before the renewal window is reused", first: serving(), second: serving(),
			secondCA: func(_ *testing.T, _ string, first *CA) *CA {
				later := *first
				later.now = func() time.Time { return time.Now().Add(LeafValidity - RenewBefore - 24*time.Hour) }
				return &later
			},
			wantReuse: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ca, err := EnsureCA(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.first(ca, dir); err != nil {
				t.Fatal(err)
			}
			before := readFile(t, filepath.Join(dir, "apiserver.crt"))
			second := ca
			if tt.secondCA != nil {
				second = tt.secondCA(t, dir, ca)
			}
			if err := tt.second(second, dir); err != nil {
				t.Fatal(err)
			}
			after := readFile(t, filepath.Join(dir, "apiserver.crt"))
			if reused := bytes.Equal(before, after); reused != tt.wantReuse {
				t.Errorf("certificate reused = %v, want %v", reused, tt.wantReuse)
			}
			if cert := mustCert(t, filepath.Join(dir, "apiserver.crt")); cert.CheckSignatureFrom(second.Cert) != nil {
				t.Error("certificate on disk is not signed by the CA in use")
			}
		})
	}
}

func TestEnsureLeafRejectsFileNamesThatLeaveTheDirectory(t *testing.T) {
	dir := t.TempDir()
	ca, err := EnsureCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "../evil", "a/b", ".hidden"} {
		if _, _, err := ca.EnsureClient(dir, name, "u", nil); err == nil {
			t.Errorf("EnsureClient accepted file name %q", name)
		}
	}
	if _, _, err := ca.EnsureClient(dir, "u", "", nil); err == nil {
		t.Error("EnsureClient accepted an empty user")
	}
}

func TestIssuedCertificatesAuthenticateOverMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := EnsureCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	srvCert, srvKey, err := ca.EnsureServing(dir, "apiserver", nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := r.TLS.PeerCertificates[0]
		io.WriteString(w, c.Subject.CommonName+"|"+strings.Join(c.Subject.Organization, ","))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.CertPool()}
	srv.StartTLS()
	defer srv.Close()

	certPEM, keyPEM, err := ca.IssueClient(NodeUser("n1"), []string{NodesGroup})
	if err != nil {
		t.Fatal(err)
	}
	clientPair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, host := range []string{"localhost", "127.0.0.1"} {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.CertPool(), Certificates: []tls.Certificate{clientPair}}}}
		resp, err := hc.Get("https://" + net.JoinHostPort(host, port))
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got, want := string(body), "system:node:n1|system:nodes"; got != want {
			t.Errorf("%s: server saw %q, want %q", host, got, want)
		}
	}
}
