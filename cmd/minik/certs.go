package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"minik/client/kubeconfig"
	"minik/internal/pki"
	"minik/proxy"
)

// certsCommand issues (once) the certificates of a control plane that runs
// its pieces separately, in kubeadm's layout under --pki-dir.
func certsCommand() *cobra.Command {
	var pkiDir string
	cmd := &cobra.Command{
		Use:   "certs",
		Short: "Create the cluster CA, etcd's CA and the apiserver's etcd client certificate (kubeadm's layout)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := pki.EnsureCA(pkiDir); err != nil {
				return err
			}
			c, err := pki.EnsureAPIServerEtcdClient(pkiDir)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "--etcd-cafile %s --etcd-certfile %s --etcd-keyfile %s\n", c.CA, c.Cert, c.Key)
			return nil
		},
	}
	cmd.Flags().StringVar(&pkiDir, "pki-dir", ".minik/pki", "certificate dir")
	cmd.AddCommand(certsClusterCommand())
	return cmd
}

// certsClusterCommand writes one directory per component of a cluster
// whose components run apart (the compose cluster's init step).
func certsClusterCommand() *cobra.Command {
	var (
		out   string
		l     clusterLayout
		nodes []string
	)
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Create the CAs and one directory per component (etcd members, apiserver, scheduler, controller, nodes, admin), each with only its own key",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l.Nodes = map[string]string{}
			for _, n := range nodes {
				name, ip, ok := strings.Cut(n, "=")
				if !ok {
					return fmt.Errorf("--node %q: want NAME=IP", n)
				}
				l.Nodes[name] = ip
			}
			if err := writeClusterLayout(out, l); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "certificates and kubeconfigs under %s; the host's kubeconfig is %s\n", out, filepath.Join(out, "admin", "kubeconfig"))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "pki", "directory to write")
	f.StringVar(&l.Server, "server", "https://apiserver:6443", "the apiserver's URL inside the cluster")
	f.StringVar(&l.HostServer, "host-server", "https://127.0.0.1:6443", "the apiserver's URL in the admin kubeconfig")
	f.StringSliceVar(&l.APIServerHosts, "apiserver-hosts", []string{"apiserver"}, "names and addresses of the apiserver's serving certificate (besides localhost)")
	f.StringSliceVar(&l.EtcdMembers, "etcd-members", nil, "host names of the etcd members")
	f.StringSliceVar(&nodes, "node", nil, "NAME=IP of each node (repeatable)")
	return cmd
}

// clusterLayout describes a cluster whose components run apart, each
// seeing only its own directory (the compose cluster): the names and
// addresses certificates must carry.
type clusterLayout struct {
	// Server is the apiserver's URL inside the cluster (https://apiserver:6443);
	// HostServer the one the host's kubectl uses (https://127.0.0.1:6443).
	Server, HostServer string
	// APIServerHosts are the serving certificate's names and addresses.
	APIServerHosts []string
	// EtcdMembers are the etcd members' host names.
	EtcdMembers []string
	// Nodes maps each node name to its InternalIP.
	Nodes map[string]string
}

// writeClusterLayout issues (once: existing files are reused) the
// cluster CA and etcd's CA under out/ca, and for each component a
// directory of its own holding only what it needs:
//
//	out/etcd-NAME/etcd/{ca.crt,server.*,peer.*}         each etcd member
//	out/apiserver/{ca.crt,apiserver.*,apiserver-kubelet-client.*,apiserver-etcd-client.*,etcd/ca.crt,sa.key}
//	out/scheduler/kubeconfig                            system:kube-scheduler
//	out/controller/kubeconfig                           system:kube-controller-manager
//	out/dns/kubeconfig                                  system:kube-dns
//	out/node-NAME/{ca.crt,kubelet.kubeconfig,kubelet.crt,kubelet.key,proxy.kubeconfig}
//	                                                    system:node:NAME (system:nodes), system:kube-proxy
//	out/admin/kubeconfig                                admin (system:masters), for the host
func writeClusterLayout(out string, l clusterLayout) error {
	caDir := filepath.Join(out, "ca")
	ca, err := pki.EnsureCA(caDir)
	if err != nil {
		return err
	}
	etcdCA, err := pki.EnsureEtcdCA(caDir)
	if err != nil {
		return err
	}
	for _, m := range l.EtcdMembers {
		if _, err := pki.IssueEtcdMember(etcdCA, filepath.Join(out, "etcd-"+m), m, []string{m}); err != nil {
			return fmt.Errorf("etcd member %s: %w", m, err)
		}
	}

	api := filepath.Join(out, "apiserver")
	if err := pki.WriteCACert(api, ca); err != nil {
		return err
	}
	if err := pki.WriteCACert(filepath.Join(api, pki.EtcdDir), etcdCA); err != nil {
		return err
	}
	if _, _, err := ca.EnsureServing(api, "apiserver", l.APIServerHosts); err != nil {
		return err
	}
	if _, _, err := ca.EnsureClient(api, "apiserver-kubelet-client", pki.KubeletClientUser, nil); err != nil {
		return err
	}
	if _, _, err := etcdCA.EnsureClient(api, "apiserver-etcd-client", pki.APIServerEtcdClientUser, nil); err != nil {
		return err
	}
	if _, err := pki.EnsureServiceAccountKey(api); err != nil {
		return err
	}

	writeKC := func(dir, file, user string, groups []string, server string) error {
		certFile, keyFile, err := ca.EnsureClient(filepath.Join(caDir, "issued"), strings.NewReplacer(":", "-").Replace(user), user, groups)
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
		return kubeconfig.Write(filepath.Join(dir, file), server, ca.CertPEM(), certPEM, keyPEM, user)
	}
	if err := writeKC(filepath.Join(out, "scheduler"), "kubeconfig", pki.SchedulerUser, nil, l.Server); err != nil {
		return err
	}
	if err := writeKC(filepath.Join(out, "controller"), "kubeconfig", pki.ControllerUser, nil, l.Server); err != nil {
		return err
	}
	if err := writeKC(filepath.Join(out, "dns"), "kubeconfig", dnsUser, nil, l.Server); err != nil {
		return err
	}
	for name, ip := range l.Nodes {
		dir := filepath.Join(out, "node-"+name)
		if err := pki.WriteCACert(dir, ca); err != nil {
			return err
		}
		if err := writeKC(dir, "kubelet.kubeconfig", pki.NodeUser(name), []string{pki.NodesGroup}, l.Server); err != nil {
			return err
		}
		if err := writeKC(dir, "proxy.kubeconfig", proxy.User, nil, l.Server); err != nil {
			return err
		}
		if _, _, err := ca.EnsureServing(dir, "kubelet", []string{name, ip}); err != nil {
			return err
		}
	}
	return writeKC(filepath.Join(out, "admin"), "kubeconfig", pki.AdminUser, []string{pki.MastersGroup}, l.HostServer)
}
