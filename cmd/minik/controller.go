package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"minik/client"
	"minik/client/kubeconfig"
	"minik/controller"
	"minik/controller/framework"
	"minik/controller/nodelifecycle"
	"minik/controller/podautoscaler"
)

// controllerCommand runs the controller manager as its own process.
func controllerCommand() *cobra.Command {
	var (
		kubeconfigPath         string
		terminatedPodThreshold int
		// The eviction flags always set the policy, so that an explicit 0
		// is kept (a rate of 0 taints no node).
		eviction = nodelifecycle.DefaultEvictionConfig()
		// The HPA flags always set their fields, so that an explicit 0
		// is kept (any distance from the target scales; a scale-down is
		// not delayed; a new ready pod's CPU samples count at once).
		hpaTolerance         = 0.1
		hpaDownscaleDelay    = 5 * time.Minute
		hpaCPUInitialization = 5 * time.Minute
		hpaInitialReadiness  = 30 * time.Second
		cfg                  = controller.Config{Eviction: &eviction,
			HorizontalPodAutoscaler: podautoscaler.Config{Tolerance: &hpaTolerance, DownscaleStabilization: &hpaDownscaleDelay,
				CPUInitializationPeriod: &hpaCPUInitialization, InitialReadinessDelay: &hpaInitialReadiness}}
		rootCAFile  string
		metricsAddr string
		qps         float64
		burst       int
	)
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the controller manager (replicas, rollouts, node lifecycle, eviction, GC, jobs, daemonsets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path := kubeconfigPath
			if path == "" {
				path = kubeconfig.DefaultPath()
			}
			kc, err := kubeconfig.Load(path)
			if err != nil {
				return err
			}
			ccfg, err := client.ConfigFromKubeconfig(kc)
			if err != nil {
				return err
			}
			ccfg.UserAgent = "minik-controller"
			ccfg.QPS, ccfg.Burst = qps, burst
			c, err := client.New(ccfg)
			if err != nil {
				return err
			}
			cfg.Client = c
			if rootCAFile != "" {
				if cfg.RootCA, err = os.ReadFile(rootCAFile); err != nil {
					return fmt.Errorf("--root-ca-file: %w", err)
				}
			} else if r, err := kc.Current(); err == nil {
				// As kube-controller-manager: without --root-ca-file the
				// CA its kubeconfig trusts is the cluster's. Pods need
				// kube-root-ca.crt for their service-account volume.
				cfg.RootCA = r.Cluster.CertificateAuthorityData
			}
			if terminatedPodThreshold <= 0 {
				cfg.PodGC.TerminatedPodThreshold = -1 // as Kubernetes: 0 turns it off
			} else {
				cfg.PodGC.TerminatedPodThreshold = terminatedPodThreshold
			}
			if err := serveMetrics(cmd.Context(), metricsAddr, framework.Collectors()...); err != nil {
				return err
			}
			return controller.Run(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfigPath, "kubeconfig", "", "kubeconfig of the apiserver (default $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&rootCAFile, "root-ca-file", "", "CA bundle published in every namespace as the ConfigMap kube-root-ca.crt (default: the CA of --kubeconfig)")
	f.BoolVar(&cfg.LeaderElect, "leader-elect", false, "run only while holding the Lease kube-system/kube-controller-manager")
	f.StringVar(&cfg.Identity, "identity", "", "name of this instance in the Lease (default host_pid)")
	f.IntVar(&cfg.Workers, "workers", 4, "goroutines per controller")
	f.DurationVar(&cfg.NodeMonitorGracePeriod, "node-monitor-grace-period", 40e9, "how long a node's Lease may go unrenewed before it is marked Unknown")
	f.DurationVar(&cfg.NodeStartupGracePeriod, "node-startup-grace-period", 60e9, "the same for a node that never reported Ready")
	f.DurationVar(&cfg.NodeMonitorPeriod, "node-monitor-period", 5e9, "how often node health is checked")
	f.StringVar(&cfg.ClusterCIDR, "cluster-cidr", "10.244.0.0/16", "range the nodes' podCIDRs are cut from")
	f.IntVar(&cfg.NodeCIDRMaskSize, "node-cidr-mask-size", 24, "prefix length of each node's podCIDR")
	f.BoolVar(&cfg.DisableNodeIPAM, "disable-node-ipam", false, "do not assign podCIDRs to nodes")
	f.Float64Var(&eviction.Rate, "node-eviction-rate", eviction.Rate, "nodes per second, per zone, that get the NoExecute taint evicting their pods (0: none)")
	f.Float64Var(&eviction.SecondaryRate, "secondary-node-eviction-rate", eviction.SecondaryRate, "the same in a partially disrupted zone larger than --large-cluster-size-threshold")
	f.Float64Var(&eviction.UnhealthyZoneThreshold, "unhealthy-zone-threshold", eviction.UnhealthyZoneThreshold, "fraction of not-ready nodes (more than 2) that makes a zone partially disrupted")
	f.IntVar(&eviction.LargeClusterSizeThreshold, "large-cluster-size-threshold", eviction.LargeClusterSizeThreshold, "zone size up to which a partially disrupted zone gets no NoExecute taints")
	f.IntVar(&terminatedPodThreshold, "terminated-pod-gc-threshold", 12500, "ended (Succeeded or Failed) pods kept before the oldest are deleted (0: no limit)")
	f.DurationVar(&cfg.HorizontalPodAutoscaler.SyncPeriod, "horizontal-pod-autoscaler-sync-period", 15e9, "how often each HorizontalPodAutoscaler is reconciled")
	f.DurationVar(&hpaDownscaleDelay, "horizontal-pod-autoscaler-downscale-stabilization", hpaDownscaleDelay, "scale-down stabilization window of HorizontalPodAutoscalers that set none (0: none)")
	f.DurationVar(&hpaCPUInitialization, "horizontal-pod-autoscaler-cpu-initialization-period", hpaCPUInitialization, "period after a pod starts when its CPU samples may be skipped")
	f.DurationVar(&hpaInitialReadiness, "horizontal-pod-autoscaler-initial-readiness-delay", hpaInitialReadiness, "period after a pod starts during which a readiness change is taken as its initial readiness")
	f.Float64Var(&hpaTolerance, "horizontal-pod-autoscaler-tolerance", hpaTolerance, "usage ratio distance from 1.0 within which a HorizontalPodAutoscaler does not scale (0: any distance scales)")
	metricsFlag(f, &metricsAddr)
	f.BoolVar(&cfg.UseServiceAccountCredentials, "use-service-account-credentials", true,
		"run each controller as its own service account kube-system/<name> with the role system:controller:<name> (as kubeadm runs kube-controller-manager); false makes every controller act as --kubeconfig's user, which then needs all their rights")
	// kube-controller-manager's names (its defaults are 20 and 30; the
	// Kubernetes scalability jobs run it at 100 and 100). Each service
	// account's client, and the shared informers', has its own bucket.
	f.Float64Var(&qps, "kube-api-qps", 0, "requests per second to the apiserver, per controller service account (0: unlimited)")
	f.IntVar(&burst, "kube-api-burst", 0, "requests a controller may send at once above --kube-api-qps")
	f.StringSliceVar(&cfg.Controllers, "controllers", nil, "controllers to run (default all): "+strings.Join(controller.Names(), ", "))
	return cmd
}
