package containerd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd"
)

// DefaultAddress is where a system containerd listens.
const DefaultAddress = "/run/containerd/containerd.sock"

// InstallHint says how to get containerd when there is none.
const InstallHint = "containerd not found: install it with `apt-get install containerd runc` (Debian/Ubuntu), " +
	"or start one listening on " + DefaultAddress

// Daemon is a containerd that minik started as its child.
type Daemon struct {
	Address string
	cmd     *exec.Cmd
	done    chan struct{}
}

// Answers reports whether a containerd serves address within timeout.
func Answers(ctx context.Context, address string, timeout time.Duration) bool {
	if _, err := os.Stat(address); err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := containerd.New(address, containerd.WithTimeout(timeout))
	if err != nil {
		return false
	}
	defer c.Close()
	_, err = c.Version(ctx)
	return err == nil
}

// Ensure returns the address of a containerd to use: DefaultAddress when
// it answers, else a containerd started from PATH with its root and socket
// under dir and its state in RunRoot (as k3s keeps it in /run/k3s). The returned Daemon is nil when the
// system containerd is used; otherwise Stop it on shutdown.
func Ensure(ctx context.Context, dir string) (string, *Daemon, error) {
	if Answers(ctx, DefaultAddress, 2*time.Second) {
		return DefaultAddress, nil, nil
	}
	d, err := StartDaemon(ctx, dir)
	if err != nil {
		return "", nil, err
	}
	return d.Address, d, nil
}

// StartDaemon starts the containerd on PATH with its root (images,
// snapshots, metadata) under dir and its state on RunRoot's tmpfs, and
// waits until it answers.
func StartDaemon(ctx context.Context, dir string) (*Daemon, error) {
	bin, err := exec.LookPath("containerd")
	if err != nil {
		return nil, errors.New(InstallHint)
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, err
	}
	sock := SocketFor(dir)
	if Answers(ctx, sock, time.Second) {
		// A containerd of an earlier run on this data dir is still there.
		return &Daemon{Address: sock}, nil
	}
	if err := EnsureRunRoot(); err != nil {
		return nil, err
	}
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = %q
[ttrpc]
  address = %q
[debug]
  address = ""
`, filepath.Join(dir, "root"), DaemonStateDir(dir), sock, sock+".ttrpc")
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "containerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: Ctrl-C on minik's terminal does not reach it,
	// minik stops it last. No Pdeathsig: it fires when the forking OS
	// thread ends, and Go ends threads (the kubelet ends the ones that
	// entered a new network namespace). A containerd left behind by a
	// killed minik is reused by the next start on the same dir.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting containerd: %w", err)
	}
	logf.Close()
	d := &Daemon{Address: sock, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(d.done) }()
	slog.Info("started containerd", "pid", cmd.Process.Pid, "address", sock, "log", filepath.Join(dir, "containerd.log"))
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-d.done:
			return nil, fmt.Errorf("containerd exited at start; see %s", filepath.Join(dir, "containerd.log"))
		case <-ctx.Done():
			d.Stop()
			return nil, ctx.Err()
		default:
		}
		if Answers(ctx, sock, time.Second) {
			return d, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	d.Stop()
	return nil, fmt.Errorf("containerd did not answer on %s within 30s", sock)
}

// SocketFor is the socket of the containerd StartDaemon runs under dir. A
// unix socket path is limited to 108 bytes, so a deep dir gets a short
// socket in the temp dir instead.
func SocketFor(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	sock := filepath.Join(dir, "containerd.sock")
	if len(sock) > 100 {
		sock = filepath.Join(os.TempDir(), fmt.Sprintf("minik-containerd-%x.sock", hash(dir)))
	}
	return sock
}

// Stop ends a containerd that StartDaemon started (SIGTERM, then SIGKILL
// after 10s). Containers keep running in their shims.
func (d *Daemon) Stop() {
	if d == nil || d.cmd == nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
}
