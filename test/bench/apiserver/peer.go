package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"minik/client"
	"minik/client/kubeconfig"
	"minik/test/bench/benchkit"
)

// upstream is the unmodified kube-apiserver (-peer, built from
// k8s.io/kubernetes at the version of k8s.io/api in go.mod by
// deploy/upstream-k8s.sh), measured with the same client and the same
// pods as minik: benchkit's control plane with it in place of minik
// apiserver (its own `minik etcd` member, the embedded etcd server minik
// up runs in its process; `minik certs cluster`'s certificates).
type upstream struct {
	cp  *benchkit.ControlPlane
	cfg client.Config
}

func (u *upstream) Name() string       { return "kube-apiserver" }
func (u *upstream) PID() int           { return u.cp.Procs["apiserver"].PID() }
func (u *upstream) CPU() time.Duration { return u.cp.Procs["apiserver"].CPU() }

// startUpstream starts etcd and kube-apiserver in dir and waits until the
// apiserver is ready.
func startUpstream(ctx context.Context, bin, peer, dir string) (*upstream, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	cp, err := benchkit.StartControlPlane(ctx, bin, dir, benchkit.ControlPlaneOptions{KubeAPIServer: peer})
	if err != nil {
		return nil, err
	}
	kc, err := kubeconfig.Load(cp.Admin)
	if err == nil {
		var cfg client.Config
		if cfg, err = client.ConfigFromKubeconfig(kc); err == nil {
			cfg.UserAgent = "minik-bench"
			return &upstream{cp: cp, cfg: cfg}, nil
		}
	}
	cp.Stop()
	return nil, err
}

// keepLog shows the end of a log from the temp dir when a run fails.
func keepLog(path string) {
	if data, err := os.ReadFile(path); err == nil {
		fmt.Fprintf(os.Stderr, "--- %s (last 2 KB)\n%s\n", path, data[max(0, len(data)-2048):])
	}
}
