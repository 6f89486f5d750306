package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"minik/apiserver"
	"minik/internal/etcd"
	"minik/internal/pki"
)

// apiserverCommand runs the apiserver alone against an etcd cluster.
func apiserverCommand() *cobra.Command {
	var (
		etcdServers                 []string
		listen, cert, key, clientCA string
		kubeletCert, kubeletKey     string
		watchCacheSize              int
		compactionInterval          time.Duration
		eventTTL                    time.Duration
		auth                        = &authFlags{}
		svc                         serviceFlags
		etcdTLS                     etcd.ClientTLS
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
			client, err := etcd.DialTLS(etcdServers, etcdTLS)
			if err != nil {
				return err
			}
			defer client.Close()
			cfg := apiserver.Config{Etcd: client, Listen: listen, TLSCertFile: cert, TLSKeyFile: key,
				ClientCAFile: clientCA, KubeletClientCertFile: kubeletCert, KubeletClientKeyFile: kubeletKey,
				WatchCacheSize: watchCacheSize, CompactionInterval: compactionInterval, EventTTL: eventTTL,
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
	f.StringVar(&etcdTLS.CAFile, "etcd-cafile", "", "CA that signed the etcd members' certificates (kubeadm: pki/etcd/ca.crt)")
	f.StringVar(&etcdTLS.CertFile, "etcd-certfile", "", "client certificate for etcd (kubeadm: pki/apiserver-etcd-client.crt)")
	f.StringVar(&etcdTLS.KeyFile, "etcd-keyfile", "", "client key for etcd (kubeadm: pki/apiserver-etcd-client.key)")
	f.StringVar(&listen, "listen", "0.0.0.0:6443", "HTTPS address (host:port); all addresses by default, so pods reach it on the advertise address")
	f.StringVar(&cert, "tls-cert-file", "", "serving certificate (PEM)")
	f.StringVar(&key, "tls-private-key-file", "", "serving key (PEM)")
	f.StringVar(&clientCA, "client-ca-file", "", "CA that signs client certificates")
	f.StringVar(&kubeletCert, "kubelet-client-certificate", "", "client certificate for reaching kubelets")
	f.StringVar(&kubeletKey, "kubelet-client-key", "", "client key for reaching kubelets")
	f.IntVar(&watchCacheSize, "watch-cache-size", 10000, "events per resource a watch can resume from")
	f.DurationVar(&compactionInterval, "etcd-compaction-interval", 5*time.Minute, "how often to compact etcd history (negative: never)")
	f.DurationVar(&eventTTL, "event-ttl", apiserver.DefaultEventTTL, "how long to keep events after their last write")
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
// a cluster. It serves TLS by default, clients and peers alike, and accepts
// only connections with a certificate of its trusted CA.
func etcdCommand() *cobra.Command {
	var (
		mc     etcd.MemberConfig
		pkiDir string
	)
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Run one etcd member (embedded etcd server), TLS by default",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if mc.DataDir == "" {
				mc.DataDir = mc.Name + ".etcd"
			}
			if pkiDir != "" {
				if err := etcdPKI(&mc, pkiDir); err != nil {
					return err
				}
			}
			if err := etcdPlaintextCheck(&mc); err != nil {
				return err
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
	f.StringSliceVar(&mc.ListenClientURLs, "listen-client-urls", []string{"https://127.0.0.1:2379"}, "URLs to serve clients on (http:// for plaintext)")
	f.StringSliceVar(&mc.ListenClientHTTPURLs, "listen-client-http-urls", nil, "URLs to serve etcd's HTTP endpoints on (/health, /metrics, the JSON gateway); when set, --listen-client-urls serve gRPC alone, which costs etcd less CPU per request")
	f.StringSliceVar(&mc.AdvertiseClientURLs, "advertise-client-urls", nil, "client URLs to advertise (default: the listen URLs)")
	f.StringSliceVar(&mc.ListenPeerURLs, "listen-peer-urls", []string{"https://127.0.0.1:2380"}, "URLs to serve peers on (http:// for plaintext)")
	f.StringSliceVar(&mc.InitialAdvertisePeerURLs, "initial-advertise-peer-urls", nil, "peer URLs to advertise (default: the listen URLs)")
	f.StringVar(&mc.InitialCluster, "initial-cluster", "", "name=peerURL,... of the initial members (default: this member alone)")
	f.StringVar(&mc.InitialClusterState, "initial-cluster-state", "new", "new or existing")
	f.StringVar(&pkiDir, "pki-dir", "", "kubeadm-style certificate dir: the TLS files default to DIR/etcd/{server,peer,ca}.{crt,key}, issued from DIR/etcd/ca.key (created if there is no CA) when that key is there")
	f.StringVar(&mc.ClientTLS.CertFile, "cert-file", "", "client-facing certificate")
	f.StringVar(&mc.ClientTLS.KeyFile, "key-file", "", "client-facing key")
	f.StringVar(&mc.ClientTLS.TrustedCAFile, "trusted-ca-file", "", "CA that client certificates must be signed by")
	f.BoolVar(&mc.ClientTLS.ClientCertAuth, "client-cert-auth", true, "accept only clients with a certificate of --trusted-ca-file")
	f.StringVar(&mc.PeerTLS.CertFile, "peer-cert-file", "", "peer certificate (server and client use)")
	f.StringVar(&mc.PeerTLS.KeyFile, "peer-key-file", "", "peer key")
	f.StringVar(&mc.PeerTLS.TrustedCAFile, "peer-trusted-ca-file", "", "CA that peer certificates must be signed by")
	f.BoolVar(&mc.PeerTLS.ClientCertAuth, "peer-client-cert-auth", true, "accept only peers with a certificate of --peer-trusted-ca-file")
	return cmd
}

// etcdPKI fills the TLS files of mc left empty from pkiDir in kubeadm's
// layout, issuing the member's certificates first when the etcd CA's key
// is in pkiDir (or no etcd CA exists yet). A directory holding only
// etcd/ca.crt and the member's files (as in the compose cluster) is used
// as it is.
func etcdPKI(mc *etcd.MemberConfig, pkiDir string) error {
	caDir := filepath.Join(pkiDir, pki.EtcdDir)
	_, keyErr := os.Stat(filepath.Join(caDir, "ca.key"))
	_, certErr := os.Stat(filepath.Join(caDir, "ca.crt"))
	if keyErr == nil || errors.Is(certErr, fs.ErrNotExist) {
		if _, err := pki.EnsureEtcdMember(pkiDir, mc.Name, etcdHosts(mc)); err != nil {
			return err
		}
	}
	set := func(p *string, file string) {
		if *p == "" {
			*p = filepath.Join(caDir, file)
		}
	}
	set(&mc.ClientTLS.CertFile, "server.crt")
	set(&mc.ClientTLS.KeyFile, "server.key")
	set(&mc.ClientTLS.TrustedCAFile, "ca.crt")
	set(&mc.PeerTLS.CertFile, "peer.crt")
	set(&mc.PeerTLS.KeyFile, "peer.key")
	set(&mc.PeerTLS.TrustedCAFile, "ca.crt")
	return nil
}

// etcdHosts are the names a member's certificates must carry: the hosts
// of its URLs and the machine's name.
func etcdHosts(mc *etcd.MemberConfig) []string {
	hosts := []string{mc.Name}
	if h, err := os.Hostname(); err == nil {
		hosts = append(hosts, h)
	}
	for _, list := range [][]string{mc.ListenClientURLs, mc.ListenClientHTTPURLs, mc.AdvertiseClientURLs, mc.ListenPeerURLs, mc.InitialAdvertisePeerURLs} {
		for _, s := range list {
			for _, part := range strings.Split(s, ",") {
				if u, err := url.Parse(strings.TrimSpace(part)); err == nil && u.Hostname() != "" && u.Hostname() != "0.0.0.0" {
					hosts = append(hosts, u.Hostname())
				}
			}
		}
	}
	return hosts
}

// etcdPlaintextCheck refuses https URLs without certificates with a hint,
// and warns about plaintext ones.
func etcdPlaintextCheck(mc *etcd.MemberConfig) error {
	for _, side := range []struct {
		name string
		urls []string
		tls  etcd.TLSFiles
	}{{"client", slices.Concat(mc.ListenClientURLs, mc.ListenClientHTTPURLs), mc.ClientTLS}, {"peer", mc.ListenPeerURLs, mc.PeerTLS}} {
		for _, u := range side.urls {
			switch {
			case strings.HasPrefix(u, "https://") && side.tls.CertFile == "":
				return fmt.Errorf("--listen-%s-urls %s is https (the default) but no certificate is given: pass --pki-dir DIR (kubeadm's layout, issued there when missing) or the certificate flags, or http:// URLs for plaintext", side.name, u)
			case strings.HasPrefix(u, "http://"):
				slog.Warn("etcd serves plaintext: anyone who reaches it can read and write every object", "side", side.name, "url", u)
			}
		}
	}
	return nil
}
