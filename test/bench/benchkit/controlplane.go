package benchkit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"minik/client"
	"minik/client/kubeconfig"
	"minik/hollow"
	"minik/internal/freeport"
	"minik/internal/pki"
)

// ControlPlane is a cluster's control plane as separate processes on
// loopback, each with its own identity, laid out as the compose cluster
// is (`minik certs cluster`): etcd, apiserver, scheduler and controller,
// so that each one's CPU and memory can be read apart.
//
//	minik certs cluster ─▶ DIR/pki/{ca,etcd-127.0.0.1,apiserver,scheduler,controller,admin}
//	minik etcd      (TLS, client certificates)     ◀── minik apiserver (127.0.0.1:PORT), or
//	                                                    upstream's kube-apiserver (KubeAPIServer)
//	                                                    ▲ scheduler, controller (own kubeconfigs)
//	                                                    ▲ the benchmark (admin), hollow nodes (hollow.User)
type ControlPlane struct {
	Dir    string
	Server string // https://127.0.0.1:PORT
	// Admin is the admin's kubeconfig (system:masters).
	Admin string
	// Procs are the running components by name: etcd, apiserver,
	// scheduler, controller.
	Procs map[string]*Proc
	bin   string
	order []string
}

// ControlPlaneOptions chooses what runs besides etcd and the apiserver.
type ControlPlaneOptions struct {
	Scheduler, Controller bool
	// ClusterCIDR is the controller's range of node podCIDRs (default
	// 10.0.0.0/8: room for 65,536 nodes of a /24 each).
	ClusterCIDR string
	// APIServerArgs, SchedulerArgs and ControllerArgs are added to those
	// components' flags.
	APIServerArgs, SchedulerArgs, ControllerArgs []string
	// KubeAPIServer, if set, is upstream's kube-apiserver binary, run in
	// place of minik apiserver with the same certificates, etcd and port
	// (a peer to measure minik against).
	KubeAPIServer string
}

// StartControlPlane starts the components and waits until the apiserver
// is ready. Stop it with Stop.
func StartControlPlane(ctx context.Context, bin, dir string, o ControlPlaneOptions) (*ControlPlane, error) {
	bin, err := Binary(bin)
	if err != nil {
		return nil, err
	}
	if o.ClusterCIDR == "" {
		o.ClusterCIDR = "10.0.0.0/8"
	}
	api, err := freeport.Addr()
	if err != nil {
		return nil, err
	}
	etcdClient, err := freeport.Addr()
	if err != nil {
		return nil, err
	}
	etcdPeer, err := freeport.Addr()
	if err != nil {
		return nil, err
	}
	etcdHTTP, err := freeport.Addr() // /health and /metrics; the client port serves gRPC alone
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{Dir: dir, Server: "https://" + api, Admin: filepath.Join(dir, "pki", "admin", "kubeconfig"), Procs: map[string]*Proc{}, bin: bin}
	pkiDir := filepath.Join(dir, "pki")
	certs := exec.Command(bin, "certs", "cluster", "--out", pkiDir, "--server", cp.Server, "--host-server", cp.Server,
		"--apiserver-hosts", "127.0.0.1", "--etcd-members", "127.0.0.1")
	if out, err := certs.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("minik certs cluster: %v\n%s", err, out)
	}
	apiPKI := filepath.Join(pkiDir, "apiserver")
	// The flags both apiservers name alike.
	common := []string{"--advertise-address", "127.0.0.1", "--etcd-servers", "https://" + etcdClient,
		"--etcd-cafile", filepath.Join(apiPKI, "etcd", "ca.crt"), "--etcd-certfile", filepath.Join(apiPKI, "apiserver-etcd-client.crt"),
		"--etcd-keyfile", filepath.Join(apiPKI, "apiserver-etcd-client.key"),
		"--tls-cert-file", filepath.Join(apiPKI, "apiserver.crt"), "--tls-private-key-file", filepath.Join(apiPKI, "apiserver.key"),
		"--client-ca-file", filepath.Join(apiPKI, "ca.crt"), "--service-account-signing-key-file", filepath.Join(apiPKI, "sa.key"),
		"--kubelet-client-certificate", filepath.Join(apiPKI, "apiserver-kubelet-client.crt"),
		"--kubelet-client-key", filepath.Join(apiPKI, "apiserver-kubelet-client.key")}
	type step struct {
		name, bin string
		args      []string
	}
	apiserver := step{"apiserver", bin, append(append([]string{"apiserver", "--listen", api}, common...), o.APIServerArgs...)}
	if o.KubeAPIServer != "" {
		_, port, _ := strings.Cut(api, ":")
		apiserver = step{"apiserver", o.KubeAPIServer, append([]string{"--bind-address", "127.0.0.1", "--secure-port", port,
			"--cert-dir", filepath.Join(dir, "kube-apiserver-certs"),
			"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file", filepath.Join(apiPKI, "sa.key"),
			"--service-cluster-ip-range", "10.96.0.0/12", "--authorization-mode", "Node,RBAC",
			// The kubernetes Service's endpoint would be 127.0.0.1, which
			// Endpoints refuse: no reconciler (nothing here uses it).
			"--endpoint-reconciler-type", "none"}, common...)}
	}
	steps := []step{
		{"etcd", bin, []string{"etcd", "--name", "e0", "--data-dir", filepath.Join(dir, "etcd"), "--pki-dir", filepath.Join(pkiDir, "etcd-127.0.0.1"),
			"--listen-client-urls", "https://" + etcdClient, "--listen-client-http-urls", "https://" + etcdHTTP,
			"--listen-peer-urls", "https://" + etcdPeer, "--initial-cluster", "e0=https://" + etcdPeer}},
		apiserver,
	}
	if o.Scheduler {
		steps = append(steps, step{"scheduler", bin, append([]string{"scheduler", "--kubeconfig", filepath.Join(pkiDir, "scheduler", "kubeconfig")}, o.SchedulerArgs...)})
	}
	if o.Controller {
		steps = append(steps, step{"controller", bin, append([]string{"controller", "--kubeconfig", filepath.Join(pkiDir, "controller", "kubeconfig"),
			"--cluster-cidr", o.ClusterCIDR}, o.ControllerArgs...)})
	}
	for _, s := range steps {
		p, err := Start(s.name, s.bin, filepath.Join(dir, s.name+".log"), s.args...)
		if err != nil {
			cp.Stop()
			return nil, err
		}
		cp.Procs[s.name] = p
		cp.order = append(cp.order, s.name)
		if s.name == "apiserver" {
			if err := cp.waitReady(ctx, p); err != nil {
				cp.Stop()
				return nil, err
			}
		}
	}
	return cp, nil
}

// waitReady polls /readyz as the admin until it answers 200: the process
// is another one, so there is no channel to wait on.
func (cp *ControlPlane) waitReady(ctx context.Context, p *Proc) error {
	c, err := cp.Client("bench")
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		select {
		case <-p.Done():
			return fmt.Errorf("the apiserver exited; see %s", p.Log)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		var body []byte
		if err := c.Do(ctx, "GET", "/readyz", nil, nil, &body); err == nil {
			return nil
		}
	}
	return fmt.Errorf("the apiserver is not ready after 60s; see %s", p.Log)
}

// Stop stops the components, the last started first.
func (cp *ControlPlane) Stop() {
	for i := len(cp.order) - 1; i >= 0; i-- {
		cp.Procs[cp.order[i]].Stop()
	}
}

// Client is a client of the admin's, naming itself agent.
func (cp *ControlPlane) Client(agent string) (*client.Client, error) {
	return ClientOf(cp.Admin, agent)
}

// ClientOf is a client of the kubeconfig at path, naming itself agent.
func ClientOf(path, agent string) (*client.Client, error) {
	kc, err := kubeconfig.Load(path)
	if err != nil {
		return nil, err
	}
	cfg, err := client.ConfigFromKubeconfig(kc)
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = agent
	return client.New(cfg)
}

// HollowKubeconfig binds hollow.User to the rights hollow/rbac.yaml
// gives it and writes a kubeconfig for that user, with a client
// certificate from the cluster CA: the identity `minik hollow` runs as.
func (cp *ControlPlane) HollowKubeconfig(ctx context.Context) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	if err := cp.applyRBAC(ctx, filepath.Join(root, "hollow", "rbac.yaml")); err != nil {
		return "", err
	}
	ca, err := pki.LoadCA(filepath.Join(cp.Dir, "pki", "ca"))
	if err != nil {
		return "", err
	}
	certPEM, keyPEM, err := ca.IssueClient(hollow.User, nil)
	if err != nil {
		return "", err
	}
	path := filepath.Join(cp.Dir, "hollow.kubeconfig")
	return path, kubeconfig.Write(path, cp.Server, ca.CertPEM(), certPEM, keyPEM, hollow.User)
}

// applyRBAC creates the ClusterRole and ClusterRoleBinding of file.
func (cp *ControlPlane) applyRBAC(ctx context.Context, file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	c, err := cp.Client("bench")
	if err != nil {
		return err
	}
	roles := client.For[rbacv1.ClusterRole](c, client.Resource{Group: rbacv1.GroupName, Version: "v1", Resource: "clusterroles"})
	bindings := client.For[rbacv1.ClusterRoleBinding](c, client.Resource{Group: rbacv1.GroupName, Version: "v1", Resource: "clusterrolebindings"})
	for _, doc := range splitYAML(data) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return err
		}
		switch meta.Kind {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			if err = yaml.Unmarshal(doc, &r); err == nil {
				_, err = roles.Create(ctx, &r, metav1.CreateOptions{})
			}
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			if err = yaml.Unmarshal(doc, &b); err == nil {
				_, err = bindings.Create(ctx, &b, metav1.CreateOptions{})
			}
		default:
			err = fmt.Errorf("%s: unexpected kind %q", file, meta.Kind)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// splitYAML cuts a multi-document YAML file at its "---" lines.
func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(data, []byte("\n---\n")) {
		if len(bytes.TrimSpace(d)) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

// EtcdDBSizeMB is the size of etcd's database file under dir (a member's
// data dir) in MB.
func EtcdDBSizeMB(dataDir string) (float64, error) {
	fi, err := os.Stat(filepath.Join(dataDir, "member", "snap", "db"))
	if err != nil {
		return 0, err
	}
	return float64(fi.Size()) / (1 << 20), nil
}
