package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"minik/internal/pki"
)

// certsCommand issues (once) the certificates of a control plane that runs
// its pieces separately, in kubeadm's layout under --pki-dir.
func certsCommand() *cobra.Command {
	var pkiDir string
	cmd := &cobra.Command{
		Use:   "certs",
		Short: "Create the cluster CA, etcd's CA and the apiserver's etcd client certificate (kubeadm's layout)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := pki.EnsureCA(pkiDir); err != nil {
				return err
			}
			c, err := pki.EnsureAPIServerEtcdClient(pkiDir)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "--etcd-cafile %s --etcd-certfile %s --etcd-keyfile %s\n", c.CA, c.Cert, c.Key)
			return nil
		},
	}
	cmd.Flags().StringVar(&pkiDir, "pki-dir", ".minik/pki", "certificate dir")
	return cmd
}
