package eviction

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ReadNodeStats reads the node's signals from the host: memory from the
// root memory cgroup (v1) or /proc/meminfo, the filesystem of rootDir
// with statfs, and tasks from /proc/sys/kernel and /proc/loadavg. A
// signal that cannot be read is left zero (not observed); the error says
// which.
func ReadNodeStats(rootDir string) (NodeStats, error) {
	var n NodeStats
	var errs []string
	if err := readMemory(&n); err != nil {
		errs = append(errs, err.Error())
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(rootDir, &fs); err != nil {
		errs = append(errs, fmt.Sprintf("statfs %s: %v", rootDir, err))
	} else {
		n.NodeFsCapacityBytes = int64(fs.Blocks) * fs.Bsize
		n.NodeFsAvailableBytes = int64(fs.Bavail) * fs.Bsize
		n.NodeFsInodes, n.NodeFsInodesFree = int64(fs.Files), int64(fs.Ffree)
	}
	if err := readTasks(&n); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return n, fmt.Errorf("reading node stats: %s", strings.Join(errs, "; "))
	}
	return n, nil
}

// readMemory computes the working set as the kubelet's documentation
// does: usage minus inactive file pages. Usage is the root memory
// cgroup's under cgroup v1 (it includes the page cache), else MemTotal
// minus MemFree; capacity is MemTotal.
func readMemory(n *NodeStats) error {
	info, err := readKeyValues("/proc/meminfo", ":")
	if err != nil {
		return err
	}
	kb := func(key string) int64 {
		v, _ := strconv.ParseInt(strings.TrimSuffix(info[key], " kB"), 10, 64)
		return v * 1024
	}
	n.MemoryCapacityBytes = kb("MemTotal")
	if n.MemoryCapacityBytes == 0 {
		return fmt.Errorf("/proc/meminfo has no MemTotal")
	}
	usage, inactive := n.MemoryCapacityBytes-kb("MemFree"), kb("Inactive(file)")
	if b, err := os.ReadFile("/sys/fs/cgroup/memory/memory.usage_in_bytes"); err == nil {
		if stat, err := readKeyValues("/sys/fs/cgroup/memory/memory.stat", " "); err == nil {
			usage, _ = strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
			inactive, _ = strconv.ParseInt(stat["total_inactive_file"], 10, 64)
		}
	}
	n.MemoryWorkingSetBytes = max(0, usage-inactive)
	return nil
}

// readTasks reads the task limit, the smaller of kernel.pid_max and
// kernel.threads-max, and the tasks that exist (the denominator of the
// fourth field of /proc/loadavg, "running/total").
func readTasks(n *NodeStats) error {
	for _, f := range []string{"/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"} {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		v, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if n.MaxPID == 0 || v < n.MaxPID {
			n.MaxPID = v
		}
	}
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return err
	}
	fields := strings.Fields(string(b))
	if len(fields) < 4 {
		return fmt.Errorf("/proc/loadavg: unexpected %q", b)
	}
	_, total, ok := strings.Cut(fields[3], "/")
	if !ok {
		return fmt.Errorf("/proc/loadavg: unexpected %q", b)
	}
	n.RunningProcesses, err = strconv.ParseInt(total, 10, 64)
	return err
}

// readKeyValues reads "key<sep>value" lines.
func readKeyValues(path, sep string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), sep); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out, sc.Err()
}
