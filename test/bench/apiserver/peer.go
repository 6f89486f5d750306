package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"minik/client"
	"minik/client/kubeconfig"
	"minik/test/bench/benchkit"
)

// upstream is the unmodified kube-apiserver (-peer, built from
// k8s.io/kubernetes at the version of k8s.io/api in go.mod by
// deploy/upstream-k8s.sh), measured with the same client and the same
// pods as minik: its own etcd member is `minik etcd`, the embedded etcd
// server minik up runs in its process; certificates come from `minik
// certs cluster`, as the compose cluster's.
type upstream struct {
	etcd, apiserver *benchkit.Proc
	cfg             client.Config
}

func (u *upstream) Name() string       { return "kube-apiserver" }
func (u *upstream) PID() int           { return u.apiserver.PID() }
func (u *upstream) CPU() time.Duration { return u.apiserver.CPU() }

func (u *upstream) stop() {
	if u.apiserver != nil {
		u.apiserver.Stop()
	}
	if u.etcd != nil {
		u.etcd.Stop()
	}
}

// startUpstream starts etcd and kube-apiserver in dir and waits until the
// apiserver is ready.
func startUpstream(ctx context.Context, bin, peer, dir string) (*upstream, error) {
	bin, err := benchkit.Binary(bin)
	if err != nil {
		return nil, err
	}
	var addrs [3]string // apiserver, etcd clients, etcd peers
	for i := range addrs {
		if addrs[i], err = benchkit.FreeAddr(); err != nil {
			return nil, err
		}
	}
	listen, etcdClients, etcdPeers := addrs[0], addrs[1], addrs[2]
	_, etcdPort, _ := strings.Cut(etcdClients, ":")
	pki := filepath.Join(dir, "pki")
	certs := exec.CommandContext(ctx, bin, "certs", "cluster", "--out", pki,
		"--server", "https://"+listen, "--host-server", "https://"+listen,
		"--apiserver-hosts", "127.0.0.1", "--etcd-members", "localhost")
	if out, err := certs.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("minik certs cluster: %v: %s", err, out)
	}
	u := &upstream{}
	u.etcd, err = benchkit.Start("etcd", bin, filepath.Join(dir, "etcd.log"), "etcd", "--name", "localhost",
		"--data-dir", filepath.Join(dir, "etcd"), "--pki-dir", filepath.Join(pki, "etcd-localhost"),
		"--listen-client-urls", "https://"+etcdClients, "--advertise-client-urls", "https://localhost:"+etcdPort,
		"--listen-peer-urls", "https://"+etcdPeers)
	if err != nil {
		return nil, err
	}
	api := filepath.Join(pki, "apiserver")
	_, port, _ := strings.Cut(listen, ":")
	u.apiserver, err = benchkit.Start("kube-apiserver", peer, filepath.Join(dir, "kube-apiserver.log"),
		"--bind-address", "127.0.0.1", "--secure-port", port, "--cert-dir", filepath.Join(dir, "certs"),
		"--tls-cert-file", filepath.Join(api, "apiserver.crt"), "--tls-private-key-file", filepath.Join(api, "apiserver.key"),
		"--client-ca-file", filepath.Join(api, "ca.crt"),
		"--etcd-servers", "https://localhost:"+etcdPort,
		"--etcd-cafile", filepath.Join(api, "etcd", "ca.crt"),
		"--etcd-certfile", filepath.Join(api, "apiserver-etcd-client.crt"), "--etcd-keyfile", filepath.Join(api, "apiserver-etcd-client.key"),
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", filepath.Join(api, "sa.key"), "--service-account-signing-key-file", filepath.Join(api, "sa.key"),
		"--service-cluster-ip-range", "10.96.0.0/12", "--authorization-mode", "Node,RBAC",
		// The kubernetes Service's endpoint would be 127.0.0.1, which
		// Endpoints refuse: no reconciler (nothing here uses it).
		"--endpoint-reconciler-type", "none")
	if err != nil {
		u.stop()
		return nil, err
	}
	kc, err := kubeconfig.Load(filepath.Join(pki, "admin", "kubeconfig"))
	if err != nil {
		u.stop()
		return nil, err
	}
	if u.cfg, err = client.ConfigFromKubeconfig(kc); err != nil {
		u.stop()
		return nil, err
	}
	u.cfg.UserAgent = "minik-bench"
	hc := &http.Client{Transport: client.NewTransport(u.cfg.TLS), Timeout: time.Second}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-u.apiserver.Done():
			u.stop()
			return nil, fmt.Errorf("kube-apiserver exited early; see %s", filepath.Join(dir, "kube-apiserver.log"))
		case <-ctx.Done():
			u.stop()
			return nil, ctx.Err()
		default:
		}
		if resp, err := hc.Get(u.cfg.Host + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return u, nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	u.stop()
	return nil, fmt.Errorf("kube-apiserver not ready after 2m; see %s", filepath.Join(dir, "kube-apiserver.log"))
}

// keepLog copies a log out of the temp dir when a run fails.
func keepLog(path string) {
	if data, err := os.ReadFile(path); err == nil {
		fmt.Fprintf(os.Stderr, "--- %s (last 2 KB)\n%s\n", path, data[max(0, len(data)-2048):])
	}
}
