package containerd

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/containerd/containerd/api/types/task"

	"minik/proto/cri"
)

// ListContainerStats reads each container's usage: memory and tasks of a
// running one from its cgroup (at the path CreateContainer gives it,
// cgroup v1 or v2), and its writable layer from the snapshotter. Reading
// files is cheaper than asking every task's shim for metrics.
func (r *Runtime) ListContainerStats(ctx context.Context) ([]*cri.ContainerStats, error) {
	ctx = r.ctx(ctx)
	list, err := r.client.ContainerService().List(ctx, fmt.Sprintf(`labels.%q==container`, labelKind))
	if err != nil {
		return nil, err
	}
	procs, err := r.tasks(ctx, "", list)
	if err != nil {
		return nil, err
	}
	snapshots := r.client.SnapshotService(r.cfg.Snapshotter)
	out := make([]*cri.ContainerStats, 0, len(list))
	for _, info := range list {
		st := &cri.ContainerStats{ContainerId: info.ID}
		// An exited task's cgroup lingers until the task is deleted, still
		// charged with its page cache: that is not usage.
		if p := procs[info.ID]; p != nil && p.Status == task.Status_RUNNING {
			st.MemoryWorkingSetBytes, st.ProcessCount = cgroupUsage(filepath.Join(CgroupParent, r.cfg.Namespace, info.ID))
		}
		if info.SnapshotKey != "" {
			if u, err := snapshots.Usage(ctx, info.SnapshotKey); err == nil {
				st.WritableLayerBytes, st.WritableLayerInodes = uint64(u.Size), uint64(u.Inodes)
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// cgroupUsage reads a cgroup's working set (usage less inactive file
// pages, as cAdvisor computes it) and task count; zero when the cgroup is
// gone (an exited container).
func cgroupUsage(rel string) (workingSet, tasks uint64) {
	v2 := filepath.Join("/sys/fs/cgroup", rel)
	usageFile, statFile, inactiveKey := filepath.Join(v2, "memory.current"), filepath.Join(v2, "memory.stat"), "inactive_file"
	pidsFile := filepath.Join(v2, "pids.current")
	if _, err := os.Stat(usageFile); err != nil {
		v1 := filepath.Join("/sys/fs/cgroup/memory", rel)
		usageFile, statFile, inactiveKey = filepath.Join(v1, "memory.usage_in_bytes"), filepath.Join(v1, "memory.stat"), "total_inactive_file"
		pidsFile = filepath.Join("/sys/fs/cgroup/pids", rel, "pids.current")
	}
	usage := readUint(usageFile)
	if inactive := statValue(statFile, inactiveKey); inactive < usage {
		workingSet = usage - inactive
	}
	return workingSet, readUint(pidsFile)
}

func readUint(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return v
}

// statValue reads one "key value" line of a cgroup stat file.
func statValue(path, key string) uint64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == key {
			n, _ := strconv.ParseUint(v, 10, 64)
			return n
		}
	}
	return 0
}
