package main

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"minik/proxy"
)

// proxyCommand runs the node proxy as its own process (one per node).
func proxyCommand() *cobra.Command {
	var (
		kubeconfigPath, clusterCIDR, serviceCIDR string
		nodePortAddresses                        []string
		opts                                     proxy.Options
	)
	host, _ := os.Hostname()
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Run the node proxy: program this node's nftables for Services",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if clusterCIDR != "" {
				p, err := netip.ParsePrefix(clusterCIDR)
				if err != nil || !p.Addr().Is4() {
					return fmt.Errorf("--cluster-cidr %q: want an IPv4 prefix such as 10.244.0.0/16", clusterCIDR)
				}
				opts.ClusterCIDR = p.Masked()
			}
			if serviceCIDR != "" {
				p, err := netip.ParsePrefix(serviceCIDR)
				if err != nil || !p.Addr().Is4() {
					return fmt.Errorf("--service-cluster-ip-range %q: want an IPv4 prefix such as 10.96.0.0/12", serviceCIDR)
				}
				opts.ServiceCIDR = p.Masked()
			}
			for _, s := range nodePortAddresses {
				a, err := netip.ParseAddr(s)
				if err != nil || !a.Is4() {
					return fmt.Errorf("--nodeport-addresses: %q is not an IPv4 address", s)
				}
				opts.NodeIPs = append(opts.NodeIPs, a)
			}
			c, err := clientFromKubeconfig(kubeconfigPath, "minik-proxy/"+opts.NodeName)
			if err != nil {
				return err
			}
			opts.Logger = slog.Default()
			return proxy.Run(cmd.Context(), proxy.RunConfig{Options: opts, Client: c})
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfigPath, "kubeconfig", "", "kubeconfig of user "+proxy.User+" (default $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&opts.NodeName, "node-name", strings.ToLower(host), "this node's name: its endpoints are the local ones of the Local traffic policies")
	f.StringVar(&clusterCIDR, "cluster-cidr", "10.244.0.0/16", "pod range: traffic to a ClusterIP from outside it is masqueraded (\"\": never)")
	f.StringVar(&serviceCIDR, "service-cluster-ip-range", "10.96.0.0/12", "the apiserver's Service range: traffic to an address of it that no Service has is dropped (\"\": not)")
	f.StringSliceVar(&nodePortAddresses, "nodeport-addresses", nil, "addresses that accept NodePort traffic (default: every local address but 127.0.0.0/8)")
	f.DurationVar(&opts.MinSyncPeriod, "min-sync-period", 10*time.Millisecond, "shortest time between two syncs; changes meanwhile are coalesced")
	return cmd
}
