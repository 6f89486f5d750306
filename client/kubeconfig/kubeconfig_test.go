package kubeconfig

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"minik/internal/pki"
)

// cluster is a CA, an admin client certificate and a TLS server that
// requires a client certificate from that CA and answers with its CN.
type cluster struct {
	dir                    string
	ca                     *pki.CA
	certFile, keyFile      string
	certPEM, keyPEM, caPEM []byte
	server                 *httptest.Server
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.EnsureCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	srvCert, srvKey, err := ca.EnsureServing(dir, "apiserver", nil)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := ca.EnsureClient(dir, "admin", pki.AdminUser, []string{pki.MastersGroup})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.CertPool()}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return &cluster{
		dir: dir, ca: ca, certFile: certFile, keyFile: keyFile, server: srv,
		certPEM: mustRead(t, certFile), keyPEM: mustRead(t, keyFile), caPEM: ca.CertPEM(),
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// get makes a request with cfg and returns the CN the server saw.
func get(t *testing.T, url string, cfg *tls.Config) string {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestWriteEmbedsCredentialsInAFileOnlyTheOwnerCanRead(t *testing.T) {
	c := newCluster(t)
	path := filepath.Join(t.TempDir(), "sub", "admin.kubeconfig")
	if err := Write(path, c.server.URL, c.caPEM, c.certPEM, c.keyPEM, "admin"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %o, want 600", fi.Mode().Perm())
	}
	text := string(mustRead(t, path))
	for _, want := range []string{"certificate-authority-data:", "client-certificate-data:", "client-key-data:", "current-context: admin@minik", "server: " + c.server.URL} {
		if !strings.Contains(text, want) {
			t.Errorf("kubeconfig lacks %q:\n%s", want, text)
		}
	}

	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := cfg.Current()
	if err != nil {
		t.Fatal(err)
	}
	if r.Server != c.server.URL || r.Namespace != "default" || r.Context != "admin@minik" {
		t.Errorf("resolved server=%q namespace=%q context=%q", r.Server, r.Namespace, r.Context)
	}
	if !bytes.Equal(r.Cluster.CertificateAuthorityData, c.caPEM) || !bytes.Equal(r.User.ClientKeyData, c.keyPEM) {
		t.Error("embedded PEM data did not survive the round trip")
	}
	tlsCfg, err := cfg.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, c.server.URL, tlsCfg); got != "admin" {
		t.Errorf("server saw user %q, want admin", got)
	}
}

func TestClientGoAcceptsAWrittenKubeconfigAsIs(t *testing.T) {
	c := newCluster(t)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := Write(path, c.server.URL, c.caPEM, c.certPEM, c.keyPEM, "admin"); err != nil {
		t.Fatal(err)
	}
	raw, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := clientcmd.Validate(*raw); err != nil {
		t.Fatalf("clientcmd rejects the kubeconfig: %v", err)
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if restCfg.Host != c.server.URL {
		t.Errorf("client-go host %q, want %q", restCfg.Host, c.server.URL)
	}
	hc, err := rest.HTTPClientFor(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(c.server.URL)
	if err != nil {
		t.Fatalf("client-go could not connect with the kubeconfig: %v", err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "admin" {
		t.Errorf("server saw user %q through client-go, want admin", b)
	}
}

func TestRelativePathsResolveAgainstTheKubeconfigDirectory(t *testing.T) {
	c := newCluster(t)
	os.WriteFile(filepath.Join(c.dir, "token"), []byte("s3cret\n"), 0o600)
	kc := `apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: ` + c.server.URL + `
    certificate-authority: ca.crt
users:
- name: me
  user:
    client-certificate: admin.crt
    client-key: ./admin.key
    tokenFile: token
contexts:
- name: here
  context: {cluster: local, user: me, namespace: team-a}
current-context: here
`
	path := filepath.Join(c.dir, "kubeconfig")
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // the working directory must not matter

	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := cfg.Current()
	if err != nil {
		t.Fatal(err)
	}
	if r.Token != "s3cret" || r.Namespace != "team-a" {
		t.Errorf("token=%q namespace=%q, want s3cret and team-a", r.Token, r.Namespace)
	}
	tlsCfg, err := r.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, c.server.URL, tlsCfg); got != "admin" {
		t.Errorf("server saw user %q, want admin", got)
	}
}

func TestResolveReportsWhatIsMissing(t *testing.T) {
	good := func() *Config {
		return New("https://127.0.0.1:6443", nil, nil, nil, "u")
	}
	tests := []struct {
		name    string
		edit    func(c *Config)
		wantErr string
	}{
		{name: "no current context", edit: func(c *Config) { c.CurrentContext = "" }, wantErr: "no current context"},
		{name: "current context not defined", edit: func(c *Config) { c.CurrentContext = "nope" }, wantErr: `context "nope" not found`},
		{name: "cluster not defined", edit: func(c *Config) { c.Clusters = nil }, wantErr: `cluster "minik" of context`},
		{name: "user not defined", edit: func(c *Config) { c.Users = nil }, wantErr: `user "u" of context`},
		{name: "cluster without server", edit: func(c *Config) { c.Clusters[0].Cluster.Server = "" }, wantErr: "has no server"},
		{name: "CA file missing", edit: func(c *Config) { c.Clusters[0].Cluster.CertificateAuthority = "/nonexistent/ca.crt" }, wantErr: "no such file"},
		{name: "token file missing", edit: func(c *Config) { c.Users[0].User.TokenFile = "/nonexistent/token" }, wantErr: "token file"},
		{name: "certificate without key", edit: func(c *Config) { c.Users[0].User.ClientCertificateData = []byte("x") }, wantErr: "must be given together"},
		{name: "CA data that is not PEM", edit: func(c *Config) { c.Clusters[0].Cluster.CertificateAuthorityData = []byte("x") }, wantErr: "no PEM certificate"},
		{name: "a complete context", edit: func(*Config) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good()
			tt.edit(c)
			_, err := c.TLSConfig()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestDefaultPathPrefersTheFirstEntryOfKUBECONFIG(t *testing.T) {
	t.Setenv("KUBECONFIG", "/a/config"+string(os.PathListSeparator)+"/b/config")
	if got := DefaultPath(); got != "/a/config" {
		t.Errorf("DefaultPath() = %q, want /a/config", got)
	}
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", "/home/x")
	if got := DefaultPath(); got != "/home/x/.kube/config" {
		t.Errorf("DefaultPath() = %q, want /home/x/.kube/config", got)
	}
}
