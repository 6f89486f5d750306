package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/client/kubeconfig"
	"minik/internal/freeport"
)

// proc is a child process whose CPU time can be read while it runs.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startProc runs bin args... with its output in dir/name.log; it dies with
// the benchmark.
func startProc(dir, name, bin string, args ...string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// stop interrupts the process and kills it if it has not exited 20s later.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// exited reports whether the process has ended, with the end of its log.
func (p *proc) exited() (bool, string) {
	select {
	case <-p.done:
		log, _ := os.ReadFile(p.log)
		return true, tail(string(log), 2000)
	default:
		return false, ""
	}
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times (100 on Linux).
const clockTicks = 100

// cpu is the CPU time (user and system) the process has used so far.
func (p *proc) cpu() time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses:
	// state is the 3rd field, utime the 14th and stime the 15th.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// freePort returns a loopback port nobody listens on now.
func freePort() (int, error) {
	addr, err := freeport.Addr()
	if err != nil {
		return 0, err
	}
	_, port, _ := net.SplitHostPort(addr)
	return strconv.Atoi(port)
}

// splitCluster is etcd and the apiserver, each its own process, so that
// the apiserver's CPU is measured alone; certificates and kubeconfigs come
// from `minik certs cluster`, as for the compose cluster.
type splitCluster struct {
	dir       string
	etcd      *proc
	apiserver *proc
	admin     *client.Client
	// schedulerKubeconfig is system:kube-scheduler's, which both
	// schedulers use.
	schedulerKubeconfig string
}

func startSplitCluster(ctx context.Context, bin, dir string) (*splitCluster, error) {
	var ports [4]int
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	etcdURL, peerURL := fmt.Sprintf("https://127.0.0.1:%d", ports[0]), fmt.Sprintf("https://127.0.0.1:%d", ports[1])
	server := fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	pkiDir := filepath.Join(dir, "pki")
	certs := exec.Command(bin, "certs", "cluster", "--out", pkiDir, "--etcd-members", "etcd0",
		"--server", server, "--host-server", server, "--apiserver-hosts", "127.0.0.1")
	if out, err := certs.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("minik certs cluster: %v: %s", err, out)
	}
	c := &splitCluster{dir: dir, schedulerKubeconfig: filepath.Join(pkiDir, "scheduler", "kubeconfig")}
	var err error
	c.etcd, err = startProc(dir, "etcd", bin, "etcd", "--name", "etcd0", "--data-dir", filepath.Join(dir, "etcd"),
		"--pki-dir", filepath.Join(pkiDir, "etcd-etcd0"), "--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--listen-client-http-urls", fmt.Sprintf("https://127.0.0.1:%d", ports[3])) // the client port serves gRPC alone
	if err != nil {
		return nil, err
	}
	api := filepath.Join(pkiDir, "apiserver")
	c.apiserver, err = startProc(dir, "apiserver", bin, "apiserver", "--listen", fmt.Sprintf("127.0.0.1:%d", ports[2]),
		"--etcd-servers", etcdURL, "--etcd-cafile", filepath.Join(api, "etcd", "ca.crt"),
		"--etcd-certfile", filepath.Join(api, "apiserver-etcd-client.crt"), "--etcd-keyfile", filepath.Join(api, "apiserver-etcd-client.key"),
		"--tls-cert-file", filepath.Join(api, "apiserver.crt"), "--tls-private-key-file", filepath.Join(api, "apiserver.key"),
		"--client-ca-file", filepath.Join(api, "ca.crt"), "--service-account-signing-key-file", filepath.Join(api, "sa.key"))
	if err != nil {
		c.stop()
		return nil, err
	}
	if c.admin, err = waitReady(ctx, filepath.Join(pkiDir, "admin", "kubeconfig"), c.apiserver, c.etcd); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// onFreshCluster runs fn against a new split cluster in a temporary
// directory, and stops the cluster and removes the directory after.
func onFreshCluster[T any](bin string, fn func(ctx context.Context, c *splitCluster) (T, error)) (T, error) {
	var zero T
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "minik-bench-peer-")
	if err != nil {
		return zero, err
	}
	defer os.RemoveAll(dir)
	c, err := startSplitCluster(ctx, bin, dir)
	if err != nil {
		return zero, err
	}
	defer c.stop()
	return fn(ctx, c)
}

func (c *splitCluster) stop() {
	for _, p := range []*proc{c.apiserver, c.etcd} {
		if p != nil {
			p.stop()
		}
	}
}

// waitReady returns a client of kubeconfigPath once the apiserver answers,
// or the log of whichever of procs died.
func waitReady(ctx context.Context, kubeconfigPath string, procs ...*proc) (*client.Client, error) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range procs {
			if done, log := p.exited(); done {
				return nil, fmt.Errorf("%s exited:\n%s", p.name, log)
			}
		}
		if kc, err := kubeconfig.Load(kubeconfigPath); err == nil {
			if cfg, err := client.ConfigFromKubeconfig(kc); err == nil {
				cfg.UserAgent = "bench-scheduler"
				if c, err := client.New(cfg); err == nil {
					if _, err := c.Namespaces().Get(ctx, "", "default", metav1.GetOptions{}); err == nil {
						return c, nil
					}
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, fmt.Errorf("apiserver not ready after 60s")
}
