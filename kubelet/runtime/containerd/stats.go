package containerd

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/mount"
	"github.com/containerd/containerd/snapshots"

	"minik/internal/diskusage"
	"minik/proto/cri"
)

// ListContainerStats reads each container's usage: memory and tasks of a
// running one from its cgroup (at the path CreateContainer gives it,
// cgroup v1 or v2), and its writable layer from the layer's directory.
// Reading files is cheaper than asking every task's shim for metrics, or
// containerd for every layer's usage (the eviction manager reads this
// every 10s: one call per container was most of an idle node's calls to
// containerd).
func (r *Runtime) ListContainerStats(ctx context.Context) ([]*cri.ContainerStats, error) {
	ctx = r.ctx(ctx)
	list, err := r.listRecords(ctx)
	if err != nil {
		return nil, err
	}
	snapshotter := r.client.SnapshotService(r.cfg.Snapshotter)
	dirs := r.writableLayerDirs(ctx, snapshotter, list)
	out := make([]*cri.ContainerStats, 0, len(list))
	for _, info := range list {
		st := &cri.ContainerStats{ContainerId: info.ID}
		// An exited task's cgroup lingers until the task is deleted, still
		// charged with its page cache: that is not usage. Whether the
		// container runs is read from its cgroup too (a process in it),
		// not from containerd's tasks: listing them asks every shim.
		if u := readCgroup("/sys/fs/cgroup", filepath.Join(CgroupParent, r.cfg.Namespace, info.ID)); u.populated {
			st.MemoryWorkingSetBytes, st.MemoryUsageBytes, st.ProcessCount = u.workingSet, u.memory, u.tasks
			st.CpuUsageCoreNanoSeconds = u.cpuNanos
		}
		st.Timestamp = time.Now().UnixNano()
		switch dir := dirs[info.ID]; {
		case dir != "":
			b, n := diskusage.Of(dir)
			st.WritableLayerBytes, st.WritableLayerInodes = uint64(b), uint64(n)
		case info.SnapshotKey != "":
			if u, err := snapshotter.Usage(ctx, info.SnapshotKey); err == nil {
				st.WritableLayerBytes, st.WritableLayerInodes = uint64(u.Size), uint64(u.Inodes)
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// writableLayerDirs returns the directory of each listed container's
// writable layer: the upper directory of an overlay (what containerd's
// overlay snapshotter measures for Usage), the source of a bind mount
// (the native snapshotter's whole copy, which its Usage measures too).
// Each is asked of the snapshotter once and kept while the container
// exists; "" leaves the container to the snapshotter's Usage.
func (r *Runtime) writableLayerDirs(ctx context.Context, snapshotter snapshots.Snapshotter, list []containers.Container) map[string]string {
	r.mu.Lock()
	known := r.layerDirs
	r.mu.Unlock()
	dirs := make(map[string]string, len(list))
	for _, info := range list {
		if info.SnapshotKey == "" {
			continue
		}
		dir, ok := known[info.ID]
		if !ok {
			mounts, err := snapshotter.Mounts(ctx, info.SnapshotKey)
			if err != nil {
				continue // asked again next time
			}
			dir = writableDir(mounts)
		}
		dirs[info.ID] = dir
	}
	r.mu.Lock()
	r.layerDirs = dirs // the containers gone are forgotten
	r.mu.Unlock()
	return dirs
}

// writableDir is the directory a snapshot's mounts write to, "" when
// they do not name one (a snapshotter other than overlayfs and native).
func writableDir(mounts []mount.Mount) string {
	if len(mounts) != 1 {
		return ""
	}
	m := mounts[0]
	switch m.Type {
	case "overlay":
		for _, o := range m.Options {
			if dir, ok := strings.CutPrefix(o, "upperdir="); ok {
				return dir
			}
		}
	case "bind":
		return m.Source
	}
	return ""
}

// cgroupStats is what one container's cgroup tells.
type cgroupStats struct {
	workingSet, memory, tasks uint64
	cpuNanos                  uint64 // cumulative CPU time, core-nanoseconds
	populated                 bool   // a process is in it: the container runs
}

// readCgroup reads a cgroup's usage under root (/sys/fs/cgroup): the
// memory working set (usage less inactive file pages, as cAdvisor
// computes it), the whole memory usage, the task count and the
// cumulative CPU time, from cgroup v2 files (memory.current, cpu.stat's
// usage_usec) or else v1's (memory.usage_in_bytes, cpuacct.usage in
// nanoseconds), and whether a process is in it (v2's cgroup.events
// "populated 1", v1's memory cgroup.procs). Zero when the cgroup is gone
// (an exited container).
func readCgroup(root, rel string) cgroupStats {
	var s cgroupStats
	v2 := filepath.Join(root, rel)
	usageFile, statFile, inactiveKey := filepath.Join(v2, "memory.current"), filepath.Join(v2, "memory.stat"), "inactive_file"
	pidsFile := filepath.Join(v2, "pids.current")
	if _, err := os.Stat(usageFile); err == nil {
		s.cpuNanos = statValue(filepath.Join(v2, "cpu.stat"), "usage_usec") * 1000
		s.populated = statValue(filepath.Join(v2, "cgroup.events"), "populated") == 1
	} else {
		v1 := filepath.Join(root, "memory", rel)
		usageFile, statFile, inactiveKey = filepath.Join(v1, "memory.usage_in_bytes"), filepath.Join(v1, "memory.stat"), "total_inactive_file"
		pidsFile = filepath.Join(root, "pids", rel, "pids.current")
		if procs, err := os.ReadFile(filepath.Join(v1, "cgroup.procs")); err == nil {
			s.populated = len(strings.TrimSpace(string(procs))) > 0
		}
		s.cpuNanos = readUint(filepath.Join(root, "cpuacct", rel, "cpuacct.usage"))
		if s.cpuNanos == 0 { // some hosts mount cpu and cpuacct together
			s.cpuNanos = readUint(filepath.Join(root, "cpu,cpuacct", rel, "cpuacct.usage"))
		}
	}
	s.memory = readUint(usageFile)
	if inactive := statValue(statFile, inactiveKey); inactive < s.memory {
		s.workingSet = s.memory - inactive
	}
	s.tasks = readUint(pidsFile)
	return s
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
