package main

import (
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"minik/hollow"
)

// hollowCommand runs hollow nodes: many kubelets on the fake runtime in
// one process, as kubemark does, for scale tests of the control plane.
func hollowCommand() *cobra.Command {
	var (
		kubeconfigPath string
		cfg            hollow.Config
	)
	cmd := &cobra.Command{
		Use:   "hollow",
		Short: "Run N hollow nodes (kubelets on a fake runtime: pods reach Running without containers) in one process",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := clientFromKubeconfig(kubeconfigPath, "minik-hollow")
			if err != nil {
				return err
			}
			cfg.Client, cfg.Logger = c, slog.Default()
			return hollow.Run(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfigPath, "kubeconfig", "", "kubeconfig of the cluster (default $KUBECONFIG or ~/.kube/config); its user needs a kubelet's rights on every node (see hollow/README.md)")
	f.IntVar(&cfg.Nodes, "nodes", 100, "number of hollow nodes")
	f.StringVar(&cfg.Prefix, "prefix", "hollow-", "node names are this plus a 4-digit index")
	f.IntVar(&cfg.MaxPods, "max-pods", 110, "pod capacity of each node")
	f.StringToStringVar(&cfg.Labels, "node-labels", nil, "labels added to every node (k=v,...)")
	f.StringVar(&cfg.RootDir, "root-dir", "", "directory of the nodes' pod directories (default: a temporary one under /dev/shm)")
	f.DurationVar(&cfg.StartSpread, "start-spread", 10*time.Second, "start the nodes evenly over this time, so that their heartbeats are spread")
	return cmd
}
