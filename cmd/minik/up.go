package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"minik/apiserver"
	"minik/client"
	"minik/client/kubeconfig"
	"minik/controller"
	"minik/controller/framework"
	"minik/controller/podautoscaler"
	"minik/dns"
	"minik/internal/etcd"
	"minik/internal/metrics"
	"minik/internal/pki"
	"minik/kubelet"
	"minik/proxy"
	"minik/scheduler"
)

// upOptions are the flags of `minik up`.
type upOptions struct {
	dataDir            string
	listen             string
	nodes              []string
	kubelet            bool
	scheduler          bool
	controller         bool
	watchCacheSize     int
	compactionInterval time.Duration
	eventTTL           time.Duration
	preloadImages      []string
	auth               *authFlags
	clusterDNS         []string
	clusterDomain      string
	dns                bool
	dnsListen          string
	hpaSyncPeriod      time.Duration
	proxy              bool
	service            serviceFlags
	metricsAddr        string
	uiListen           string
}

func upCommand() *cobra.Command {
	o := &upOptions{}
	host, _ := os.Hostname()
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a whole cluster in this process: embedded etcd, apiserver, scheduler, controller, kubelets, node proxy, cluster DNS (and the live view when asked)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("dns") {
				o.dns = o.kubelet // by default the DNS comes with the pods that use it
			}
			if !cmd.Flags().Changed("cluster-dns") {
				// Pods ask the kube-dns Service of the cluster's own range.
				ip, err := dns.ServiceIP(o.service.clusterIPRange)
				if err != nil {
					return fmt.Errorf("--service-cluster-ip-range: %w", err)
				}
				o.clusterDNS = []string{ip.String()}
			}
			return runUp(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dataDir, "data-dir", ".minik", "directory for etcd data, certificates and kubeconfigs")
	f.StringVar(&o.listen, "listen", "0.0.0.0:6443", "HTTPS address of the apiserver (host:port); all addresses by default, so pods reach it on the advertise address (kubeconfigs use 127.0.0.1)")
	f.StringSliceVar(&o.nodes, "nodes", []string{strings.ToLower(host)}, "names of the nodes to run a kubelet for")
	f.BoolVar(&o.kubelet, "kubelet", true, "run the kubelets (false: control plane only)")
	f.BoolVar(&o.scheduler, "scheduler", true, "run the scheduler")
	f.StringVar(&o.uiListen, "ui-listen", "", "serve the live view over HTTPS here (the cluster CA signs its certificate; a one-time login link is printed), e.g. 127.0.0.1:8443; empty: off")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", "", "also serve the process's metrics (every component's; the apiserver serves them at /metrics) at http://ADDRESS/metrics, e.g. 127.0.0.1:10249")
	f.BoolVar(&o.controller, "controller", true, "run the controller manager")
	f.IntVar(&o.watchCacheSize, "watch-cache-size", 10000, "events per resource a watch can resume from")
	f.DurationVar(&o.compactionInterval, "etcd-compaction-interval", 5*time.Minute, "how often to compact etcd history (negative: never)")
	f.DurationVar(&o.eventTTL, "event-ttl", apiserver.DefaultEventTTL, "how long to keep events after their last write")
	f.BoolVar(&o.proxy, "proxy", true, "with the kubelets, run the node proxy (Services in this host's nftables)")
	f.StringSliceVar(&o.preloadImages, "preload-images", nil, "image archives (OCI or docker) to import into every node, e.g. bin/images/busybox.tar")
	dnsFlags(f, &o.clusterDNS, &o.clusterDomain)
	o.auth = addAuthFlags(f)
	f.BoolVar(&o.dns, "dns", false, "run the cluster DNS (default: when the kubelets run)")
	f.StringVar(&o.dnsListen, "dns-listen", "", "UDP and TCP address of the cluster DNS (default: the host's primary IPv4, port 53)")
	f.DurationVar(&o.hpaSyncPeriod, "horizontal-pod-autoscaler-sync-period", 15*time.Second, "how often each HorizontalPodAutoscaler is reconciled")
	o.service.add(f)
	return cmd
}

// clusterFiles are the certificates and kubeconfigs of one data dir.
type clusterFiles struct {
	ca                      *pki.CA
	pkiDir                  string
	servingCert, servingKey string
	kubeletCert, kubeletKey string
	saKey                   string // signs service-account tokens
	server                  string
}

// preparePKI creates (once) the CA, the serving certificate and the
// kubeconfigs, and returns their locations. The serving certificate also
// names extraHosts (the advertise address, the kubernetes Service's IP and
// names); a certificate missing one is reissued.
func preparePKI(dataDir, listen string, extraHosts []string) (*clusterFiles, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %w", listen, err)
	}
	pkiDir := filepath.Join(dataDir, "pki")
	ca, err := pki.EnsureCA(pkiDir)
	if err != nil {
		return nil, err
	}
	hostname, _ := os.Hostname()
	hosts := append([]string{"localhost", "127.0.0.1", "::1", hostname}, extraHosts...)
	if host != "" && host != "0.0.0.0" && host != "::" {
		hosts = append(hosts, host)
	}
	if host == "0.0.0.0" || host == "::" || host == "" {
		// Listening everywhere: the serving cert must name every local address.
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok {
					hosts = append(hosts, ipn.IP.String())
				}
			}
		}
		host = "127.0.0.1"
	}
	f := &clusterFiles{ca: ca, pkiDir: pkiDir, server: "https://" + net.JoinHostPort(host, port)}
	if f.servingCert, f.servingKey, err = ca.EnsureServing(pkiDir, "apiserver", hosts); err != nil {
		return nil, err
	}
	if f.kubeletCert, f.kubeletKey, err = ca.EnsureClient(pkiDir, "apiserver-kubelet-client", pki.KubeletClientUser, nil); err != nil {
		return nil, err
	}
	if f.saKey, err = pki.EnsureServiceAccountKey(pkiDir); err != nil {
		return nil, err
	}
	return f, nil
}

// writeKubeconfig issues (once) a client certificate for user and writes
// a self-contained kubeconfig to path.
func (f *clusterFiles) writeKubeconfig(path, name, user string, groups []string) error {
	certFile, keyFile, err := f.ca.EnsureClient(f.pkiDir, name, user, groups)
	if err != nil {
		return err
	}
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return err
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return err
	}
	return kubeconfig.Write(path, f.server, f.ca.CertPEM(), certPEM, keyPEM, user)
}

// componentClient writes a kubeconfig for a control-plane component and
// returns a client that uses it.
func (f *clusterFiles) componentClient(path, name, user string) (*client.Client, error) {
	if err := f.writeKubeconfig(path, name, user, nil); err != nil {
		return nil, err
	}
	kc, err := kubeconfig.Load(path)
	if err != nil {
		return nil, err
	}
	return client.NewFromKubeconfig(kc)
}

func runUp(ctx context.Context, o *upOptions) error {
	clusterDNS, err := clusterDNSConfig(o.clusterDNS)
	if err != nil {
		return err
	}
	dataDir, err := filepath.Abs(o.dataDir) // sockets under it need absolute paths
	if err != nil {
		return err
	}
	o.dataDir = dataDir
	if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
		return err
	}
	if o.service.advertiseAddress == "" {
		o.service.advertiseAddress = apiserver.DefaultAdvertiseAddress()
	}
	serviceIP, err := apiserver.KubernetesServiceIP(o.service.clusterIPRange)
	if err != nil {
		return fmt.Errorf("--service-cluster-ip-range: %w", err)
	}
	extraHosts := append([]string{o.service.advertiseAddress, serviceIP}, apiserver.KubernetesServiceNames...)
	files, err := preparePKI(o.dataDir, o.listen, extraHosts)
	if err != nil {
		return err
	}
	adminKubeconfig := filepath.Join(o.dataDir, "admin.kubeconfig")
	if err := files.writeKubeconfig(adminKubeconfig, "admin", pki.AdminUser, []string{pki.MastersGroup}); err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	member, etcdClient, err := etcd.StartEmbedded(ctx, o.dataDir)
	if err != nil {
		return err
	}
	defer member.Close()

	apiCfg := apiserver.Config{
		Etcd: etcdClient, Listen: o.listen,
		TLSCertFile: files.servingCert, TLSKeyFile: files.servingKey, ClientCAFile: filepath.Join(files.pkiDir, "ca.crt"),
		KubeletClientCertFile: files.kubeletCert, KubeletClientKeyFile: files.kubeletKey,
		WatchCacheSize: o.watchCacheSize, CompactionInterval: o.compactionInterval, EventTTL: o.eventTTL,
		ServiceAccountSigningKeyFile: files.saKey,
		ServiceClusterIPRange:        o.service.clusterIPRange, ServiceNodePortRange: o.service.nodePortRange,
		AdvertiseAddress: o.service.advertiseAddress,
		ExtraMetrics:     metrics.EmbeddedEtcd(),
	}
	o.auth.apply(&apiCfg)
	api, err := apiserver.New(apiCfg)
	if err != nil {
		return err
	}
	// One registry for the process: the apiserver's, which serves every
	// component of `up` at /metrics, with the embedded etcd's metrics.
	api.Registry().MustRegister(append(append(scheduler.Collectors(), framework.Collectors()...), kubelet.Collectors()...)...)
	if _, err := metrics.Serve(ctx, o.metricsAddr, api.Gatherer()); err != nil {
		return fmt.Errorf("--metrics-bind-address: %w", err)
	}
	// The components stop before the apiserver they talk to, as a cluster
	// is taken down: their last calls (the DNS server removing its
	// endpoint, a kubelet's last status) still get an answer. So the
	// apiserver's context ends only once they have returned.
	apiCtx, stopAPI := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAPI()
	var wg, apiWG sync.WaitGroup
	errc := make(chan error, 8)
	start := func(wg *sync.WaitGroup, ctx context.Context, name string, fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil && !errors.Is(err, context.Canceled) {
				errc <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	run := func(name string, fn func(context.Context) error) { start(&wg, ctx, name, fn) }
	start(&apiWG, apiCtx, "apiserver", api.Run)
	select {
	case <-api.Ready():
	case err := <-errc:
		return err
	case <-ctx.Done():
		return nil
	}
	if o.scheduler {
		c, err := files.componentClient(filepath.Join(o.dataDir, "scheduler.kubeconfig"), "scheduler", pki.SchedulerUser)
		if err != nil {
			return err
		}
		run("scheduler", func(ctx context.Context) error { return scheduler.Run(ctx, scheduler.Config{Client: c}) })
	}
	if o.controller {
		c, err := files.componentClient(filepath.Join(o.dataDir, "controller.kubeconfig"), "controller", pki.ControllerUser)
		if err != nil {
			return err
		}
		run("controller", func(ctx context.Context) error {
			return controller.Run(ctx, controller.Config{Client: c, RootCA: files.ca.CertPEM(), UseServiceAccountCredentials: true,
				HorizontalPodAutoscaler: podautoscaler.Config{SyncPeriod: o.hpaSyncPeriod}})
		})
	}
	if o.dns {
		d, err := newUpDNS(o.dnsListen, o.service.clusterIPRange, files, o.dataDir, o.kubelet, o.nodes)
		if err != nil {
			return err
		}
		run("dns", d.Run)
	}
	started := make(chan struct{}) // the nodes are ready, or there are none
	if o.kubelet {
		run("kubelets", func(ctx context.Context) error {
			return runNodes(ctx, NodesConfig{DataDir: o.dataDir, Server: files.server, CA: files.ca, PKIDir: files.pkiDir,
				Nodes: o.nodes, PreloadImages: o.preloadImages,
				ClusterDNS: clusterDNS, ClusterDomain: o.clusterDomain, Ready: started})
		})
	} else {
		close(started)
	}
	go releaseStartupMemory(ctx, started)
	if o.kubelet && o.proxy {
		c, err := files.componentClient(filepath.Join(o.dataDir, "proxy.kubeconfig"), "kube-proxy", proxy.User)
		if err != nil {
			return err
		}
		// One proxy for the host: every node of `up` shares its network.
		serviceCIDR, err := netip.ParsePrefix(o.service.clusterIPRange) // validated by the apiserver's own check above
		if err != nil {
			return fmt.Errorf("--service-cluster-ip-range: %w", err)
		}
		cfg := proxy.Options{Config: proxy.Config{NodeName: o.nodes[0], OtherLocalNodes: o.nodes[1:],
			ClusterCIDR: netip.MustParsePrefix("10.244.0.0/16"), // the nodes' podCIDRs, see runNodes
			ServiceCIDR: serviceCIDR.Masked()}}
		run("proxy", func(ctx context.Context) error { return proxy.Run(ctx, proxy.RunConfig{Options: cfg, Client: c}) })
	}
	if o.uiListen != "" {
		if err := startUpUI(ctx, o.uiListen, o.dataDir, files, run); err != nil {
			return fmt.Errorf("--ui-listen: %w", err)
		}
	}
	slog.Info("cluster is up", "kubeconfig", adminKubeconfig, "hint", "export KUBECONFIG="+absPath(adminKubeconfig))

	select {
	case <-ctx.Done():
		slog.Info("shutting down")
	case err = <-errc:
		slog.Error("component failed; shutting down", "err", err)
	case err = <-member.Err():
		slog.Error("etcd failed; shutting down", "err", err)
	}
	cancel()
	wg.Wait()
	stopAPI()
	apiWG.Wait()
	return err
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
