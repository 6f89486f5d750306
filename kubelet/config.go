// Package kubelet runs the pods bound to one node through a Runtime and
// reports node and pod status to the apiserver. See README.md for the flow.
package kubelet

import (
	"context"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"minik/client"
	"minik/client/informer"
	"minik/kubelet/eviction"
	"minik/kubelet/objectcache"
	"minik/kubelet/runtime"
)

// GCPercent is the GOGC of a process that runs only a kubelet (`minik
// kubelet`): an idle kubelet's heap is mostly its caches and workers, and
// on an edge node the memory Go's default of 100 lets garbage take
// belongs to the pods. Measured with make bench-kubelet, two runs of each
// taken in turn: 15.8-16.0 MB of anonymous memory with 10 pods instead
// of 17.2 (14.6-15.3 instead of 16.3-16.5 with none), with the same
// kubelet CPU per pod started (15.1-15.9 ms against 15.5-16.5) and idle
// (0.38 and 0.57% against 0.38 and 0.57). An explicit GOGC wins.
const GCPercent = 50

// Config configures one kubelet. Required: NodeName, Client, Runtime,
// RootDir. Durations are wall-clock; zero values take the defaults stated.
type Config struct {
	// NodeName is the Node this kubelet registers and runs pods for.
	NodeName string
	// Client talks to the apiserver as system:node:NodeName.
	Client *client.Client
	// Runtime runs the containers (containerd, or the fake for hollow nodes).
	Runtime runtime.Runtime
	// RootDir holds pod directories (volumes, /etc/hosts) and container
	// logs: RootDir/pods/UID/... Required.
	RootDir string

	// NodeIP is the node's InternalIP and the pods' hostIP (default: the
	// host's first non-loopback IPv4 address, else 127.0.0.1).
	NodeIP string
	// NodeLabels are added to the Node at registration (--node-labels).
	NodeLabels map[string]string
	// RegisterWithTaints are set on the Node at registration.
	RegisterWithTaints []corev1.Taint
	// MaxPods is the node's pod capacity (default 110).
	MaxPods int
	// PodCIDR is the pod range used while node.spec.podCIDR is empty.
	PodCIDR string

	// ServingAddress is the host:port of the HTTPS endpoint (logs);
	// port 0 picks a free one (default NodeIP:10250). Empty TLSCertFile
	// disables the endpoint.
	ServingAddress string
	// TLSCertFile and TLSKeyFile are the kubelet's serving certificate.
	TLSCertFile, TLSKeyFile string
	// ClientCAFile verifies clients of the HTTPS endpoint (the apiserver).
	ClientCAFile string

	// ClusterDNS are the cluster DNS servers ClusterFirst pods use
	// (--cluster-dns). nil means DefaultClusterDNS (10.96.0.10, the
	// kube-dns Service); an empty, non-nil slice means none, and
	// ClusterFirst pods then fall back to Default, as in the kubelet.
	ClusterDNS []string
	// ClusterDomain is the cluster's DNS domain (--cluster-domain,
	// default cluster.local): the pods' search domains and FQDNs.
	ClusterDomain string
	// ResolvConf is the host resolver file (--resolv-conf, default
	// /etc/resolv.conf): Default pods get its resolvers, ClusterFirst
	// pods its search domains. NoResolvConf gives pods no host resolvers
	// (nameserver 127.0.0.1), as an empty --resolv-conf does.
	ResolvConf string

	// PodManifestPath holds static pod manifests (YAML or JSON), "" for none.
	PodManifestPath string
	// AllowedUnsafeSysctls are sysctls (or "prefix.*" patterns) pods may
	// set beyond the safe set.
	AllowedUnsafeSysctls []string
	// InsecureRegistries may be pulled from over plain HTTP ("host:port").
	InsecureRegistries []string

	// EvictionHard are the hard eviction thresholds (--eviction-hard). nil
	// means the kubelet's defaults (eviction.DefaultHard); an empty,
	// non-nil slice means none, as an empty --eviction-hard does.
	EvictionHard []eviction.Threshold
	// EvictionPressureTransitionPeriod is how long a pressure condition
	// stays True after its threshold was last met (default 5m).
	EvictionPressureTransitionPeriod time.Duration
	// EvictionMonitoringInterval is how often the thresholds are checked
	// (default 10s, as in the kubelet, where it is not configurable).
	EvictionMonitoringInterval time.Duration
	// Stats reads the node's signals and the pods' usage for eviction
	// (default: the host, the runtime's container stats and the pod
	// directories). Tests drive node pressure with a fake.
	Stats eviction.StatsProvider

	// LeaseDuration is the node Lease's duration (default 40s); it is
	// renewed every LeaseRenewInterval (default 10s).
	LeaseDuration      time.Duration
	LeaseRenewInterval time.Duration
	// NodeStatusReportInterval is the longest time between two NodeStatus
	// updates when nothing changes (default 1m).
	NodeStatusReportInterval time.Duration
	// RelistPeriod is how often the runtime is listed for container
	// changes while its event stream is up (default 30s): a safety net
	// for a lost event, so it bounds how late such a change is seen.
	RelistPeriod time.Duration
	// FallbackRelistPeriod is how often it is listed while there is no
	// event stream (default 1s): the stream broke, or the runtime has none.
	FallbackRelistPeriod time.Duration
	// ReleaseIdleMemory hands the garbage of a burst of container changes
	// back to the OS once the runtime has been quiet for 5s (a full GC).
	// Real kubelets set it; hollow ones, many to a process, do not.
	ReleaseIdleMemory bool
	// NoVolumeMounts keeps memory-backed volumes (secrets, projected,
	// emptyDir medium Memory) as plain directories instead of a tmpfs
	// mount each: for hollow nodes, whose root dir is in memory already
	// and which hold thousands of pods in one process (a mount per pod
	// slows every mount namespace the host makes). kubemark's hollow
	// kubelet uses a fake mounter the same way.
	NoVolumeMounts bool
	// Clock is the time source (default the real one).
	Clock clock.Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Ready, if set, is closed once the node is registered and pods are
	// being watched.
	Ready chan struct{}
	// Shared, if set, gives the kubelet its pods, its Node and the
	// Services from list-watches shared by every kubelet of the process
	// (hollow nodes) instead of three of its own. Default nil: its own.
	Shared SharedInformers
}

// SharedInformers hands each kubelet of a process child informers of
// list-watches they share (informer.Split): the hollow package's one
// watch of pods, of nodes and of Services for thousands of hollow nodes.
// Each call returns a new informer, which the kubelet runs.
type SharedInformers interface {
	Pods(nodeName string) *informer.Informer[corev1.Pod]
	Node(nodeName string) *informer.Informer[corev1.Node]
	Services() *informer.Informer[corev1.Service]
	// ConfigMaps and Secrets are caches every kubelet of the process
	// registers its pods in.
	ConfigMaps() *objectcache.Cache[corev1.ConfigMap]
	Secrets() *objectcache.Cache[corev1.Secret]
}

// objectCaches are the caches of the ConfigMaps and Secrets the pods name.
func (c *Config) objectCaches(ctx context.Context, log *slog.Logger) (*objectcache.Cache[corev1.ConfigMap], *objectcache.Cache[corev1.Secret]) {
	if c.Shared != nil {
		return c.Shared.ConfigMaps(), c.Shared.Secrets()
	}
	return objectcache.NewConfigMaps(ctx, c.Client, c.Clock, log), objectcache.NewSecrets(ctx, c.Client, c.Clock, log)
}

// podInformer is the informer of the pods bound to this node.
func (c *Config) podInformer(log *slog.Logger) *informer.Informer[corev1.Pod] {
	if c.Shared != nil {
		return c.Shared.Pods(c.NodeName)
	}
	return informer.New(c.Client.Pods(), informer.Config{FieldSelector: "spec.nodeName=" + c.NodeName, Logger: log})
}

// serviceSource is the source of the Services for the pods' environment.
func (c *Config) serviceSource(log *slog.Logger) *serviceSource {
	if c.Shared != nil {
		return sharedServiceSource(c.Shared.Services(), c.Clock, log)
	}
	return newServiceSource(c.Client, c.Clock, log)
}

// nodeInformer is the informer of this node's Node.
func (c *Config) nodeInformer(log *slog.Logger) *informer.Informer[corev1.Node] {
	if c.Shared != nil {
		return c.Shared.Node(c.NodeName)
	}
	return informer.New(c.Client.Nodes(), informer.Config{FieldSelector: "metadata.name=" + c.NodeName, Logger: log})
}

// NoResolvConf is Config.ResolvConf for no host resolver file (the
// kubelet's --resolv-conf="").
const NoResolvConf = "-"

func (c *Config) defaults() {
	if c.MaxPods == 0 {
		c.MaxPods = 110
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = 40 * time.Second
	}
	if c.LeaseRenewInterval == 0 {
		c.LeaseRenewInterval = 10 * time.Second
	}
	if c.NodeStatusReportInterval == 0 {
		c.NodeStatusReportInterval = time.Minute
	}
	if c.EvictionHard == nil {
		c.EvictionHard, _ = eviction.ParseThresholds(eviction.DefaultHard)
	}
	if c.EvictionMonitoringInterval == 0 {
		c.EvictionMonitoringInterval = 10 * time.Second
	}
	if c.RelistPeriod == 0 {
		c.RelistPeriod = 30 * time.Second
	}
	if c.FallbackRelistPeriod == 0 {
		c.FallbackRelistPeriod = time.Second
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.ClusterDNS == nil {
		c.ClusterDNS = []string{DefaultClusterDNS}
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = DefaultClusterDomain
	}
	if c.ResolvConf == "" {
		c.ResolvConf = DefaultResolvConf
	}
	if c.NodeIP == "" {
		c.NodeIP = defaultNodeIP()
	}
	if c.ServingAddress == "" {
		c.ServingAddress = c.NodeIP + ":10250"
	}
}
