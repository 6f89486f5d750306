package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"minik/dns"
	"minik/internal/hostip"
)

// dnsUser is the identity of the cluster DNS's client certificate.
const dnsUser = "system:kube-dns"

// dnsOptions are the flags `minik dns` and `minik up` share.
type dnsOptions struct {
	listen, clusterDomain, resolvConf, serviceCIDR string
	advertise, nodeName                            string
	ttl                                            uint32
	upstreamTimeout                                time.Duration
	register                                       bool
}

func (o *dnsOptions) config(logger *slog.Logger) (dns.Config, error) {
	serviceIP, err := dns.ServiceIP(o.serviceCIDR)
	if err != nil {
		return dns.Config{}, err
	}
	cfg := dns.Config{
		Listen: o.listen, Zone: o.clusterDomain, TTL: o.ttl, ResolvConf: o.resolvConf,
		UpstreamTimeout: o.upstreamTimeout, ServiceIP: serviceIP, Register: o.register,
		NodeName: o.nodeName, Logger: logger,
	}
	if o.listen == "" {
		cfg.Listen = net.JoinHostPort(primaryIPv4(), "53")
	}
	if o.advertise != "" {
		if cfg.AdvertiseAddress = net.ParseIP(o.advertise); cfg.AdvertiseAddress == nil {
			return dns.Config{}, fmt.Errorf("--advertise-address %q is not an IP address", o.advertise)
		}
	}
	return cfg, nil
}

// dnsCommand runs the cluster DNS as its own process.
func dnsCommand() *cobra.Command {
	o := &dnsOptions{}
	var kubeconfigPath string
	cmd := &cobra.Command{
		Use:   "dns",
		Short: "Run the cluster DNS: answer cluster.local from the Services and EndpointSlices, forward the rest",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := clientFromKubeconfig(kubeconfigPath, "minik-dns")
			if err != nil {
				return err
			}
			cfg, err := o.config(slog.Default())
			if err != nil {
				return err
			}
			cfg.Client = c
			cfg.Ready = make(chan struct{})
			go releaseStartupMemory(cmd.Context(), cfg.Ready)
			d, err := dns.New(cfg)
			if err != nil {
				return err
			}
			if os.Getenv("GOGC") == "" {
				debug.SetGCPercent(dns.GCPercent)
			}
			return d.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfigPath, "kubeconfig", "", "kubeconfig of the cluster (default $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.listen, "listen", "", "UDP and TCP address (default: the host's primary IPv4, port 53)")
	f.StringVar(&o.clusterDomain, "cluster-domain", "cluster.local", "the cluster's DNS domain")
	f.StringVar(&o.resolvConf, "upstream-resolv-conf", "/etc/resolv.conf", "resolv.conf whose nameservers answer names outside the cluster domain")
	f.StringVar(&o.serviceCIDR, "service-cluster-ip-range", dns.DefaultServiceCIDR, "Service IP range; kube-dns is its tenth address")
	f.Uint32Var(&o.ttl, "ttl", 30, "TTL of the cluster zone's records, in seconds")
	f.DurationVar(&o.upstreamTimeout, "upstream-timeout", 5*time.Second, "how long a forwarded question may take, every upstream tried")
	f.StringVar(&o.advertise, "advertise-address", "", "address in this server's kube-dns EndpointSlice (default: the listen IP)")
	f.StringVar(&o.nodeName, "node-name", "", "node this server runs on, written in its EndpointSlice")
	f.BoolVar(&o.register, "register", true, "create the kube-dns Service if missing and add this server to it as an endpoint")
	return cmd
}

// newUpDNS returns the DNS `minik up` runs, listening on listen ("" for
// the host's primary IPv4, port 53), with its own client certificate
// and the defaults of `minik dns`. Its endpoint is on the first node when
// kubelets run.
func newUpDNS(listen, serviceCIDR string, files *clusterFiles, dataDir string, kubelets bool, nodes []string) (*dns.DNS, error) {
	nodeName := ""
	if kubelets && len(nodes) > 0 {
		nodeName = nodes[0]
	}
	c, err := files.componentClient(filepath.Join(dataDir, "dns.kubeconfig"), "dns", dnsUser)
	if err != nil {
		return nil, err
	}
	o := &dnsOptions{listen: listen, clusterDomain: "cluster.local", resolvConf: "/etc/resolv.conf",
		serviceCIDR: serviceCIDR, ttl: 30, upstreamTimeout: 5 * time.Second, register: true, nodeName: nodeName}
	cfg, err := o.config(slog.Default())
	if err != nil {
		return nil, err
	}
	cfg.Client = c
	d, err := dns.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w (choose another address with --dns-listen, or run without DNS: --dns=false)", err)
	}
	return d, nil
}

// primaryIPv4 is the host's first global IPv4 address, where pods reach
// the DNS through the kube-dns ClusterIP; 127.0.0.1 if there is none. It
// is the address the kubelet picks by default for its node.
func primaryIPv4() string { return hostip.PrimaryIPv4() }
