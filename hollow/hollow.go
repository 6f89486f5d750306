// Package hollow runs many kubelets in one process on the fake runtime, as
// Kubernetes' kubemark runs hollow nodes: each registers its Node, renews
// its Lease, runs its pods' lifecycle and reports their status, and its
// pods reach Running without a container. The control plane sees real
// nodes; only the containers are missing. See README.md.
package hollow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik/client"
	"minik/client/informer"
	"minik/internal/hostip"
	"minik/kubelet"
	"minik/kubelet/eviction"
	"minik/kubelet/objectcache"
	"minik/kubelet/runtime/fake"
)

// User is the identity of a process of hollow nodes that rbac.yaml binds
// to the ClusterRole minik:hollow-node: a kubelet's rights on every node
// (one connection and one pod watch serve them all). It is neither
// system:node:NAME nor in system:nodes, so the node authorizer and
// NodeRestriction, which keep each real kubelet to its own Node, Lease
// and pods, do not apply to it.
const User = "minik:hollow-nodes"

// Config configures a process of hollow nodes.
type Config struct {
	// Client is every node's connection to the apiserver (one HTTP/2
	// connection pool for all). Its user must be allowed what every
	// kubelet does, for every node: User's rights, or an admin's.
	Client *client.Client
	// Nodes is how many hollow nodes to run, named NodeName(Prefix, i).
	Nodes int
	// Prefix starts every node name (default "hollow-").
	Prefix string
	// RootDir holds the nodes' pod directories, RootDir/NODE (default: a
	// new directory under /dev/shm, removed at the end).
	RootDir string
	// MaxPods is each node's pod capacity (default 110).
	MaxPods int
	// Labels are added to every Node.
	Labels map[string]string
	// StartSpread is the time over which the nodes start, evenly, so that
	// their heartbeats (a Lease renewal every 10s, a status check every
	// 10s) are spread over the period instead of coming in step. Default
	// 10s, the Lease renewal interval.
	StartSpread time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Registered, if set, is closed once every node is registered and
	// watching its pods.
	Registered chan struct{}
}

// NodeName is the name of hollow node i.
func NodeName(prefix string, i int) string {
	return fmt.Sprintf("%s%04d", prefix, i)
}

func (c *Config) defaults() error {
	if c.Client == nil || c.Nodes <= 0 {
		return errors.New("hollow: Client and a positive Nodes are required")
	}
	if c.Prefix == "" {
		c.Prefix = "hollow-"
	}
	if c.MaxPods == 0 {
		c.MaxPods = 110
	}
	if c.StartSpread == 0 {
		c.StartSpread = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Run runs the hollow nodes until ctx ends, or until one of them fails.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.defaults(); err != nil {
		return err
	}
	if cfg.RootDir == "" {
		// A hollow node has no disk: its pod directories go to memory,
		// so that a benchmark measures the control plane rather than
		// this host's filesystem journal.
		dir, err := os.MkdirTemp("/dev/shm", "minik-hollow-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.RootDir = dir
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	errc := make(chan error, 1)
	fail := func(err error) {
		select {
		case errc <- err:
		default:
		}
		cancel()
	}
	shared := newSharedInformers(ctx, cfg.Client, cfg.Logger)
	for _, run := range shared.runs {
		wg.Go(func() {
			if err := run(ctx); err != nil {
				fail(err)
			}
		})
	}

	nodeIP := hostip.PrimaryIPv4()
	ready := make([]chan struct{}, cfg.Nodes)
	gap := cfg.StartSpread / time.Duration(cfg.Nodes)
	for i := range cfg.Nodes {
		name := NodeName(cfg.Prefix, i)
		ready[i] = make(chan struct{})
		kc := kubelet.Config{
			NodeName: name, Client: cfg.Client, Runtime: fake.New(fake.Config{}), RootDir: filepath.Join(cfg.RootDir, name),
			NodeIP: nodeIP, NodeLabels: cfg.Labels, MaxPods: cfg.MaxPods, Stats: idleStats{}, Shared: shared,
			NoVolumeMounts: true, // their pod dirs are in /dev/shm already
			// The kubelet's default: with Leases for heartbeats, an
			// unchanged status is sent every 5 minutes.
			NodeStatusReportInterval: 5 * time.Minute,
			Logger:                   cfg.Logger, Ready: ready[i],
		}
		wg.Go(func() {
			if err := kubelet.Run(ctx, kc); err != nil && ctx.Err() == nil {
				fail(fmt.Errorf("hollow node %s: %w", name, err))
			}
		})
		select {
		case <-ctx.Done():
		case <-time.After(gap):
		}
	}
	if cfg.Registered != nil {
		wg.Go(func() {
			for _, r := range ready {
				select {
				case <-r:
				case <-ctx.Done():
					return
				}
			}
			close(cfg.Registered)
		})
	}
	<-ctx.Done()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// sharedInformers are the process's one list-watch of pods, of nodes and
// of Services, split among its kubelets (kubelet.SharedInformers), and its
// one cache of the ConfigMaps their pods name: the apiserver holds three
// watches, and one per config map the pods use, for the process instead
// of that many per node.
type sharedInformers struct {
	pods       *informer.Split[corev1.Pod]
	nodes      *informer.Split[corev1.Node]
	services   *informer.Split[corev1.Service]
	configMaps *objectcache.Cache[corev1.ConfigMap]
	secrets    *objectcache.Cache[corev1.Secret]
	runs       []func(context.Context) error
}

var _ kubelet.SharedInformers = &sharedInformers{}

func newSharedInformers(ctx context.Context, c *client.Client, log *slog.Logger) *sharedInformers {
	// Only bound pods: a kubelet has nothing to do with a pending one,
	// which reaches it as an add once it is bound.
	pods := informer.New(c.Pods(), informer.Config{FieldSelector: "spec.nodeName!=", Logger: log})
	nodes := informer.New(c.Nodes(), informer.Config{Logger: log})
	services := informer.New(client.For[corev1.Service](c, client.Resource{Version: "v1", Resource: "services", Namespaced: true}),
		informer.Config{Logger: log})
	services.SetTransform(kubelet.TrimService)
	return &sharedInformers{
		pods:       informer.NewSplit(pods, func(p *corev1.Pod) string { return p.Spec.NodeName }),
		nodes:      informer.NewSplit(nodes, func(n *corev1.Node) string { return n.Name }),
		services:   informer.NewSplit(services, func(*corev1.Service) string { return "" }), // every node reads them all
		configMaps: objectcache.NewConfigMaps(ctx, c, nil, log),
		// The hollow identity may not enumerate Secrets (rbac.yaml): its
		// kubelets GET the ones their pods name.
		secrets: objectcache.NewUnwatched(c.Secrets()),
		runs:    []func(context.Context) error{pods.Run, nodes.Run, services.Run},
	}
}

func (s *sharedInformers) Pods(node string) *informer.Informer[corev1.Pod] { return s.pods.Child(node) }
func (s *sharedInformers) Node(node string) *informer.Informer[corev1.Node] {
	return s.nodes.Child(node)
}
func (s *sharedInformers) Services() *informer.Informer[corev1.Service]     { return s.services.Child("") }
func (s *sharedInformers) ConfigMaps() *objectcache.Cache[corev1.ConfigMap] { return s.configMaps }
func (s *sharedInformers) Secrets() *objectcache.Cache[corev1.Secret]       { return s.secrets }

// idleStats are a hollow node's eviction signals: none observed (zero
// capacities), so no threshold is ever met, and no disk or /proc is read
// for thousands of nodes every 10s.
type idleStats struct{}

func (idleStats) Summary(context.Context, bool) (*eviction.Summary, error) {
	return &eviction.Summary{}, nil
}
