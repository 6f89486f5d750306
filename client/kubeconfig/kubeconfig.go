// Package kubeconfig reads and writes kubeconfig files, the YAML format that
// kubectl and client-go use to find a cluster and a user's credentials.
//
// Only what minik needs is supported: a server URL, a CA, a client
// certificate and key, and a bearer token, each inline (*-data) or as a file
// path. Relative paths resolve against the kubeconfig's own directory, as in
// kubectl. Exec plugins, auth providers and merging of several files are
// left out.
package kubeconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// ClusterName is the cluster (and context suffix) that Write uses.
const ClusterName = "minik"

// Config is a kubeconfig file (apiVersion v1, kind Config).
type Config struct {
	APIVersion     string         `json:"apiVersion"`
	Kind           string         `json:"kind"`
	Clusters       []NamedCluster `json:"clusters"`
	Users          []NamedUser    `json:"users"`
	Contexts       []NamedContext `json:"contexts"`
	CurrentContext string         `json:"current-context"`
	Preferences    struct{}       `json:"preferences"`

	// dir is where the file was loaded from; relative paths resolve here.
	dir string
}

// NamedCluster is one entry of clusters.
type NamedCluster struct {
	Name    string  `json:"name"`
	Cluster Cluster `json:"cluster"`
}

// Cluster says where the apiserver is and how to trust it.
type Cluster struct {
	Server                   string `json:"server"`
	TLSServerName            string `json:"tls-server-name,omitempty"`
	InsecureSkipTLSVerify    bool   `json:"insecure-skip-tls-verify,omitempty"`
	CertificateAuthority     string `json:"certificate-authority,omitempty"`
	CertificateAuthorityData []byte `json:"certificate-authority-data,omitempty"`
}

// NamedUser is one entry of users.
type NamedUser struct {
	Name string   `json:"name"`
	User AuthInfo `json:"user"`
}

// AuthInfo holds a user's credentials.
type AuthInfo struct {
	ClientCertificate     string `json:"client-certificate,omitempty"`
	ClientCertificateData []byte `json:"client-certificate-data,omitempty"`
	ClientKey             string `json:"client-key,omitempty"`
	ClientKeyData         []byte `json:"client-key-data,omitempty"`
	Token                 string `json:"token,omitempty"`
	TokenFile             string `json:"tokenFile,omitempty"`
}

// NamedContext is one entry of contexts.
type NamedContext struct {
	Name    string  `json:"name"`
	Context Context `json:"context"`
}

// Context pairs a cluster with a user and a default namespace.
type Context struct {
	Cluster   string `json:"cluster"`
	AuthInfo  string `json:"user"`
	Namespace string `json:"namespace,omitempty"`
}

// DefaultPath returns the first path in $KUBECONFIG, or ~/.kube/config.
func DefaultPath() string {
	if env := os.Getenv("KUBECONFIG"); env != "" {
		return filepath.SplitList(env)[0]
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(".kube", "config")
	}
	return filepath.Join(home, ".kube", "config")
}

// Load reads the kubeconfig at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return Parse(data, filepath.Dir(abs))
}

// Parse decodes a kubeconfig; relative file paths in it resolve against dir.
func Parse(data []byte, dir string) (*Config, error) {
	var c Config
	// Not strict: real kubeconfigs carry fields minik ignores (exec,
	// extensions).
	if err := yaml.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	c.dir = dir
	return &c, nil
}

// New returns a kubeconfig with one cluster, one user and one context named
// USER@minik, which is current. It embeds caPEM, certPEM and keyPEM.
func New(server string, caPEM, certPEM, keyPEM []byte, user string) *Config {
	ctx := user + "@" + ClusterName
	return &Config{
		APIVersion: "v1",
		Kind:       "Config",
		Clusters: []NamedCluster{{Name: ClusterName, Cluster: Cluster{
			Server: server, CertificateAuthorityData: caPEM,
		}}},
		Users: []NamedUser{{Name: user, User: AuthInfo{
			ClientCertificateData: certPEM, ClientKeyData: keyPEM,
		}}},
		Contexts:       []NamedContext{{Name: ctx, Context: Context{Cluster: ClusterName, AuthInfo: user}}},
		CurrentContext: ctx,
	}
}

// Write writes a self-contained kubeconfig for user to path (mode 0600,
// since it holds a private key); see New.
func Write(path, server string, caPEM, certPEM, keyPEM []byte, user string) error {
	return New(server, caPEM, certPEM, keyPEM, user).Save(path)
}

// Save writes c to path with mode 0600 through a rename, so that a reader
// never sees half a file.
func (c *Config) Save(path string) error {
	data, err := yaml.Marshal(c)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("kubeconfig: write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	return nil
}

// Resolved is the current context with names looked up and files read.
type Resolved struct {
	Context   string
	Server    string
	Namespace string // "default" when the context names none
	Cluster   Cluster
	User      AuthInfo
	Token     string // from token, or read from tokenFile
}

// Current resolves the current context.
func (c *Config) Current() (*Resolved, error) {
	return c.Resolve(c.CurrentContext)
}

// Resolve resolves the named context: its cluster and user must exist.
func (c *Config) Resolve(context string) (*Resolved, error) {
	if context == "" {
		return nil, errors.New("kubeconfig: no current context")
	}
	var r Resolved
	r.Context = context
	ctx, ok := find(c.Contexts, context, func(n NamedContext) (string, Context) { return n.Name, n.Context })
	if !ok {
		return nil, fmt.Errorf("kubeconfig: context %q not found", context)
	}
	if r.Cluster, ok = find(c.Clusters, ctx.Cluster, func(n NamedCluster) (string, Cluster) { return n.Name, n.Cluster }); !ok {
		return nil, fmt.Errorf("kubeconfig: cluster %q of context %q not found", ctx.Cluster, context)
	}
	if ctx.AuthInfo != "" {
		if r.User, ok = find(c.Users, ctx.AuthInfo, func(n NamedUser) (string, AuthInfo) { return n.Name, n.User }); !ok {
			return nil, fmt.Errorf("kubeconfig: user %q of context %q not found", ctx.AuthInfo, context)
		}
	}
	if r.Cluster.Server == "" {
		return nil, fmt.Errorf("kubeconfig: cluster %q has no server", ctx.Cluster)
	}
	r.Server = r.Cluster.Server
	r.Namespace = ctx.Namespace
	if r.Namespace == "" {
		r.Namespace = "default"
	}
	r.Token = r.User.Token
	if r.Token == "" && r.User.TokenFile != "" {
		b, err := os.ReadFile(c.path(r.User.TokenFile))
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: token file: %w", err)
		}
		r.Token = strings.TrimSpace(string(b))
	}
	// Replace file references by their contents, so that callers need not
	// know where the kubeconfig lives.
	var err error
	if r.Cluster.CertificateAuthorityData, err = c.inlineOrFile(r.Cluster.CertificateAuthorityData, r.Cluster.CertificateAuthority); err != nil {
		return nil, err
	}
	if r.User.ClientCertificateData, err = c.inlineOrFile(r.User.ClientCertificateData, r.User.ClientCertificate); err != nil {
		return nil, err
	}
	if r.User.ClientKeyData, err = c.inlineOrFile(r.User.ClientKeyData, r.User.ClientKey); err != nil {
		return nil, err
	}
	return &r, nil
}

// TLSConfig builds the TLS client configuration of the current context: the
// CA to trust (the system pool if none is given), the client certificate,
// and the server name.
func (c *Config) TLSConfig() (*tls.Config, error) {
	r, err := c.Current()
	if err != nil {
		return nil, err
	}
	return r.TLSConfig()
}

// TLSConfig builds the TLS client configuration of r; see Config.TLSConfig.
func (r *Resolved) TLSConfig() (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         r.Cluster.TLSServerName,
		InsecureSkipVerify: r.Cluster.InsecureSkipTLSVerify, //nolint:gosec // the user asked for it in the kubeconfig
	}
	if len(r.Cluster.CertificateAuthorityData) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(r.Cluster.CertificateAuthorityData) {
			return nil, errors.New("kubeconfig: certificate-authority holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	cert, key := r.User.ClientCertificateData, r.User.ClientKeyData
	switch {
	case len(cert) > 0 && len(key) > 0:
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case len(cert) > 0 || len(key) > 0:
		return nil, errors.New("kubeconfig: client certificate and client key must be given together")
	}
	return cfg, nil
}

func (c *Config) path(p string) string {
	if p == "" || filepath.IsAbs(p) || c.dir == "" {
		return p
	}
	return filepath.Join(c.dir, p)
}

// inlineOrFile prefers inline data, as kubectl does.
func (c *Config) inlineOrFile(data []byte, file string) ([]byte, error) {
	if len(data) > 0 || file == "" {
		return data, nil
	}
	b, err := os.ReadFile(c.path(file))
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return b, nil
}

func find[E, V any](list []E, name string, split func(E) (string, V)) (V, bool) {
	for _, e := range list {
		if n, v := split(e); n == name {
			return v, true
		}
	}
	var zero V
	return zero, false
}
