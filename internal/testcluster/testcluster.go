// Package testcluster starts the real `minik up` binary for integration
// tests and hands out clients for it: client-go, minik's own client and
// the kubectl on PATH.
package testcluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"minik/client"
	"minik/client/kubeconfig"
	"minik/internal/freeport"
	"minik/internal/pki"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// BuildCommand is the `go build` of the minik binary at out, from the
// module at root, as `make build` does it: static (no cgo), and without
// containerd's loader of Go plugins, whose import of package plugin makes
// the linker export every symbol (18 MB more binary to map).
func BuildCommand(root, out string) *exec.Cmd {
	cmd := exec.Command("go", "build", "-tags", "no_dynamic_plugins", "-o", out, "./cmd/minik")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd
}

// Binary builds bin/minik once per test process (or takes $MINIK_BIN)
// and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if prebuilt := os.Getenv("MINIK_BIN"); prebuilt != "" {
			binPath = prebuilt // a binary built beforehand, e.g. by make
			return
		}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, err := os.MkdirTemp("", "minik-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "minik")
		out, err := BuildCommand(root, binPath).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// Cluster is one running `minik up`.
type Cluster struct {
	t          testing.TB
	DataDir    string
	Listen     string
	Kubeconfig string
	Args       []string
	env        []string // added to minik up's environment
	cmd        *exec.Cmd
	log        *bytes.Buffer
	done       chan struct{}
}

// StartAPIOnly is Start with only etcd and the apiserver: no scheduler,
// controller or kubelet acts on the objects a test writes. As in
// Kubernetes' API-only integration clusters, the ServiceAccount admission
// plugin is off: no controller creates the `default` account of a new
// namespace, and no kubelet would mount its token. A test that wants it
// passes its own --disable-admission-plugins (e.g. empty) among extra.
func StartAPIOnly(t testing.TB, extra ...string) *Cluster {
	t.Helper()
	args := []string{"--scheduler=false", "--controller=false"}
	if !slices.ContainsFunc(extra, func(a string) bool { return strings.HasPrefix(a, "--disable-admission-plugins") }) {
		args = append(args, "--disable-admission-plugins=ServiceAccount")
	}
	return Start(t, append(args, extra...)...)
}

// Start runs `minik up --kubelet=false` (plus extra args) on a free port
// in a temp dir and waits until it is ready. It is stopped at test end.
func Start(t testing.TB, extra ...string) *Cluster {
	t.Helper()
	return start(t, "127.0.0.1", extra)
}

// StartReachable is Start with the apiserver listening on every address
// (0.0.0.0 and a free port), so that pods reach it at the host's
// addresses, which its serving certificate names; the test's own clients
// use 127.0.0.1. env is added to minik up's environment.
func StartReachable(t testing.TB, env []string, extra ...string) *Cluster {
	t.Helper()
	c := &Cluster{t: t, DataDir: t.TempDir(), Listen: freeAddr(t), env: env}
	return c.startOn("0.0.0.0", extra)
}

func start(t testing.TB, host string, extra []string) *Cluster {
	t.Helper()
	c := &Cluster{t: t, DataDir: t.TempDir(), Listen: freeAddr(t)}
	return c.startOn(host, extra)
}

// startOn starts minik up on c.Listen's port. The port was free when
// freeAddr closed it, but until minik up binds it anything may take it (an
// outgoing connection's ephemeral port, another test package's cluster);
// then minik up exits at once, and a fresh port and data dir are tried.
func (c *Cluster) startOn(host string, extra []string) *Cluster {
	t := c.t
	t.Helper()
	for attempt := 1; ; attempt++ {
		_, port, _ := net.SplitHostPort(c.Listen)
		c.Kubeconfig = filepath.Join(c.DataDir, "admin.kubeconfig")
		c.Args = append([]string{"up", "--data-dir", c.DataDir, "--listen", net.JoinHostPort(host, port), "--kubelet=false"}, extra...)
		err := c.tryStart()
		if err == nil {
			break
		}
		if attempt == 5 || !strings.Contains(c.log.String(), "address already in use") {
			t.Fatal(err)
		}
		t.Logf("minik up could not bind %s, which was taken after it was chosen; trying another port", c.Listen)
		c.DataDir, c.Listen = t.TempDir(), freeAddr(t)
	}
	t.Cleanup(c.Stop)
	return c
}

func (c *Cluster) start() {
	c.t.Helper()
	if err := c.tryStart(); err != nil {
		c.t.Fatal(err)
	}
}

// tryStart runs minik up and waits until it is ready, or says why not.
func (c *Cluster) tryStart() error {
	c.log = &bytes.Buffer{}
	c.cmd = exec.Command(Binary(c.t), c.Args...)
	if len(c.env) > 0 {
		c.cmd.Env = append(os.Environ(), c.env...)
	}
	c.cmd.Stdout = c.log
	c.cmd.Stderr = c.log
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		return err
	}
	c.done = make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	return c.waitReady()
}

// waitReady polls /readyz; the process is external, so there is no
// channel to wait on.
func (c *Cluster) waitReady() error {
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-c.done:
			return fmt.Errorf("minik up exited early:\n%s", c.log.String())
		default:
		}
		if _, err := os.Stat(c.Kubeconfig); err == nil {
			resp, err := client.Get("https://" + c.Listen + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return nil
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("minik up not ready after 60s:\n%s", c.log.String())
}

// Stop interrupts minik up (as Ctrl-C does) and waits for it to exit.
func (c *Cluster) Stop() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
		c.t.Errorf("minik up did not stop within 20s of SIGINT:\n%s", c.log.String())
	}
}

// Kill ends minik up with SIGKILL, as a crash would.
func (c *Cluster) Kill() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	_ = c.cmd.Process.Kill()
	<-c.done
}

// Restart stops and starts minik up again on the same data dir.
func (c *Cluster) Restart() {
	c.t.Helper()
	c.Stop()
	c.start()
}

// Log returns what minik up printed so far.
func (c *Cluster) Log() string { return c.log.String() }

// RESTConfig returns a client-go config from the admin kubeconfig.
func (c *Cluster) RESTConfig() *rest.Config {
	c.t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		c.t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	// Each deprecation warning once, not once per request: tests that
	// poll v1 Endpoints would otherwise bury their failures under it.
	cfg.WarningHandler = rest.NewWarningWriter(os.Stderr, rest.WarningWriterOptions{Deduplicate: true})
	return cfg
}

// Clientset returns a real client-go clientset for the cluster.
func (c *Cluster) Clientset() *kubernetes.Clientset {
	c.t.Helper()
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		c.t.Fatal(err)
	}
	return cs
}

// Client returns minik's own client for the cluster, as the components a
// test runs in its own process (controller, scheduler, hollow kubelets)
// use it.
func (c *Cluster) Client() *client.Client {
	c.t.Helper()
	kc, err := kubeconfig.Load(c.Kubeconfig)
	if err != nil {
		c.t.Fatal(err)
	}
	cl, err := client.NewFromKubeconfig(kc)
	if err != nil {
		c.t.Fatal(err)
	}
	return cl
}

// UserKubeconfig writes a kubeconfig for user (in groups), with a client
// certificate from the cluster's CA, and returns its path.
func (c *Cluster) UserKubeconfig(user string, groups ...string) string {
	c.t.Helper()
	ca, err := pki.EnsureCA(filepath.Join(c.DataDir, "pki"))
	if err != nil {
		c.t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueClient(user, groups)
	if err != nil {
		c.t.Fatal(err)
	}
	path := filepath.Join(c.t.TempDir(), strings.ReplaceAll(user, ":", "_")+".kubeconfig")
	if err := kubeconfig.Write(path, "https://"+c.Listen, ca.CertPEM(), certPEM, keyPEM, user); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// ClientAs returns minik's client acting as user (in groups).
func (c *Cluster) ClientAs(user string, groups ...string) *client.Client {
	c.t.Helper()
	kc, err := kubeconfig.Load(c.UserKubeconfig(user, groups...))
	if err != nil {
		c.t.Fatal(err)
	}
	cl, err := client.NewFromKubeconfig(kc)
	if err != nil {
		c.t.Fatal(err)
	}
	return cl
}

// Kubectl runs the real kubectl against the cluster and returns its
// combined output and error.
func (c *Cluster) Kubectl(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// MustKubectl is Kubectl that fails t on error.
func (c *Cluster) MustKubectl(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := c.Kubectl(ctx, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func freeAddr(t testing.TB) string {
	addr, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// StopProcess sends sig to a process the test started and waits until done
// is closed (the process was reaped), killing it after grace.
func StopProcess(p *os.Process, done <-chan struct{}, sig os.Signal, grace time.Duration) {
	select {
	case <-done:
		return
	default:
	}
	_ = p.Signal(sig)
	select {
	case <-done:
	case <-time.After(grace):
		_ = p.Kill()
		<-done
	}
}
