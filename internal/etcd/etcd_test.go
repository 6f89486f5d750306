package etcd

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
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

// tlsMember is one member serving clients and peers over TLS with
// client-certificate auth, from certificates laid out as kubeadm lays
// them out, and the apiserver's client certificate for it.
type tlsMember struct {
	ctx               context.Context
	pkiDir, clientURL string
	apiClient         pki.EtcdClientFiles
}

func startTLSMember(t *testing.T, change func(*MemberConfig)) tlsMember {
	t.Helper()
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
	clientURL := fmt.Sprintf("https://127.0.0.1:%d", freePort(t))
	peerURL := fmt.Sprintf("https://127.0.0.1:%d", freePort(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	mc := MemberConfig{
		Name: "m0", DataDir: filepath.Join(dir, "m0"), Quiet: true,
		ListenClientURLs: []string{clientURL}, ListenPeerURLs: []string{peerURL},
		InitialCluster: "m0=" + peerURL,
		ClientTLS:      TLSFiles{CertFile: member.ServerCert, KeyFile: member.ServerKey, TrustedCAFile: member.TrustedCA, ClientCertAuth: true},
		PeerTLS:        TLSFiles{CertFile: member.PeerCert, KeyFile: member.PeerKey, TrustedCAFile: member.TrustedCA, ClientCertAuth: true},
	}
	if change != nil {
		change(&mc)
	}
	m, err := StartMember(ctx, mc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return tlsMember{ctx: ctx, pkiDir: pkiDir, clientURL: clientURL, apiClient: apiClient}
}

// TestTLSMemberRefusesClientsWithoutACertificateOfItsCA starts one member
// with client and peer TLS and client-certificate auth, from certificates
// laid out as kubeadm lays them out, and dials it as three clients: only
// the one with the apiserver's etcd client certificate gets in.
func TestTLSMemberRefusesClientsWithoutACertificateOfItsCA(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd member; skipped under -short")
	}
	tm := startTLSMember(t, nil)
	ctx, clientURL, apiClient := tm.ctx, tm.clientURL, tm.apiClient
	// A certificate of another CA (the cluster's, not etcd's).
	clusterCA, err := pki.EnsureCA(tm.pkiDir)
	if err != nil {
		t.Fatal(err)
	}
	otherCert, otherKey, err := clusterCA.EnsureClient(tm.pkiDir, "admin", pki.AdminUser, []string{pki.MastersGroup})
	if err != nil {
		t.Fatal(err)
	}

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

// With ListenClientHTTPURLs, the client URL serves gRPC alone and the
// HTTP URL serves /health, both over the same TLS and client auth.
func TestSplitHTTPServesHealthApartFromGRPC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd member; skipped under -short")
	}
	httpURL := fmt.Sprintf("https://127.0.0.1:%d", freePort(t))
	tm := startTLSMember(t, func(mc *MemberConfig) { mc.ListenClientHTTPURLs = []string{httpURL} })
	creds := ClientTLS{CAFile: tm.apiClient.CA, CertFile: tm.apiClient.Cert, KeyFile: tm.apiClient.Key}
	c, err := DialTLS([]string{tm.clientURL}, creds)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Put(tm.ctx, "/test/split", "v"); err != nil {
		t.Fatalf("gRPC put on the client URL: %v", err)
	}
	tlsConfig, err := creds.Config()
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: 5 * time.Second}
	resp, err := hc.Get(httpURL + "/health")
	if err != nil {
		t.Fatalf("GET /health on the HTTP URL: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"health":"true"`) {
		t.Fatalf("GET /health on the HTTP URL: %d %s", resp.StatusCode, body)
	}
	if resp, err := hc.Get(tm.clientURL + "/health"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("GET /health on the client URL answered 200; want it to serve gRPC alone")
		}
	}
}
