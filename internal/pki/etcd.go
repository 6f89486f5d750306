package pki

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// etcd's certificates, laid out as kubeadm lays them out under its
// certificate dir (/etc/kubernetes/pki):
//
//	etcd/ca.crt, etcd/ca.key                     etcd's own CA ("etcd-ca")
//	etcd/server.crt, etcd/server.key             a member's client-facing cert (CN = member)
//	etcd/peer.crt, etcd/peer.key                 a member's peer cert (CN = member)
//	etcd/healthcheck-client.crt, .key            a client for probes
//	apiserver-etcd-client.crt, .key              the apiserver's client cert, signed by etcd-ca
//
// The server and peer certificates are for both server and client auth
// and name localhost, 127.0.0.1 and ::1 besides the member's hosts.
const (
	EtcdDir                   = "etcd"
	EtcdCACommonName          = "etcd-ca"
	EtcdHealthcheckClientUser = "kube-etcd-healthcheck-client"
	APIServerEtcdClientUser   = "kube-apiserver-etcd-client"
	apiServerEtcdClientName   = "apiserver-etcd-client"
)

// EtcdFiles are the paths of one etcd member's certificates.
type EtcdFiles struct {
	TrustedCA             string // etcd/ca.crt: verifies clients and peers
	ServerCert, ServerKey string
	PeerCert, PeerKey     string
}

// EtcdClientFiles are a client's certificate for etcd and the CA to trust.
type EtcdClientFiles struct {
	CA, Cert, Key string
}

// EnsureEtcdCA loads or creates pkiDir/etcd/ca.{crt,key}.
func EnsureEtcdCA(pkiDir string) (*CA, error) {
	return EnsureNamedCA(filepath.Join(pkiDir, EtcdDir), EtcdCACommonName)
}

// EnsureEtcdMember issues (once) member's server and peer certificates
// under pkiDir/etcd, for hosts (its DNS names and addresses) besides the
// loopback ones, with the etcd CA of pkiDir (created if missing). The
// file names are kubeadm's, one member per directory: for several members
// on one machine, see IssueEtcdMember.
func EnsureEtcdMember(pkiDir, member string, hosts []string) (EtcdFiles, error) {
	ca, err := EnsureEtcdCA(pkiDir)
	if err != nil {
		return EtcdFiles{}, err
	}
	return IssueEtcdMember(ca, pkiDir, member, hosts)
}

// IssueEtcdMember is EnsureEtcdMember with a given etcd CA: it writes the
// CA's certificate (never its key) and the member's certificates under
// pkiDir/etcd, so a member's directory holds only what it needs.
func IssueEtcdMember(ca *CA, pkiDir, member string, hosts []string) (EtcdFiles, error) {
	dir := filepath.Join(pkiDir, EtcdDir)
	f := EtcdFiles{TrustedCA: filepath.Join(dir, caCertFile)}
	err := WriteCACert(dir, ca)
	if err != nil {
		return EtcdFiles{}, err
	}
	if f.ServerCert, f.ServerKey, err = ca.EnsurePeer(dir, "server", member, hosts); err != nil {
		return EtcdFiles{}, fmt.Errorf("etcd server certificate: %w", err)
	}
	if f.PeerCert, f.PeerKey, err = ca.EnsurePeer(dir, "peer", member, hosts); err != nil {
		return EtcdFiles{}, fmt.Errorf("etcd peer certificate: %w", err)
	}
	return f, nil
}

// EnsureAPIServerEtcdClient issues (once) pkiDir/apiserver-etcd-client.{crt,key},
// the apiserver's client certificate for etcd, and the healthcheck client
// under pkiDir/etcd; it returns the apiserver's.
func EnsureAPIServerEtcdClient(pkiDir string) (EtcdClientFiles, error) {
	ca, err := EnsureEtcdCA(pkiDir)
	if err != nil {
		return EtcdClientFiles{}, err
	}
	dir := filepath.Join(pkiDir, EtcdDir)
	if _, _, err := ca.EnsureClient(dir, "healthcheck-client", EtcdHealthcheckClientUser, nil); err != nil {
		return EtcdClientFiles{}, err
	}
	cert, key, err := ca.EnsureClient(pkiDir, apiServerEtcdClientName, APIServerEtcdClientUser, nil)
	if err != nil {
		return EtcdClientFiles{}, err
	}
	return EtcdClientFiles{CA: filepath.Join(dir, caCertFile), Cert: cert, Key: key}, nil
}

// WriteCACert writes ca's certificate (not its key) to dir/ca.crt unless
// that file already holds it: what a component that only verifies needs.
func WriteCACert(dir string, ca *CA) error {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("pki: create %s: %w", dir, err)
	}
	path := filepath.Join(dir, caCertFile)
	if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, ca.certPEM) {
		return nil
	}
	return writeFileAtomic(path, ca.certPEM, certFileMode)
}
