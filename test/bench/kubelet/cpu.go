package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"minik/test/bench/benchkit"
)

// A cpuMeter reads a cumulative CPU time; a measurement reports what it
// grew by, per pod. Together they say where a pod start's CPU goes:
//
//	host              the whole machine (/proc/stat)
//	up                minik up: apiserver and etcd
//	kubelet           the kubelet process itself
//	kubelet_children  what the kubelet ran and reaped: CNI's portmap for hostPorts (pods here have none)
//	containerd        the containerd daemon and the `shim start` runs it reaps
//	shims             the node's shims and what they reaped: runc
//
// What host has beyond the others ("other" in the report) is the
// kernel's own threads (network namespaces, veths), each container's
// process (runc's init in it, then the command), and the bench itself.
type cpuMeter struct {
	name string
	read func() time.Duration
}

// procTimes reads a process's CPU time from /proc/PID/stat: its own
// (utime, stime, with its exited threads') and that of its reaped
// children (cutime, cstime), each rounded down to a 10ms tick.
func procTimes(pid int) (self, children time.Duration) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	tick := func(i int) time.Duration {
		if i >= len(fields) {
			return 0
		}
		v, _ := strconv.ParseInt(fields[i], 10, 64)
		return time.Duration(v) * time.Second / 100 // USER_HZ
	}
	return tick(11) + tick(12), tick(13) + tick(14)
}

// procCPU is a process's CPU time with its reaped children's.
func procCPU(pid int) time.Duration {
	self, children := procTimes(pid)
	return self + children
}

// smallProcCPU is procCPU for a process that uses a few milliseconds, as
// a shim: the 10ms rounding of its own time would lose most of it, so
// that is summed to the nanosecond over its threads' schedstat (which
// misses threads that exited: a shim keeps its threads).
func smallProcCPU(pid int) time.Duration {
	_, children := procTimes(pid)
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue
		}
		ns, _, _ := strings.Cut(string(data), " ")
		v, _ := strconv.ParseInt(ns, 10, 64)
		children += time.Duration(v)
	}
	return children
}

// nodeMeters measures the processes of one node: the kubelet (pid),
// minik up (upPid), and runtimeMeters.
func nodeMeters(kubeletPid, upPid int, containerdDir, namespace string) []cpuMeter {
	return append([]cpuMeter{
		{"up", func() time.Duration { return procCPU(upPid) }},
		{"kubelet", func() time.Duration { self, _ := procTimes(kubeletPid); return self }},
		{"kubelet_children", func() time.Duration { _, ch := procTimes(kubeletPid); return ch }},
	}, runtimeMeters(containerdDir, namespace)...)
}

// runtimeMeters measures the machine, the containerd whose config is
// under containerdDir (none when the system's is used) and the shims of
// namespace.
func runtimeMeters(containerdDir, namespace string) []cpuMeter {
	ms := []cpuMeter{{"host", hostBusy}}
	if pids := benchkit.FindProcs("containerd", "--config", containerdDir); len(pids) == 1 {
		ms = append(ms, cpuMeter{"containerd", func() time.Duration { return procCPU(pids[0]) }})
	}
	shims := func() []int { return benchkit.FindProcs("containerd-shim", "-namespace "+namespace+" ") }
	ms = append(ms, cpuMeter{"shims", growth(shims, smallProcCPU)})
	return ms
}

// growth sums the CPU time (cpuOf) of the processes procs lists, each from when
// it was first seen (from zero for the ones that appeared since the first
// read): processes come and go.
func growth(procs func() []int, cpuOf func(pid int) time.Duration) func() time.Duration {
	first := map[int]time.Duration{}
	seen := false
	return func() time.Duration {
		var sum time.Duration
		for _, pid := range procs() {
			cpu := cpuOf(pid)
			if _, ok := first[pid]; !ok {
				if seen {
					first[pid] = 0
				} else {
					first[pid] = cpu
				}
			}
			sum += cpu - first[pid]
		}
		seen = true
		return sum
	}
}

// addCPU adds each meter's CPU time to the report r as NAME+suffix in
// ms, and what the machine spent beyond them as "other"+suffix.
func addCPU(r map[string]any, cpu map[string]time.Duration, suffix string) {
	other := cpu["host"]
	for who, d := range cpu {
		r[who+suffix] = round(float64(d.Microseconds()) / 1000)
		if who != "host" {
			other -= d
		}
	}
	r["other"+suffix] = round(float64(other.Microseconds()) / 1000)
}
