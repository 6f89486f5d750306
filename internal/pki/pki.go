// Package pki creates and reuses the certificates a minik cluster needs: one
// CA, a serving certificate for the apiserver, and client certificates whose
// subject carries the Kubernetes identity (CN = user name, O = groups).
//
// Everything lives as PEM files in one directory. The first start creates
// them; later starts load and reuse them, and reissue a leaf certificate only
// when it no longer fits (other hosts or groups, another CA, close to expiry).
package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Validity periods and the renewal window. Leaf certificates are short-lived
// compared to the CA so that a leaked client key stops working on its own;
// they are renewed on start once less than RenewBefore is left.
const (
	CAValidity   = 10 * 365 * 24 * time.Hour
	LeafValidity = 365 * 24 * time.Hour
	RenewBefore  = 90 * 24 * time.Hour
)

// Well-known identities. The apiserver's authorizer gives system:masters
// every right, and the node authorizer recognises system:node:NAME.
const (
	AdminUser      = "admin"
	MastersGroup   = "system:masters"
	SchedulerUser  = "system:kube-scheduler"
	ControllerUser = "system:kube-controller-manager"
	NodesGroup     = "system:nodes"
	NodeUserPrefix = "system:node:"
	// KubeletClientUser is the apiserver's identity towards kubelets (logs,
	// exec, port-forward). It has no group: to the apiserver it is nobody,
	// kubelets admit it by name.
	KubeletClientUser   = "kube-apiserver-kubelet-client"
	caCertFile          = "ca.crt"
	caKeyFile           = "ca.key"
	caCommonName        = "minik-ca"
	keyFileMode         = 0o600
	certFileMode        = 0o644
	dirMode             = 0o755
	serialNumberBitSize = 128
)

// NodeUser returns the user name a kubelet on node authenticates as.
func NodeUser(node string) string { return NodeUserPrefix + node }

// DefaultHosts are always in the apiserver's serving certificate, so that
// local clients work whatever address the cluster advertises.
var DefaultHosts = []string{"127.0.0.1", "::1", "localhost"}

// CA is a certificate authority whose key is on disk in the same directory.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer

	certPEM []byte
	keyPEM  []byte
	// now is the clock used for validity checks and NotBefore; tests set it.
	now func() time.Time
}

// EnsureCA loads the CA from dir/ca.crt and dir/ca.key, creating both (and
// dir) when neither exists. A certificate without its key is an error rather
// than a reason to start over: a new CA would silently invalidate every
// certificate and kubeconfig issued so far.
func EnsureCA(dir string) (*CA, error) {
	return ensureCA(dir, caCommonName, time.Now)
}

// EnsureNamedCA is EnsureCA for a CA of its own, such as etcd's (kubeadm's
// etcd/ca.crt, "etcd-ca"): commonName names it when it is created.
func EnsureNamedCA(dir, commonName string) (*CA, error) {
	return ensureCA(dir, commonName, time.Now)
}

func ensureCA(dir, commonName string, now func() time.Time) (*CA, error) {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("pki: create %s: %w", dir, err)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()

	certPath, keyPath := filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile)
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	switch {
	case certErr == nil && keyErr == nil:
		return parseCA(certPEM, keyPEM, now)
	case certErr == nil && errors.Is(keyErr, fs.ErrNotExist):
		return nil, fmt.Errorf("pki: %s exists but %s does not; restore the key or remove both to create a new CA", certPath, keyPath)
	case certErr != nil && !errors.Is(certErr, fs.ErrNotExist):
		return nil, fmt.Errorf("pki: read %s: %w", certPath, certErr)
	case keyErr != nil && !errors.Is(keyErr, fs.ErrNotExist):
		return nil, fmt.Errorf("pki: read %s: %w", keyPath, keyErr)
	}
	// No certificate: a key left alone by an interrupted first start is
	// useless, so both are created anew.
	ca, err := newCA(commonName, now)
	if err != nil {
		return nil, err
	}
	if err := writePair(certPath, keyPath, ca.certPEM, ca.keyPEM); err != nil {
		return nil, err
	}
	return ca, nil
}

// LoadCA reads an existing CA from dir without creating anything.
func LoadCA(dir string) (*CA, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, caCertFile))
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, caKeyFile))
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	return parseCA(certPEM, keyPEM, time.Now)
}

func newCA(commonName string, now func() time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: generate CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	start := now().Add(-time.Hour) // tolerate clocks a little behind ours
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             start,
		NotAfter:              start.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("pki: create CA certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return parseCA(encodeCert(der), keyPEM, now)
}

func parseCA(certPEM, keyPEM []byte, now func() time.Time) (*CA, error) {
	cert, err := ParseCertPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, errors.New("pki: CA certificate is not a CA")
	}
	key, err := ParseKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: CA key: %w", err)
	}
	if !keyMatches(cert, key) {
		return nil, errors.New("pki: CA key does not match CA certificate")
	}
	return &CA{Cert: cert, Key: key, certPEM: certPEM, keyPEM: keyPEM, now: now}, nil
}

// CertPEM returns the CA certificate in PEM form, as kubeconfigs embed it.
func (ca *CA) CertPEM() []byte { return bytes.Clone(ca.certPEM) }

// KeyPEM returns the CA private key in PEM form.
func (ca *CA) KeyPEM() []byte { return bytes.Clone(ca.keyPEM) }

// CertPool returns a pool holding only this CA, for verifying peers.
func (ca *CA) CertPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return pool
}

// EnsureServing returns dir/NAME.crt and dir/NAME.key, a server certificate
// signed by ca for hosts plus DefaultHosts. Each host is an IP address or a
// DNS name. Existing files are reused while they still cover every host.
func (ca *CA) EnsureServing(dir, name string, hosts []string) (certFile, keyFile string, err error) {
	dns, ips := splitHosts(append(slices.Clone(hosts), DefaultHosts...))
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		DNSNames:    dns,
		IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	fits := func(c *x509.Certificate) bool {
		return hasUsage(c, x509.ExtKeyUsageServerAuth) && coversHosts(c, dns, ips)
	}
	return ca.ensureLeaf(dir, name, tmpl, fits)
}

// EnsurePeer returns dir/NAME.crt and dir/NAME.key, a certificate for
// commonName that serves hosts (plus DefaultHosts) and is also a client
// certificate, as etcd's server and peer certificates are (a member dials
// its peers with its peer certificate). Existing files are reused while
// they still cover every host.
func (ca *CA) EnsurePeer(dir, name, commonName string, hosts []string) (certFile, keyFile string, err error) {
	dns, ips := splitHosts(append(slices.Clone(hosts), DefaultHosts...))
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		DNSNames:    dns,
		IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	fits := func(c *x509.Certificate) bool {
		return hasUsage(c, x509.ExtKeyUsageServerAuth) && hasUsage(c, x509.ExtKeyUsageClientAuth) &&
			c.Subject.CommonName == commonName && coversHosts(c, dns, ips)
	}
	return ca.ensureLeaf(dir, name, tmpl, fits)
}

// EnsureClient returns dir/NAME.crt and dir/NAME.key, a client certificate
// signed by ca that authenticates as user in groups. Existing files are
// reused while their subject is exactly user and groups.
func (ca *CA) EnsureClient(dir, name, user string, groups []string) (certFile, keyFile string, err error) {
	if user == "" {
		return "", "", errors.New("pki: client certificate needs a user name")
	}
	tmpl := clientTemplate(user, groups)
	want := tmpl.Subject.Organization
	fits := func(c *x509.Certificate) bool {
		have := slices.Clone(c.Subject.Organization)
		slices.Sort(have)
		return hasUsage(c, x509.ExtKeyUsageClientAuth) && c.Subject.CommonName == user && slices.Equal(have, want)
	}
	return ca.ensureLeaf(dir, name, tmpl, fits)
}

// clientTemplate sorts and dedups groups so that equal sets give equal
// subjects.
func clientTemplate(user string, groups []string) *x509.Certificate {
	orgs := slices.Clone(groups)
	slices.Sort(orgs)
	orgs = slices.Compact(orgs)
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: orgs},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
}

// ensureLeaf reuses dir/NAME.{crt,key} when they are a matching pair, signed
// by ca, valid beyond the renewal window and fits; otherwise it issues tmpl.
func (ca *CA) ensureLeaf(dir, name string, tmpl *x509.Certificate, fits func(*x509.Certificate) bool) (string, string, error) {
	if name == "" || name != filepath.Base(name) || strings.HasPrefix(name, ".") {
		return "", "", fmt.Errorf("pki: invalid file name %q", name)
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return "", "", fmt.Errorf("pki: create %s: %w", dir, err)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return "", "", err
	}
	defer unlock()

	certFile, keyFile := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if cert, ok := ca.loadLeaf(certFile, keyFile); ok && fits(cert) {
		return certFile, keyFile, nil
	}
	certPEM, keyPEM, err := ca.issue(tmpl)
	if err != nil {
		return "", "", err
	}
	if err := writePair(certFile, keyFile, certPEM, keyPEM); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// loadLeaf returns the certificate in certFile if it can be reused with the
// key in keyFile. Any problem means "issue a new one", so it is not an error.
func (ca *CA) loadLeaf(certFile, keyFile string) (*x509.Certificate, bool) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, false
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, false
	}
	cert, err := ParseCertPEM(certPEM)
	if err != nil {
		return nil, false
	}
	key, err := ParseKeyPEM(keyPEM)
	if err != nil || !keyMatches(cert, key) {
		return nil, false
	}
	if cert.CheckSignatureFrom(ca.Cert) != nil {
		return nil, false
	}
	if now := ca.now(); now.Before(cert.NotBefore) || now.Add(RenewBefore).After(cert.NotAfter) {
		return nil, false
	}
	return cert, true
}

// IssueClient signs a client certificate for user in groups and returns it
// with its key as PEM, without touching the disk; hollow nodes in scale tests
// use it to get many identities cheaply.
func (ca *CA) IssueClient(user string, groups []string) (certPEM, keyPEM []byte, err error) {
	if user == "" {
		return nil, nil, errors.New("pki: client certificate needs a user name")
	}
	return ca.issue(clientTemplate(user, groups))
}

func (ca *CA) issue(tmpl *x509.Certificate) ([]byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: generate key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	start := ca.now().Add(-time.Hour)
	t := *tmpl
	t.SerialNumber = serial
	t.NotBefore = start
	t.NotAfter = start.Add(LeafValidity)
	if t.NotAfter.After(ca.Cert.NotAfter) {
		t.NotAfter = ca.Cert.NotAfter
	}
	t.KeyUsage = x509.KeyUsageDigitalSignature
	t.BasicConstraintsValid = true
	t.IsCA = false
	der, err := x509.CreateCertificate(rand.Reader, &t, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: sign certificate for %q: %w", tmpl.Subject.CommonName, err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return encodeCert(der), keyPEM, nil
}

// ParseCertPEM parses the first CERTIFICATE block in data.
func ParseCertPEM(data []byte) (*x509.Certificate, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no CERTIFICATE PEM block")
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}

// ParseKeyPEM parses an EC, PKCS#1 or PKCS#8 private key in PEM form.
func ParseKeyPEM(data []byte) (crypto.Signer, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no private key PEM block")
		}
		switch block.Type {
		case "EC PRIVATE KEY":
			return x509.ParseECPrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			return x509.ParsePKCS1PrivateKey(block.Bytes)
		case "PRIVATE KEY":
			k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
			if err != nil {
				return nil, err
			}
			s, ok := k.(crypto.Signer)
			if !ok {
				return nil, fmt.Errorf("unsupported private key type %T", k)
			}
			return s, nil
		}
	}
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// encodeKey uses the SEC 1 "EC PRIVATE KEY" form that kubeadm writes, which
// every Kubernetes tool reads.
func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("pki: encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), serialNumberBitSize))
	if err != nil {
		return nil, fmt.Errorf("pki: serial number: %w", err)
	}
	return serial, nil
}

func keyMatches(cert *x509.Certificate, key crypto.Signer) bool {
	pub, ok := cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(key.Public())
}

func hasUsage(c *x509.Certificate, u x509.ExtKeyUsage) bool {
	return slices.Contains(c.ExtKeyUsage, u)
}

// splitHosts sorts hosts into DNS names and IPs, dropping blanks and
// duplicates, so that the certificate is the same whatever the input order.
func splitHosts(hosts []string) ([]string, []net.IP) {
	var dns []string
	var ips []net.IP
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
			continue
		}
		h = strings.ToLower(h)
		if !slices.Contains(dns, h) {
			dns = append(dns, h)
		}
	}
	slices.Sort(dns)
	slices.SortFunc(ips, func(a, b net.IP) int { return bytes.Compare(a.To16(), b.To16()) })
	return dns, ips
}

func coversHosts(c *x509.Certificate, dns []string, ips []net.IP) bool {
	for _, d := range dns {
		if !slices.Contains(c.DNSNames, d) {
			return false
		}
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(c.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// writePair writes the key before the certificate, each through a rename,
// so that a crash leaves either the old pair, or a new key with no matching
// certificate, which the next start detects and replaces.
func writePair(certFile, keyFile string, certPEM, keyPEM []byte) error {
	if err := writeFileAtomic(keyFile, keyPEM, keyFileMode); err != nil {
		return err
	}
	return writeFileAtomic(certFile, certPEM, certFileMode)
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	return nil
}
