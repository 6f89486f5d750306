package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"minik/client"
	"minik/client/kubeconfig"
	"minik/internal/hostip"
	"minik/internal/pki"
	"minik/internal/procmem"
	"minik/kubelet"
	"minik/kubelet/eviction"
	"minik/kubelet/runtime"
	ctdrt "minik/kubelet/runtime/containerd"
)

// kubeletOptions are the flags of `minik kubelet` (and what `minik up`
// passes for each node).
type kubeletOptions struct {
	nodeName, kubeconfig, rootDir     string
	containerdAddress, criSocket      string
	nodeIP, podCIDR, podManifestPath  string
	port                              int
	certFile, keyFile, clientCAFile   string
	nodeLabels, taints                []string
	maxPods                           int
	unsafeSysctls, insecureRegistries []string
	preloadImages                     []string
	evictionHard                      string
	evictionTransition                time.Duration
	logRotation                       *logRotation
	clusterDNS                        []string
	clusterDomain, resolvConf         string
}

// dnsFlags adds --cluster-dns and --cluster-domain, of `minik kubelet`
// and `minik up`, with minik's defaults (the kube-dns Service's address).
func dnsFlags(f *pflag.FlagSet, clusterDNS *[]string, clusterDomain *string) {
	f.StringSliceVar(clusterDNS, "cluster-dns", []string{kubelet.DefaultClusterDNS}, "DNS servers of ClusterFirst pods (\"\": none, and such pods fall back to Default)")
	f.StringVar(clusterDomain, "cluster-domain", kubelet.DefaultClusterDomain, "the cluster's DNS domain: pods search NS.svc.DOMAIN, svc.DOMAIN and DOMAIN")
}

// clusterDNSConfig is --cluster-dns as kubelet.Config wants it: an empty
// flag is an empty, non-nil slice (no cluster DNS).
func clusterDNSConfig(flag []string) ([]string, error) {
	out := []string{}
	for _, s := range flag {
		if s = strings.TrimSpace(s); s != "" {
			if net.ParseIP(s) == nil {
				return nil, fmt.Errorf("--cluster-dns %q: not an IP address", s)
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// logRotation is --container-log-max-size and --container-log-max-files,
// of `minik kubelet` (in-process runtime) and `minik cri`.
type logRotation struct {
	maxSize  string
	maxFiles int
}

func logRotationFlags(f *pflag.FlagSet) *logRotation {
	l := &logRotation{}
	f.StringVar(&l.maxSize, "container-log-max-size", "10Mi", "size at which a container's log file is rotated (the rotated files but the newest are gzipped)")
	f.IntVar(&l.maxFiles, "container-log-max-files", runtime.DefaultContainerLogMaxFiles, "log files kept per container, the current one included (at least 2)")
	return l
}

// apply sets the runtime's rotation, or says which flag is wrong.
func (l *logRotation) apply(cfg *ctdrt.Config) error {
	q, err := resource.ParseQuantity(l.maxSize)
	if err != nil || q.Value() <= 0 {
		return fmt.Errorf("--container-log-max-size %q: want a positive quantity such as 10Mi", l.maxSize)
	}
	if l.maxFiles < 2 {
		return fmt.Errorf("--container-log-max-files %d: must be at least 2", l.maxFiles)
	}
	cfg.ContainerLogMaxSize, cfg.ContainerLogMaxFiles = q.Value(), l.maxFiles
	return nil
}

func kubeletCommand() *cobra.Command {
	o := &kubeletOptions{}
	var metricsAddr string
	host, _ := os.Hostname()
	cmd := &cobra.Command{
		Use:   "kubelet",
		Short: "Run the node agent: registers a Node and runs its pods in containerd",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := serveMetrics(cmd.Context(), metricsAddr, kubelet.Collectors()...); err != nil {
				return err
			}
			return runKubelet(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	metricsFlag(f, &metricsAddr)
	f.StringVar(&o.nodeName, "node-name", strings.ToLower(host), "name of the Node to register")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of user system:node:NAME (default $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.rootDir, "root-dir", "", "pod directories and logs (default /var/lib/minik/kubelet/NODE)")
	f.StringVar(&o.containerdAddress, "containerd-address", "", "containerd socket (default "+ctdrt.DefaultAddress+" if it answers, else a containerd started under ROOT/containerd)")
	f.StringVar(&o.criSocket, "cri-socket", "", "reach the runtime through this mini-CRI socket (`minik cri`) instead of containerd in-process")
	f.StringVar(&o.nodeIP, "node-ip", "", "InternalIP of the node (default: the first non-loopback IPv4 address)")
	f.StringVar(&o.podCIDR, "pod-cidr", "10.88.0.0/16", "pod IP range used while node.spec.podCIDR is empty")
	f.StringVar(&o.podManifestPath, "pod-manifest-path", "", "directory of static pod manifests")
	f.IntVar(&o.port, "port", 10250, "HTTPS port of the logs endpoint (0: any free port)")
	f.StringVar(&o.certFile, "tls-cert-file", "", "serving certificate of the HTTPS endpoint (none: endpoint off)")
	f.StringVar(&o.keyFile, "tls-private-key-file", "", "serving key")
	f.StringVar(&o.clientCAFile, "client-ca-file", "", "CA that signs the apiserver's client certificate")
	f.StringSliceVar(&o.nodeLabels, "node-labels", nil, "labels to add to the Node (k=v,...)")
	f.StringSliceVar(&o.taints, "register-with-taints", nil, "taints of the Node (key=value:Effect,...)")
	f.IntVar(&o.maxPods, "max-pods", 110, "pod capacity of the node")
	f.StringSliceVar(&o.unsafeSysctls, "allowed-unsafe-sysctls", nil, "unsafe sysctls (or patterns like net.core.*) pods may set")
	f.StringSliceVar(&o.insecureRegistries, "insecure-registry", nil, "registries (host:port) to pull from over plain HTTP")
	f.StringSliceVar(&o.preloadImages, "preload-images", nil, "image archives (OCI or docker) to import at start")
	f.StringVar(&o.evictionHard, "eviction-hard", eviction.DefaultHard, "hard eviction thresholds, SIGNAL<QUANTITY or SIGNAL<PERCENT% (signals: memory.available, nodefs.available, nodefs.inodesFree, pid.available); \"\" for none")
	dnsFlags(f, &o.clusterDNS, &o.clusterDomain)
	f.StringVar(&o.resolvConf, "resolv-conf", kubelet.DefaultResolvConf, "host resolver file: Default pods get its resolvers, ClusterFirst pods its search domains (\"\": none)")
	f.DurationVar(&o.evictionTransition, "eviction-pressure-transition-period", eviction.DefaultPressureTransitionPeriod, "how long a pressure condition stays True after its threshold was last met")
	o.logRotation = logRotationFlags(f)
	return cmd
}

func parseLabels(in []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range in {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("label %q: want key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}

func parseTaints(in []string) ([]corev1.Taint, error) {
	var out []corev1.Taint
	for _, s := range in {
		kv, effect, ok := strings.Cut(s, ":")
		if !ok {
			return nil, fmt.Errorf("taint %q: want key[=value]:Effect", s)
		}
		k, v, _ := strings.Cut(kv, "=")
		switch corev1.TaintEffect(effect) {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			return nil, fmt.Errorf("taint %q: effect must be NoSchedule, PreferNoSchedule or NoExecute", s)
		}
		out = append(out, corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffect(effect)})
	}
	return out, nil
}

func runKubelet(ctx context.Context, o *kubeletOptions) error {
	if err := o.logRotation.apply(&ctdrt.Config{}); err != nil {
		return err // a wrong flag, said before anything starts
	}
	path := o.kubeconfig
	if path == "" {
		path = kubeconfig.DefaultPath()
	}
	kc, err := kubeconfig.Load(path)
	if err != nil {
		return err
	}
	c, err := client.NewFromKubeconfig(kc)
	if err != nil {
		return err
	}
	if o.rootDir == "" {
		o.rootDir = filepath.Join("/var/lib/minik/kubelet", o.nodeName)
	}
	thresholds, err := eviction.ParseThresholds(o.evictionHard)
	if err != nil {
		return fmt.Errorf("--eviction-hard: %w", err)
	}
	rt, stop, err := openRuntime(ctx, o)
	if err != nil {
		return err
	}
	defer stop()
	labels, err := parseLabels(o.nodeLabels)
	if err != nil {
		return err
	}
	taints, err := parseTaints(o.taints)
	if err != nil {
		return err
	}
	clusterDNS, err := clusterDNSConfig(o.clusterDNS)
	if err != nil {
		return err
	}
	cfg := kubelet.Config{
		EvictionHard: thresholds, EvictionPressureTransitionPeriod: o.evictionTransition,
		NodeName: o.nodeName, Client: c, Runtime: rt, RootDir: o.rootDir, NodeIP: o.nodeIP,
		NodeLabels: labels, RegisterWithTaints: taints, MaxPods: o.maxPods, PodCIDR: o.podCIDR,
		TLSCertFile: o.certFile, TLSKeyFile: o.keyFile, ClientCAFile: o.clientCAFile,
		PodManifestPath: o.podManifestPath, AllowedUnsafeSysctls: o.unsafeSysctls, InsecureRegistries: o.insecureRegistries,
		ReleaseIdleMemory: true,
		ClusterDNS:        clusterDNS, ClusterDomain: o.clusterDomain, ResolvConf: o.resolvConf,
	}
	if cfg.ResolvConf == "" {
		cfg.ResolvConf = kubelet.NoResolvConf
	}
	if o.nodeIP != "" || o.port != 10250 {
		ip := o.nodeIP
		if ip == "" {
			ip = "0.0.0.0"
		}
		cfg.ServingAddress = net.JoinHostPort(ip, fmt.Sprint(o.port))
	}
	cfg.Ready = make(chan struct{})
	go releaseStartupMemory(ctx, cfg.Ready)
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(kubelet.GCPercent)
	}
	return kubelet.Run(ctx, cfg)
}

// releaseStartupMemory gives back, once ready is closed, what start-up
// took and no longer needs: the pages of the multi-call binary it
// touched (every component's init, TLS set-up), of which a process that
// runs one small component (a kubelet, the DNS), or a whole cluster once
// its nodes are up (`minik up`), goes on using a small part, and the
// heap the first lists used and freed, which Go would otherwise return to
// the kernel only slowly.
func releaseStartupMemory(ctx context.Context, ready <-chan struct{}) {
	select {
	case <-ready:
	case <-ctx.Done():
		return
	}
	debug.FreeOSMemory()
	if n, err := procmem.DropStartupPages(); err != nil {
		slog.Warn("could not unmap the binary's start-up pages", "err", err)
	} else {
		slog.Debug("unmapped the binary's start-up pages", "advised_bytes", n)
	}
}

// openRuntime returns the kubelet's Runtime: a mini-CRI socket when
// --cri-socket is given, else containerd in-process.
func openRuntime(ctx context.Context, o *kubeletOptions) (runtime.Runtime, func(), error) {
	if o.criSocket != "" {
		r, err := runtime.Dial(o.criSocket)
		if err != nil {
			return nil, nil, err
		}
		return r, func() { r.Close() }, nil
	}
	addr := o.containerdAddress
	var daemon *ctdrt.Daemon
	if addr == "" {
		var err error
		addr, daemon, err = ctdrt.Ensure(ctx, filepath.Join(o.rootDir, "containerd"))
		if err != nil {
			return nil, nil, err
		}
	}
	ns := ctdrt.NamespaceFor(o.nodeName)
	if err := preload(ctx, addr, ns, o.preloadImages); err != nil {
		daemon.Stop()
		return nil, nil, err
	}
	cfg := ctdrt.Config{Address: addr, Namespace: ns, StateDir: filepath.Join(o.rootDir, "runtime"), PodCIDR: o.podCIDR}
	if err := o.logRotation.apply(&cfg); err != nil {
		daemon.Stop()
		return nil, nil, err
	}
	rt, err := ctdrt.New(ctx, cfg)
	if err != nil {
		daemon.Stop()
		return nil, nil, err
	}
	return rt, func() { rt.Close(); daemon.Stop() }, nil
}

func preload(ctx context.Context, addr, ns string, archives []string) error {
	for _, a := range archives {
		f, err := os.Open(a)
		if err != nil {
			return fmt.Errorf("preloading images: %w", err)
		}
		names, err := ctdrt.Import(ctx, addr, ns, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("preloading %s: %w", a, err)
		}
		slog.Debug("preloaded images", "namespace", ns, "images", names)
	}
	return nil
}

// NodesConfig is what `minik up` needs to run its kubelets in-process.
type NodesConfig struct {
	DataDir       string   // the cluster's data dir
	Server        string   // the apiserver's URL
	CA            *pki.CA  // the cluster CA
	PKIDir        string   // where certificates are kept
	Nodes         []string // node names, one kubelet each
	PreloadImages []string // image archives imported into every node
	ClusterDNS    []string // --cluster-dns of every kubelet
	ClusterDomain string   // --cluster-domain of every kubelet
	// Ready, if set, is closed once every node's kubelet is ready.
	Ready chan struct{}
}

// runNodes starts a containerd if needed (DefaultAddress when it answers,
// else one under DATA/containerd), then for each node a containerd
// runtime served over its mini-CRI socket and a kubelet speaking to it.
// It returns when ctx ends or a kubelet fails.
func runNodes(ctx context.Context, nc NodesConfig) error {
	addr, daemon, err := ctdrt.Ensure(ctx, filepath.Join(nc.DataDir, "containerd"))
	if err != nil {
		return err
	}
	defer daemon.Stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	caFile := filepath.Join(nc.PKIDir, "ca.crt")
	var wg sync.WaitGroup
	errc := make(chan error, len(nc.Nodes))
	var readies []chan struct{}
	// The nodes' InternalIP is the host's address, as a real node's is
	// routable: pods reach NodePorts and hostPorts on it (127.0.0.1 in a
	// pod is the pod itself). Each kubelet serves on it, on a port of its
	// own.
	nodeIP := hostip.PrimaryIPv4()
	for i, node := range nc.Nodes {
		root := filepath.Join(nc.DataDir, "kubelet", node)
		certFile, keyFile, err := nc.CA.EnsureClient(nc.PKIDir, "kubelet-"+node, pki.NodeUser(node), []string{pki.NodesGroup})
		if err != nil {
			return err
		}
		servingCert, servingKey, err := nc.CA.EnsureServing(nc.PKIDir, "kubelet-"+node+"-serving", []string{nodeIP, "127.0.0.1", node})
		if err != nil {
			return err
		}
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(nc.CA.CertPEM())
		c, err := client.New(client.Config{Host: nc.Server, UserAgent: "minik-kubelet/" + node,
			TLS: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
		if err != nil {
			return err
		}
		ns := ctdrt.NamespaceFor(node)
		if err := preload(ctx, addr, ns, nc.PreloadImages); err != nil {
			return err
		}
		podCIDR := fmt.Sprintf("10.244.%d.0/24", i)
		crt, err := ctdrt.New(ctx, ctdrt.Config{Address: addr, Namespace: ns, StateDir: filepath.Join(root, "runtime"), PodCIDR: podCIDR})
		if err != nil {
			return err
		}
		defer crt.Close()
		var rt runtime.Runtime = crt
		// The kubelet speaks the mini-CRI over a unix socket, as it does
		// to `minik cri`; a socket path must stay under 108 bytes.
		if sock := filepath.Join(root, "cri.sock"); len(absPath(sock)) < 100 {
			if err := os.MkdirAll(root, 0o755); err != nil {
				return err
			}
			_ = os.Remove(sock)
			l, err := net.Listen("unix", sock)
			if err != nil {
				return err
			}
			go func() { _ = runtime.Serve(ctx, l, crt) }()
			remote, err := runtime.Dial(sock)
			if err != nil {
				return err
			}
			defer remote.Close()
			rt = remote
		}
		cfg := kubelet.Config{
			NodeName: node, Client: c, Runtime: rt, RootDir: root, NodeIP: nodeIP, PodCIDR: podCIDR,
			ServingAddress: net.JoinHostPort(nodeIP, "0"), TLSCertFile: servingCert, TLSKeyFile: servingKey, ClientCAFile: caFile,
			PodManifestPath: filepath.Join(root, "manifests"), ReleaseIdleMemory: true,
			ClusterDNS: nc.ClusterDNS, ClusterDomain: nc.ClusterDomain, Ready: make(chan struct{}),
		}
		readies = append(readies, cfg.Ready)
		if err := os.MkdirAll(cfg.PodManifestPath, 0o755); err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := kubelet.Run(ctx, cfg); err != nil && !errors.Is(err, context.Canceled) {
				errc <- fmt.Errorf("kubelet %s: %w", node, err)
			}
		}()
	}
	if nc.Ready != nil {
		go func() {
			for _, r := range readies {
				select {
				case <-r:
				case <-ctx.Done():
					return
				}
			}
			close(nc.Ready)
		}()
	}
	var result error
	select {
	case <-ctx.Done():
	case result = <-errc:
	}
	cancel()
	wg.Wait()
	return result
}
