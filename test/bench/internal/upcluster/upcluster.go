// Package upcluster starts the real `minik up` for a benchmark: etcd and
// the apiserver only (no scheduler, controller or kubelet act on what the
// bench writes), on a free loopback port, in a directory of the bench's.
package upcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"minik/client"
	"minik/client/kubeconfig"
)

// Cluster is one running `minik up`.
type Cluster struct {
	Kubeconfig string // the admin's
	Listen     string // host:port of the apiserver
	PID        int
	Client     *client.Client // the admin's

	cmd  *exec.Cmd
	done chan struct{}
	log  *os.File
}

// Start runs `bin up --kubelet=false --scheduler=false --controller=false`
// plus extra in dir, and returns once /readyz answers 200. Its log is
// dir/minik.log. The process dies with the bench (PDEATHSIG).
func Start(ctx context.Context, bin, dir string, extra ...string) (*Cluster, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	listen := l.Addr().String()
	l.Close()
	logFile, err := os.Create(filepath.Join(dir, "minik.log"))
	if err != nil {
		return nil, err
	}
	args := append([]string{"up", "--data-dir", dir, "--listen", listen,
		"--kubelet=false", "--scheduler=false", "--controller=false"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	c := &Cluster{Kubeconfig: filepath.Join(dir, "admin.kubeconfig"), Listen: listen, PID: cmd.Process.Pid,
		cmd: cmd, done: make(chan struct{}), log: logFile}
	go func() { _ = cmd.Wait(); close(c.done) }()
	if err := c.waitReady(ctx, 60*time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) waitReady(ctx context.Context, within time.Duration) error {
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: time.Second}
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-c.done:
			return errors.New("minik up exited early; see " + c.log.Name())
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if _, err := os.Stat(c.Kubeconfig); err != nil {
			continue
		}
		resp, err := hc.Get("https://" + c.Listen + "/readyz")
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			continue
		}
		kc, err := kubeconfig.Load(c.Kubeconfig)
		if err != nil {
			return err
		}
		cfg, err := client.ConfigFromKubeconfig(kc)
		if err != nil {
			return err
		}
		cfg.UserAgent = "minik-bench"
		c.Client, err = client.New(cfg)
		return err
	}
	return fmt.Errorf("minik up not ready after %v; see %s", within, c.log.Name())
}

// Stop interrupts `minik up` and waits for it (20s, then it is killed).
func (c *Cluster) Stop() {
	_ = c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	c.log.Close()
}
