// Package controller is minik's controller manager: one process running
// every controller over shared list-watch caches, optionally behind a
// leader-election Lease. See README.md for the flow of one controller.
package controller

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"minik/client"
	"minik/client/leaderelection"
	"minik/client/record"
	"minik/controller/clusterroleaggregation"
	"minik/controller/cronjob"
	"minik/controller/daemonset"
	"minik/controller/deployment"
	"minik/controller/disruption"
	"minik/controller/endpoints"
	"minik/controller/endpointslice"
	"minik/controller/endpointslicemirroring"
	"minik/controller/framework"
	"minik/controller/garbagecollector"
	"minik/controller/job"
	"minik/controller/namespace"
	"minik/controller/nodeipam"
	"minik/controller/nodelifecycle"
	"minik/controller/podautoscaler"
	"minik/controller/podgc"
	"minik/controller/replicaset"
	"minik/controller/replication"
	"minik/controller/resourcequota"
	"minik/controller/serviceaccount"
	"minik/controller/statefulset"
	"minik/controller/tainteviction"
	"minik/controller/volume"
)

// Config configures the controller manager. Durations are wall-clock; zero
// fields take the defaults given (nil ones for pointers).
type Config struct {
	// Client talks to the apiserver. Required.
	Client *client.Client
	// LeaderElect makes the manager run only while it holds the Lease
	// kube-system/kube-controller-manager. Default false.
	LeaderElect bool
	// Identity names this instance in the Lease and events. Default: the
	// host name plus the process id.
	Identity string
	// Workers is the number of goroutines per controller. Default 4.
	Workers int
	// NodeMonitorGracePeriod is how long a node's Lease may go unrenewed
	// before the node is marked Unknown. Default 40s.
	NodeMonitorGracePeriod time.Duration
	// NodeStartupGracePeriod is the same for a node that never reported
	// Ready. Default 60s.
	NodeStartupGracePeriod time.Duration
	// NodeMonitorPeriod is how often node health is checked. Default 5s.
	NodeMonitorPeriod time.Duration
	// Eviction is how fast the NoExecute taints that evict the pods of
	// not-ready nodes come, per zone (--node-eviction-rate,
	// --secondary-node-eviction-rate, --unhealthy-zone-threshold,
	// --large-cluster-size-threshold). Its fields are taken as they are,
	// zero too: a rate of 0 taints no node. Default (nil):
	// nodelifecycle.DefaultEvictionConfig(), Kubernetes' defaults.
	Eviction *nodelifecycle.EvictionConfig
	// ClusterCIDR is the range node pod CIDRs are cut from. Default
	// 10.244.0.0/16.
	ClusterCIDR string
	// NodeCIDRMaskSize is the prefix length of each node's podCIDR.
	// Default 24.
	NodeCIDRMaskSize int
	// DisableNodeIPAM turns off the assignment of podCIDRs to nodes.
	// Default false: every node gets one.
	DisableNodeIPAM bool
	// RootCA is the cluster CA bundle (PEM) published in every namespace
	// as the ConfigMap kube-root-ca.crt (--root-ca-file). Default: none.
	RootCA []byte
	// MaxEndpointsPerSlice caps the endpoints of one EndpointSlice
	// (--max-endpoints-per-slice). Default 100.
	MaxEndpointsPerSlice int
	// PodGC is the pod garbage collector's policy (zero: Kubernetes'
	// timing, 20s passes, 40s quarantine, 12500 ended pods kept).
	PodGC podgc.Config
	// HorizontalPodAutoscaler is the HPA controller's timing and tolerance
	// (zero: Kubernetes' 15s sync period, 0.1 tolerance (nil Tolerance),
	// 5m downscale stabilization).
	HorizontalPodAutoscaler podautoscaler.Config
	// UseServiceAccountCredentials runs each controller as its own service
	// account, kube-system/<account>, with a token Client's identity gets
	// through the TokenRequest API (kube-controller-manager's
	// --use-service-account-credentials). Client then only feeds the
	// shared informers, the Lease and events. Default false: every
	// controller acts as Client.
	UseServiceAccountCredentials bool
	// Controllers lists the controllers to run; empty means all. Names are
	// the packages' Name constants.
	Controllers []string
	// Clock is the time source for policy (grace periods, tolerations,
	// deadlines). Default: the real clock.
	Clock clock.WithTicker
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (cfg *Config) defaults() error {
	if cfg.Client == nil {
		return fmt.Errorf("controller: Config.Client is required")
	}
	if cfg.Identity == "" {
		host, _ := os.Hostname()
		cfg.Identity = fmt.Sprintf("%s_%d", host, os.Getpid())
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.NodeMonitorGracePeriod <= 0 {
		cfg.NodeMonitorGracePeriod = 40 * time.Second
	}
	if cfg.NodeStartupGracePeriod <= 0 {
		cfg.NodeStartupGracePeriod = 60 * time.Second
	}
	if cfg.NodeMonitorPeriod <= 0 {
		cfg.NodeMonitorPeriod = 5 * time.Second
	}
	if cfg.Eviction == nil {
		eviction := nodelifecycle.DefaultEvictionConfig()
		cfg.Eviction = &eviction
	}
	if cfg.ClusterCIDR == "" {
		cfg.ClusterCIDR = "10.244.0.0/16"
	}
	if cfg.NodeCIDRMaskSize == 0 {
		cfg.NodeCIDRMaskSize = 24
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	for _, name := range cfg.Controllers {
		if name != "*" && !slices.Contains(Names(), name) {
			return fmt.Errorf("controller: unknown controller %q (known: %s)", name, strings.Join(Names(), ", "))
		}
	}
	return nil
}

// Names returns the names of every controller, in start order.
func Names() []string {
	out := make([]string, len(builders))
	for i, b := range builders {
		out[i] = b.name
	}
	return out
}

// Run runs the controllers until ctx ends (or, with LeaderElect, until
// leadership is lost, which returns an error so the process restarts).
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.defaults(); err != nil {
		return err
	}
	if !cfg.LeaderElect {
		return runControllers(ctx, cfg)
	}
	var runErr error
	err := leaderelection.Run(ctx, leaderelection.Config{
		Client: cfg.Client, Namespace: "kube-system", Name: "kube-controller-manager", Identity: cfg.Identity,
	}, func(ctx context.Context) {
		cfg.Logger.Info("became leader", "identity", cfg.Identity)
		runErr = runControllers(ctx, cfg)
	})
	if err != nil {
		return err
	}
	return runErr
}

// runnable is one started controller.
type runnable interface {
	Run(ctx context.Context, workers int)
}

func (cfg *Config) enabled(name string) bool {
	if len(cfg.Controllers) == 0 {
		return true
	}
	for _, c := range cfg.Controllers {
		if c == name || c == "*" {
			return true
		}
	}
	return false
}

func runControllers(ctx context.Context, cfg Config) error {
	log := cfg.Logger.With("component", "controller")
	inf := framework.NewInformers(cfg.Client, log)
	// The Service kinds are watched only if the apiserver serves them, as
	// kube-controller-manager starts only the controllers whose resources
	// discovery lists: an informer of an unserved resource never syncs.
	served := framework.ServedResources(ctx, cfg.Client, framework.ServicesResource, framework.EndpointsResource,
		framework.EndpointSlicesResource)
	if served[framework.ServicesResource] && served[framework.EndpointsResource] && served[framework.EndpointSlicesResource] {
		inf.AddServiceInformers()
	}
	rec := record.NewRecorder(cfg.Client, "controller-manager", cfg.Identity)
	accounts := newAccountClients(cfg.Client)

	var ctrls []runnable
	for _, b := range builders {
		if !cfg.enabled(b.name) || b.name == nodeipam.Name && cfg.DisableNodeIPAM {
			continue
		}
		d := deps{cfg: &cfg, client: cfg.Client, inf: inf, rec: rec.For(eventComponent(b.name, b.account)), log: log}
		if cfg.UseServiceAccountCredentials {
			d.client = accounts.client(b.account)
		}
		c, err := b.build(d)
		if err != nil {
			return fmt.Errorf("controller %s: %w", b.name, err)
		}
		if c == nil {
			log.Info("not starting controller: the apiserver does not serve its resources", "controller", b.name)
			continue
		}
		ctrls = append(ctrls, c)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { rec.Run(ctx) })
	synced := inf.Start(ctx, &wg)
	select {
	case <-synced:
	case <-ctx.Done():
		return nil
	}
	log.Info("caches synced; starting controllers", "count", len(ctrls))
	for _, c := range ctrls {
		wg.Go(func() { c.Run(ctx, cfg.Workers) })
	}
	<-ctx.Done()
	return nil
}

// eventComponent is the source a controller's events report, as
// upstream's controller reports it (`kubectl describe` shows it in From):
// mostly its service account's name.
func eventComponent(name, account string) string {
	switch name {
	case daemonset.Name:
		return "daemonset-controller"
	case endpointslice.Name:
		return "endpoint-slice-controller"
	case endpointslicemirroring.Name:
		return "endpoint-slice-mirroring-controller"
	case nodeipam.Name:
		return "cidrAllocator"
	case disruption.Name:
		return "controllermanager"
	case volume.Name:
		return "persistentvolume-controller"
	}
	return account
}

// deps is what a controller may be built from.
type deps struct {
	cfg    *Config
	client *client.Client // the controller's own: its service account's, or cfg.Client
	inf    *framework.Informers
	rec    *record.Recorder
	log    *slog.Logger
}

// builders lists every controller: the one registry of them.
var builders = []struct {
	name    string
	account string // its service account in kube-system (and ClusterRole system:controller:<account>)
	build   func(d deps) (runnable, error)
}{
	{garbagecollector.Name, "generic-garbage-collector", func(d deps) (runnable, error) { return garbagecollector.New(d.client, d.inf, d.log), nil }},
	{namespace.Name, "namespace-controller", func(d deps) (runnable, error) { return namespace.New(d.client, d.inf, d.cfg.Clock, d.log), nil }},
	{serviceaccount.Name, "service-account-controller", func(d deps) (runnable, error) {
		return serviceaccount.New(d.client, d.inf, d.cfg.RootCA, d.log), nil
	}},
	{clusterroleaggregation.Name, "clusterrole-aggregation-controller", func(d deps) (runnable, error) {
		return clusterroleaggregation.New(d.client, d.inf, d.log), nil
	}},
	{replicaset.Name, "replicaset-controller", func(d deps) (runnable, error) {
		return replicaset.NewReplicaSets(d.client, d.inf, d.rec, d.cfg.Clock, d.log), nil
	}},
	{replication.Name, "replication-controller", func(d deps) (runnable, error) {
		return replication.New(d.client, d.inf, d.rec, d.cfg.Clock, d.log), nil
	}},
	{deployment.Name, "deployment-controller", func(d deps) (runnable, error) {
		return deployment.New(d.client, d.inf, d.rec, d.cfg.Clock, d.log), nil
	}},
	{nodeipam.Name, "node-controller", func(d deps) (runnable, error) {
		return nodeipam.New(d.client, d.inf, d.rec, d.cfg.ClusterCIDR, d.cfg.NodeCIDRMaskSize, d.log)
	}},
	{nodelifecycle.Name, "node-controller", func(d deps) (runnable, error) {
		return nodelifecycle.New(d.client, d.inf, d.rec, d.cfg.Clock,
			nodelifecycle.Config{GracePeriod: d.cfg.NodeMonitorGracePeriod, StartupGracePeriod: d.cfg.NodeStartupGracePeriod,
				MonitorPeriod: d.cfg.NodeMonitorPeriod, Eviction: *d.cfg.Eviction},
			d.log), nil
	}},
	{tainteviction.Name, "taint-eviction-controller", func(d deps) (runnable, error) {
		return tainteviction.New(d.client, d.inf, d.rec, d.cfg.Clock, d.log), nil
	}},
	{disruption.Name, "disruption-controller", func(d deps) (runnable, error) {
		return disruption.New(d.client, d.inf, d.rec, d.cfg.Clock, d.log), nil
	}},
	{daemonset.Name, "daemon-set-controller", func(d deps) (runnable, error) {
		return daemonset.New(d.client, d.inf, d.rec, d.cfg.Clock, d.log), nil
	}},
	{job.Name, "job-controller", func(d deps) (runnable, error) { return job.New(d.client, d.inf, d.rec, d.cfg.Clock, d.log), nil }},
	{cronjob.Name, "cronjob-controller", func(d deps) (runnable, error) {
		return cronjob.New(d.client, d.inf, d.rec, d.cfg.Clock, d.log), nil
	}},
	{statefulset.Name, "statefulset-controller", func(d deps) (runnable, error) {
		return statefulset.New(d.client, d.inf, d.rec, d.cfg.Clock, d.log), nil
	}},
	{endpointslice.Name, "endpointslice-controller", func(d deps) (runnable, error) {
		if d.inf.Services == nil {
			return nil, nil
		}
		return endpointslice.New(d.client, d.inf, d.rec, d.cfg.MaxEndpointsPerSlice, d.log), nil
	}},
	{endpoints.Name, "endpoint-controller", func(d deps) (runnable, error) {
		if d.inf.Services == nil {
			return nil, nil
		}
		return endpoints.New(d.client, d.inf, d.rec, d.log), nil
	}},
	{endpointslicemirroring.Name, "endpointslicemirroring-controller", func(d deps) (runnable, error) {
		if d.inf.Services == nil {
			return nil, nil
		}
		return endpointslicemirroring.New(d.client, d.inf, d.rec, d.log), nil
	}},
	{podgc.Name, "pod-garbage-collector", func(d deps) (runnable, error) {
		return podgc.New(d.client, d.inf, d.cfg.Clock, d.cfg.PodGC, d.log), nil
	}},
	{resourcequota.Name, "resourcequota-controller", func(d deps) (runnable, error) { return resourcequota.New(d.client, d.inf, d.cfg.Clock, d.log), nil }},
	{volume.Name, "persistent-volume-binder", func(d deps) (runnable, error) { return volume.New(d.client, d.inf, d.rec, d.log), nil }},
	{podautoscaler.Name, "horizontal-pod-autoscaler", func(d deps) (runnable, error) {
		return podautoscaler.New(d.client, d.inf, d.rec, d.cfg.Clock, d.cfg.HorizontalPodAutoscaler, d.log), nil
	}},
}
