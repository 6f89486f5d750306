package main

import (
	"os"
	"strings"

	"github.com/spf13/cobra"

	"minik/hostgw"
)

// routesCommand runs the host-gw route agent of one node: a route to
// every other node's podCIDR via its InternalIP.
func routesCommand() *cobra.Command {
	var kubeconfigPath, nodeName string
	host, _ := os.Hostname()
	cmd := &cobra.Command{
		Use:   "routes",
		Short: "Keep this host's routes to every other node's pods (host-gw), as system:kube-proxy",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := clientFromKubeconfig(kubeconfigPath, "minik-routes/"+nodeName)
			if err != nil {
				return err
			}
			return hostgw.Run(cmd.Context(), c, nodeName)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfigPath, "kubeconfig", "", "kubeconfig of an identity that may list and watch Nodes, e.g. system:kube-proxy (default $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&nodeName, "node-name", strings.ToLower(host), "name of this host's Node")
	return cmd
}
