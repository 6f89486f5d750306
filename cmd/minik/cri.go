package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"minik/kubelet/runtime"
	ctdrt "minik/kubelet/runtime/containerd"
)

// criCommand serves the containerd runtime over the mini-CRI socket, for
// a kubelet started with --cri-socket.
func criCommand() *cobra.Command {
	var listen, node, address, stateDir, podCIDR string
	var rotation *logRotation
	cmd := &cobra.Command{
		Use:   "cri",
		Short: "Serve the mini-CRI (RuntimeService, ImageService) over a unix socket, backed by containerd",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cfg := ctdrt.Config{Namespace: ctdrt.NamespaceFor(node), PodCIDR: podCIDR}
			if err := rotation.apply(&cfg); err != nil {
				return err
			}
			if stateDir == "" {
				stateDir = filepath.Join("/var/lib/minik/cri", node)
			}
			addr := address
			if addr == "" {
				a, daemon, err := ctdrt.Ensure(ctx, filepath.Join(stateDir, "containerd"))
				if err != nil {
					return err
				}
				defer daemon.Stop()
				addr = a
			}
			cfg.Address, cfg.StateDir = addr, filepath.Join(stateDir, "runtime")
			rt, err := ctdrt.New(ctx, cfg)
			if err != nil {
				return err
			}
			defer rt.Close()
			if err := os.MkdirAll(filepath.Dir(listen), 0o755); err != nil {
				return err
			}
			_ = os.Remove(listen)
			l, err := net.Listen("unix", listen)
			if err != nil {
				return fmt.Errorf("listening on %s: %w", listen, err)
			}
			slog.Info("mini-CRI serving", "socket", listen, "containerd", addr, "namespace", ctdrt.NamespaceFor(node))
			return runtime.Serve(ctx, l, rt)
		},
	}
	host, _ := os.Hostname()
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "/run/minik/cri.sock", "unix socket to serve on")
	f.StringVar(&node, "node-name", host, "node whose containers this serves (containerd namespace minik-NODE)")
	f.StringVar(&address, "containerd-address", "", "containerd socket (default: "+ctdrt.DefaultAddress+" if it answers, else one started under STATE/containerd)")
	f.StringVar(&stateDir, "state-dir", "", "the runtime's directory: a containerd it starts lives there, and its sandbox records, addresses and network namespaces in a tmpfs directory named after it under /run/minik (default /var/lib/minik/cri/NODE)")
	f.StringVar(&podCIDR, "pod-cidr", "10.88.0.0/16", "pod IP range until the kubelet sets the node's")
	rotation = logRotationFlags(f)
	return cmd
}
