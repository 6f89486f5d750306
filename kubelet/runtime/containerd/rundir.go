package containerd

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// RunRoot holds the runtime state that must not outlive the machine, as
// /run does on a systemd host: the state of the containerd minik starts
// (bundles, rootfs mount points), runc's container state, network
// namespace handles and log FIFOs. It is a tmpfs: these files are made and
// removed for every container, and on a disk each one costs an inode
// allocation: on this project's ext4 (no journal, so each allocation scans
// for recently deleted inodes) that was 14% of a pod start's CPU.
const RunRoot = "/run/minik"

// RuncRoot is runc's state directory (its --root) for minik's containers.
var RuncRoot = filepath.Join(RunRoot, "runc")

// DaemonStateDir is the state directory of the containerd StartDaemon runs
// for dir: one per data dir, so that several run side by side.
func DaemonStateDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return filepath.Join(RunRoot, "containerd", fmt.Sprintf("%08x", hash(dir)))
}

// RunDirFor is the run directory of the runtime whose StateDir is
// stateDir: its netns handles and FIFOs.
func RunDirFor(stateDir string) string {
	if abs, err := filepath.Abs(stateDir); err == nil {
		stateDir = abs
	}
	return filepath.Join(RunRoot, "node", fmt.Sprintf("%08x", hash(stateDir)))
}

var runRootOnce struct {
	sync.Mutex
	done bool
}

// EnsureRunRoot creates RunRoot and, where it is not on a tmpfs (inside a
// container /run is often the container's disk), mounts one there. The
// mount stays, as /run does: containers and shims keep using it when
// minik stops. Without the right to mount, RunRoot stays on disk: slower,
// not wrong.
func EnsureRunRoot() error {
	runRootOnce.Lock()
	defer runRootOnce.Unlock()
	if runRootOnce.done {
		return nil
	}
	if err := os.MkdirAll(RunRoot, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", RunRoot, err)
	}
	// Processes started side by side (tests, `minik up` and a kubelet)
	// must not mount twice: a second tmpfs would hide the first one's
	// files from path lookups.
	lock, err := os.OpenFile(RunRoot+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("locking %s: %w", RunRoot, err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", RunRoot, err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)
	if onTmpfs(RunRoot) {
		runRootOnce.done = true
		return nil
	}
	if err := unix.Mount("tmpfs", RunRoot, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		if errors.Is(err, unix.EPERM) {
			slog.Warn("runtime state stays on disk: mounting a tmpfs needs root", "dir", RunRoot)
			runRootOnce.done = true
			return nil
		}
		return fmt.Errorf("mounting a tmpfs on %s: %w", RunRoot, err)
	}
	runRootOnce.done = true
	return nil
}

func onTmpfs(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == unix.TMPFS_MAGIC
}

// HoldsNoSandbox reports whether the runtime whose StateDir is stateDir,
// with the default RunDir, has no sandbox record left: its node is
// settled (what the benchmarks wait for between runs).
func HoldsNoSandbox(stateDir string) bool {
	ents, err := os.ReadDir(filepath.Join(RunDirFor(stateDir), "sandboxes"))
	return err == nil && len(ents) == 0
}
