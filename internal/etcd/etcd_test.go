package etcd

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"minik/internal/pki"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestTLSMemberRefusesClientsWithoutACertificateOfItsCA starts one member
// with client and peer TLS and client-certificate auth, from certificates
// laid out as kubeadm lays them out, and dials it as three clients: only
// the one with the apiserver's etcd client certificate gets in.
func TestTLSMemberRefusesClientsWithoutACertificateOfItsCA(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd member; skipped under -short")
	}
	dir := t.TempDir()
	pkiDir := filepath.Join(dir, "pki")
	member, err := pki.EnsureEtcdMember(pkiDir, "m0", nil)
	if err != nil {
		t.Fatal(err)
	}
	apiClient, err := pki.EnsureAPIServerEtcdClient(pkiDir)
	if err != nil {
		t.Fatal(err)
	}
	// A certificate of another CA (the cluster's, not etcd's).
	clusterCA, err := pki.EnsureCA(pkiDir)
	if err != nil {
		t.Fatal(err)
	}
	otherCert, otherKey, err := clusterCA.EnsureClient(pkiDir, "admin", pki.AdminUser, []string{pki.MastersGroup})
	if err != nil {
		t.Fatal(err)
	}

	clientURL := fmt.Sprintf("https://127.0.0.1:%d", freePort(t))
	peerURL := fmt.Sprintf("https://127.0.0.1:%d", freePort(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := StartMember(ctx, MemberConfig{
		Name: "m0", DataDir: filepath.Join(dir, "m0"), Quiet: true,
		ListenClientURLs: []string{clientURL}, ListenPeerURLs: []string{peerURL},
		InitialCluster: "m0=" + peerURL,
		ClientTLS:      TLSFiles{CertFile: member.ServerCert, KeyFile: member.ServerKey, TrustedCAFile: member.TrustedCA, ClientCertAuth: true},
		PeerTLS:        TLSFiles{CertFile: member.PeerCert, KeyFile: member.PeerKey, TrustedCAFile: member.TrustedCA, ClientCertAuth: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	cases := []struct {
		name   string
		tls    ClientTLS
		wantOK bool
	}{
		{"the apiserver's etcd client certificate is accepted", ClientTLS{CAFile: apiClient.CA, CertFile: apiClient.Cert, KeyFile: apiClient.Key}, true},
		{"a client without a certificate is refused", ClientTLS{CAFile: apiClient.CA}, false},
		{"a certificate of another CA is refused", ClientTLS{CAFile: apiClient.CA, CertFile: otherCert, KeyFile: otherKey}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := DialTLS([]string{clientURL}, tc.tls)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
			defer rcancel()
			_, err = c.Put(rctx, "/test/"+tc.name, "v")
			if tc.wantOK && err != nil {
				t.Fatalf("put: %v", err)
			}
			if !tc.wantOK && err == nil {
				t.Fatal("put succeeded; want the connection refused")
			}
		})
	}
	t.Run("a plaintext client is refused", func(t *testing.T) {
		c, err := Dial([]string{"http" + clientURL[len("https"):]})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
		defer rcancel()
		if _, err := c.Get(rctx, "/test/x"); err == nil {
			t.Fatal("plaintext get succeeded")
		}
	})
}

func TestClientTLSConfig(t *testing.T) {
	cases := []struct {
		name    string
		tls     ClientTLS
		wantNil bool
		wantErr bool
	}{
		{"no files is plaintext", ClientTLS{}, true, false},
		{"a certificate without its key is an error", ClientTLS{CAFile: "ca.crt", CertFile: "c.crt"}, true, true},
		{"a missing CA file is an error", ClientTLS{CAFile: "/nonexistent/ca.crt"}, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.tls.Config()
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if (c == nil) != tc.wantNil {
				t.Fatalf("config = %v, want nil %v", c, tc.wantNil)
			}
		})
	}
}
