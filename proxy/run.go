package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/knftables"

	"minik/client"
	"minik/client/informer"
)

// The resources the proxy watches.
var (
	Services       = client.Resource{Version: "v1", Resource: "services", Namespaced: true}
	EndpointSlices = client.Resource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices", Namespaced: true}
)

// RunConfig is what Run needs: the Proxier's options and an API client
// (user system:kube-proxy: it reads services and endpointslices).
type RunConfig struct {
	Options
	Client *client.Client
	// Ready, if set, is closed once the first full sync is in the kernel.
	Ready chan struct{}
	// SkipKernelSetup leaves out EnsureKernel (tests over a fake nft).
	SkipKernelSetup bool
}

// Run is the node proxy: it makes sure the kernel can do what the rules
// need (EnsureKernel), watches Services and EndpointSlices, and once both
// are listed writes the whole table, then keeps it in line with every
// change until ctx ends (then it returns nil). The table stays in the kernel when Run returns,
// so traffic keeps flowing; a restart rewrites it.
func Run(ctx context.Context, cfg RunConfig) error {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	if !cfg.SkipKernelSetup {
		if err := EnsureKernel(log); err != nil {
			return err
		}
	}
	if cfg.Conntrack == nil {
		ct, err := NewConntrack()
		if err != nil {
			log.Warn("stale UDP flows will not be cleared", "err", err)
		} else {
			cfg.Conntrack = ct
		}
	}
	p, err := New(cfg.Options)
	if err != nil {
		return err
	}
	svcs := informer.New(client.For[corev1.Service](cfg.Client, Services), informer.Config{Logger: log})
	svcs.AddHandler(informer.Handler[corev1.Service]{
		OnAdd: p.OnServiceAdd, OnUpdate: p.OnServiceUpdate, OnDelete: p.OnServiceDelete,
	})
	slices := informer.New(client.For[discoveryv1.EndpointSlice](cfg.Client, EndpointSlices), informer.Config{Logger: log})
	slices.AddHandler(informer.Handler[discoveryv1.EndpointSlice]{
		OnAdd: p.OnEndpointSliceAdd, OnUpdate: p.OnEndpointSliceUpdate, OnDelete: p.OnEndpointSliceDelete,
	})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 2)
	go func() { errc <- svcs.Run(ctx) }()
	go func() { errc <- slices.Run(ctx) }()
	for _, synced := range []<-chan struct{}{svcs.Synced(), slices.Synced()} {
		select {
		case <-synced:
		case err := <-errc:
			return err
		case <-ctx.Done():
			return nil
		}
	}
	p.SetInitialized()
	res, err := p.Sync(ctx)
	if err != nil {
		// Loop retries; the old table (if any) stays meanwhile.
		log.Error("first sync failed", "err", err)
	} else {
		log.Info("node proxy programmed nftables", "table", "ip "+TableName, "services", res.Services)
	}
	if cfg.Ready != nil {
		close(cfg.Ready)
	}
	p.Loop(ctx)
	return nil
}

// bridgeNFCall is the switch that makes bridged IPv4 traffic go through
// the ip family's hooks (br_netfilter).
const bridgeNFCall = "/proc/sys/net/bridge/bridge-nf-call-iptables"

// EnsureKernel sets up what the rules need and kube-proxy's docs require
// of a node: the nftables tool, and br_netfilter with
// bridge-nf-call-iptables=1, without which a pod reaching a Service whose
// endpoint is on the same bridge is switched by the bridge and never
// translated.
func EnsureKernel(log *slog.Logger) error {
	if _, err := exec.LookPath("nft"); err != nil {
		return fmt.Errorf("the node proxy needs nft (Debian package nftables): %w", err)
	}
	if _, err := os.Stat(bridgeNFCall); errors.Is(err, os.ErrNotExist) {
		if out, err := exec.Command("modprobe", "br_netfilter").CombinedOutput(); err != nil {
			log.Warn("could not load br_netfilter: pods on one bridge may not reach each other's Services",
				"err", err, "output", strings.TrimSpace(string(out)))
			return nil
		}
	}
	cur, err := os.ReadFile(bridgeNFCall)
	if err == nil && strings.TrimSpace(string(cur)) == "1" {
		return nil
	}
	if err := os.WriteFile(bridgeNFCall, []byte("1"), 0o644); err != nil {
		log.Warn("could not set bridge-nf-call-iptables: pods on one bridge may not reach each other's Services", "err", err)
		return nil
	}
	log.Info("set net.bridge.bridge-nf-call-iptables=1 for Services between pods on one bridge")
	return nil
}

// User is the API user the proxy (and the host-gw route agent) runs as;
// it reads services, endpointslices and nodes.
const User = "system:kube-proxy"

// DeleteTable deletes the proxy's table from the kernel, if present (for
// tests and resets: a stopped proxy leaves it, so that traffic flows).
func DeleteTable(ctx context.Context) error {
	nft, err := knftables.New(knftables.IPv4Family, TableName)
	if err != nil {
		return err
	}
	return Cleanup(ctx, nft)
}
