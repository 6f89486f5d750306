package main

import (
	"github.com/spf13/cobra"

	"minik/reset"
)

// resetCommand removes what minik nodes left on this host.
func resetCommand() *cobra.Command {
	var o reset.Options
	cmd := &cobra.Command{
		Use:   "reset",
		Short: "Remove what minik nodes left on this host: pods' containers, network namespaces, veths, bridges, iptables/nftables rules, routes, mounts (and --data-dir)",
		Long: `reset stops and removes, on this host, every container of every minik containerd
namespace (minik-*), the shims of those namespaces left without a container and
those (with their containers) whose containerd's directory is gone, unmounts what minik mounted under /run/minik, /var/lib/minik
and --data-dir (network namespace handles, tmpfs volumes), deletes the pods' veths
and the node bridges (mk…), the iptables rules commented "minik pods", the node
proxy's nftables table "ip minik-proxy" and the host-gw routes (proto 203), and with
--data-dir removes that directory. Run it on a host that should run another cluster;
a restart of the same cluster needs no reset (pods are adopted). It is idempotent.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return reset.Run(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.DataDir, "data-dir", "", "a data dir (minik up's, or a kubelet's root dir) to remove too; its containerd is cleaned first")
	f.StringSliceVar(&o.ContainerdAddresses, "containerd-address", nil, "more containerd sockets to clean (the system one at /run/containerd/containerd.sock is cleaned when it answers)")
	return cmd
}
