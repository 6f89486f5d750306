package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"minik/client"
	"minik/client/kubeconfig"
	"minik/scheduler"
)

// schedulerCommand runs the scheduler as its own process.
func schedulerCommand() *cobra.Command {
	var (
		kubeconfigPath string
		cfg            scheduler.Config
		seed           uint64
		metricsAddr    string
		qps            float64
		burst          int
	)
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Run the scheduler: bind pending pods to nodes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := clientFromKubeconfig(kubeconfigPath, "minik-scheduler", func(c *client.Config) { c.QPS, c.Burst = qps, burst })
			if err != nil {
				return err
			}
			cfg.Client, cfg.Seed, cfg.Logger = c, seed, slog.Default()
			if err := serveMetrics(cmd.Context(), metricsAddr, scheduler.Collectors()...); err != nil {
				return err
			}
			return scheduler.Run(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfigPath, "kubeconfig", "", "kubeconfig of the cluster (default $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&cfg.SchedulerName, "name", "default-scheduler", "schedule only pods whose spec.schedulerName is this")
	f.BoolVar(&cfg.LeaderElect, "leader-elect", false, "take a Lease first, so that only one replica schedules")
	f.StringVar(&cfg.LeaseNamespace, "leader-elect-namespace", "kube-system", "namespace of the Lease")
	f.DurationVar(&cfg.LeaseDuration, "leader-elect-lease-duration", 0, "how long a silent leader keeps the Lease (default 10s)")
	f.Int32Var(&cfg.PercentageOfNodesToScore, "percentage-of-nodes-to-score", 0, "share of nodes to find feasible before scoring; 0 is adaptive, 100 is all")
	metricsFlag(f, &metricsAddr)
	f.Uint64Var(&seed, "seed", 0, "seed for breaking ties between equal nodes (0: from the time)")
	// kube-scheduler's names (its defaults are 50 and 100; scheduler_perf runs it at 5000 and 5000).
	f.Float64Var(&qps, "kube-api-qps", 0, "requests per second to the apiserver (0: unlimited)")
	f.IntVar(&burst, "kube-api-burst", 0, "requests the client may send at once above --kube-api-qps")
	return cmd
}

// clientFromKubeconfig loads a kubeconfig (path, or the default location)
// and returns a client that names itself agent, with changes applied to
// its config.
func clientFromKubeconfig(path, agent string, changes ...func(*client.Config)) (*client.Client, error) {
	if path == "" {
		path = kubeconfig.DefaultPath()
	}
	kc, err := kubeconfig.Load(path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	cfg, err := client.ConfigFromKubeconfig(kc)
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = agent
	for _, change := range changes {
		change(&cfg)
	}
	return client.New(cfg)
}
