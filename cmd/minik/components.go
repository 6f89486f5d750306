package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"minik/apiserver"
	"minik/internal/etcd"
)

// apiserverCommand runs the apiserver alone against an etcd cluster.
func apiserverCommand() *cobra.Command {
	var (
		etcdServers                 []string
		listen, cert, key, clientCA string
		kubeletCert, kubeletKey     string
		watchCacheSize              int
		compactionInterval          time.Duration
		auth                        = &authFlags{}
		svc                         serviceFlags
	)
	cmd := &cobra.Command{
		Use:   "apiserver",
		Short: "Run the API server against an etcd cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(etcdServers) == 0 {
				return errors.New("--etcd-servers is required (e.g. http://127.0.0.1:2379)")
			}
			for _, f := range []struct{ flag, v string }{{"--tls-cert-file", cert}, {"--tls-private-key-file", key}, {"--client-ca-file", clientCA}} {
				if f.v == "" {
					return fmt.Errorf("%s is required: minik serves HTTPS only (`minik up` writes these under DATA/pki)", f.flag)
				}
			}
			client, err := etcd.Dial(etcdServers)
			if err != nil {
				return err
			}
			defer client.Close()
			cfg := apiserver.Config{Etcd: client, Listen: listen, TLSCertFile: cert, TLSKeyFile: key,
				ClientCAFile: clientCA, KubeletClientCertFile: kubeletCert, KubeletClientKeyFile: kubeletKey,
				WatchCacheSize: watchCacheSize, CompactionInterval: compactionInterval,
				ServiceClusterIPRange: svc.clusterIPRange, ServiceNodePortRange: svc.nodePortRange, AdvertiseAddress: svc.advertiseAddress}
			auth.apply(&cfg)
			api, err := apiserver.New(cfg)
			if err != nil {
				return err
			}
			return api.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	auth.register(f)
	f.StringSliceVar(&etcdServers, "etcd-servers", nil, "etcd client URLs, comma separated")
	f.StringVar(&listen, "listen", "0.0.0.0:6443", "HTTPS address (host:port); all addresses by default, so pods reach it on the advertise address")
	f.StringVar(&cert, "tls-cert-file", "", "serving certificate (PEM)")
	f.StringVar(&key, "tls-private-key-file", "", "serving key (PEM)")
	f.StringVar(&clientCA, "client-ca-file", "", "CA that signs client certificates")
	f.StringVar(&kubeletCert, "kubelet-client-certificate", "", "client certificate for reaching kubelets")
	f.StringVar(&kubeletKey, "kubelet-client-key", "", "client key for reaching kubelets")
	f.IntVar(&watchCacheSize, "watch-cache-size", 10000, "events per resource a watch can resume from")
	f.DurationVar(&compactionInterval, "etcd-compaction-interval", 5*time.Minute, "how often to compact etcd history (negative: never)")
	svc.add(f)
	return cmd
}

// serviceFlags are the Service flags `minik apiserver` and `minik up` share.
type serviceFlags struct {
	clusterIPRange, nodePortRange, advertiseAddress string
}

func (s *serviceFlags) add(f *pflag.FlagSet) {
	f.StringVar(&s.clusterIPRange, "service-cluster-ip-range", apiserver.DefaultServiceClusterIPRange,
		"CIDR of Service cluster IPs; its first address is the kubernetes Service's")
	f.StringVar(&s.nodePortRange, "service-node-port-range", apiserver.DefaultServiceNodePortRange, "range of Service node ports (FROM-TO)")
	f.StringVar(&s.advertiseAddress, "advertise-address", "",
		"IP address the kubernetes Service's endpoints give for this apiserver (default: the host's primary IPv4 address)")
}

// etcdCommand runs one etcd member, so that `minik etcd` three times forms
// a cluster.
func etcdCommand() *cobra.Command {
	var mc etcd.MemberConfig
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Run one etcd member (embedded etcd server)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if mc.DataDir == "" {
				mc.DataDir = mc.Name + ".etcd"
			}
			m, err := etcd.StartMember(cmd.Context(), mc)
			if err != nil {
				return err
			}
			defer m.Close()
			slog.Info("etcd member ready", "name", mc.Name, "clients", strings.Join(mc.ListenClientURLs, ","))
			select {
			case <-cmd.Context().Done():
				return nil
			case err := <-m.Err():
				return err
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&mc.Name, "name", "default", "member name")
	f.StringVar(&mc.DataDir, "data-dir", "", "data directory (default NAME.etcd)")
	f.StringSliceVar(&mc.ListenClientURLs, "listen-client-urls", []string{"http://127.0.0.1:2379"}, "URLs to serve clients on")
	f.StringSliceVar(&mc.AdvertiseClientURLs, "advertise-client-urls", nil, "client URLs to advertise (default: the listen URLs)")
	f.StringSliceVar(&mc.ListenPeerURLs, "listen-peer-urls", []string{"http://127.0.0.1:2380"}, "URLs to serve peers on")
	f.StringSliceVar(&mc.InitialAdvertisePeerURLs, "initial-advertise-peer-urls", nil, "peer URLs to advertise (default: the listen URLs)")
	f.StringVar(&mc.InitialCluster, "initial-cluster", "", "name=peerURL,... of the initial members (default: this member alone)")
	f.StringVar(&mc.InitialClusterState, "initial-cluster-state", "new", "new or existing")
	return cmd
}
