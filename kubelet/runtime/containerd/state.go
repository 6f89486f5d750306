package containerd

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/containerd/containerd/containers"
)

// stateSubdirs are the runtime's state under RunDir: sandbox records, IPAM
// allocations, container start times.
var stateSubdirs = []string{"sandboxes", "ipam", "started"}

// moveLegacyState moves the state an earlier version kept on disk, under
// stateDir, into runDir, so that a kubelet upgraded with pods running
// still knows their sandboxes and addresses. A file runDir already has is
// kept; the old directories are removed.
func moveLegacyState(stateDir, runDir string) error {
	for _, sub := range stateSubdirs {
		from := filepath.Join(stateDir, sub)
		if _, err := os.Stat(from); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(from, path)
			if err != nil {
				return err
			}
			to := filepath.Join(runDir, sub, rel)
			if _, err := os.Stat(to); err == nil {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
				return err
			}
			return os.WriteFile(to, data, 0o600)
		})
		if err != nil {
			return err
		}
		if err := os.RemoveAll(from); err != nil {
			return err
		}
		slog.Info("moved the runtime's state to its run directory", "from", from, "to", filepath.Join(runDir, sub))
	}
	return nil
}

// removeOrphans removes the containers of sandboxes the runtime has no
// record of: after a reboot, those of every sandbox the machine ended.
// They cannot run again (their sandbox's namespace is gone), and nothing
// else would remove them.
func (r *Runtime) removeOrphans(ctx context.Context, list []containers.Container) {
	for _, c := range list {
		sb := c.Labels[labelSandbox]
		if sb == "" {
			continue // not made by a kubelet
		}
		r.mu.Lock()
		_, known := r.sandboxes[sb]
		r.mu.Unlock()
		if known {
			continue
		}
		if err := r.RemoveContainer(ctx, c.ID); err != nil {
			slog.Warn("removing a container whose sandbox is gone", "container", c.ID, "sandbox", sb, "err", err)
			continue
		}
		slog.Info("removed a container whose sandbox is gone", "container", c.ID, "sandbox", sb)
	}
}
