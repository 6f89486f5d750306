// Package benchkit holds what the benchmarks under test/bench share: the
// minik binary, processes started from it and what they use (CPU time,
// RSS, PSS), a control plane of separate processes on loopback, the
// apiserver's request latencies from its own metrics, and the JSON line
// each figure is printed as.
package benchkit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"minik/internal/testcluster"
)

// ModuleRoot is the directory of the minik module above the working
// directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(data, []byte("module minik\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run me inside the minik module (no go.mod with `module minik` above the working directory)")
		}
		dir = parent
	}
}

// Binary returns bin, or else bin/minik of the module, built as `make
// build` does if it is missing.
func Binary(bin string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	bin = filepath.Join(root, "bin", "minik")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	fmt.Fprintln(os.Stderr, "building", bin)
	cmd := testcluster.BuildCommand(root, bin)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return bin, cmd.Run()
}

// TempDir makes a directory for one run, and returns the function that
// removes it, unless keep (then it says where it is).
func TempDir(prefix string, keep bool) (string, func(), error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	if keep {
		fmt.Fprintln(os.Stderr, "data dir (kept):", dir)
		return dir, func() {}, nil
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// Proc is a process a benchmark started, its output in a log file. It is
// killed if the benchmark dies.
type Proc struct {
	Name    string
	Started time.Time
	Log     string
	cmd     *exec.Cmd
	done    chan struct{}
}

// Start runs bin with args, its output to logPath.
func Start(name, bin, logPath string, args ...string) (*Proc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p := &Proc{Name: name, Log: logPath, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p.Started = time.Now()
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); logf.Close(); close(p.done) }()
	return p, nil
}

// PID is the process's id.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Stop interrupts the process as Ctrl-C does, and kills it after 20s.
func (p *Proc) Stop() {
	testcluster.StopProcess(p.cmd.Process, p.done, os.Interrupt, 20*time.Second)
}

// CPU is the process's CPU time so far (user + system, its reaped
// children's included), from /proc/PID/stat in 10ms ticks.
func (p *Proc) CPU() time.Duration { return ProcCPU(p.PID()) }

// ProcCPU is CPU for any process.
func ProcCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	var ticks int64
	for _, i := range []int{11, 12, 13, 14} {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += v
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// MemMB reads a "Key:   N kB" field of /proc/PID/FILE in MB: VmRSS and
// VmHWM (peak RSS) of status, Pss of smaps_rollup.
func MemMB(pid int, file, key string) float64 {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(v), "%f", &kb)
			return kb / 1024
		}
	}
	return 0
}

// RSSMB is the process's resident set now, PeakRSSMB its highest so far.
func (p *Proc) RSSMB() float64     { return MemMB(p.PID(), "status", "VmRSS") }
func (p *Proc) PeakRSSMB() float64 { return MemMB(p.PID(), "status", "VmHWM") }

// FindProcs returns the processes whose command line contains all of
// words.
func FindProcs(words ...string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		line := strings.ReplaceAll(string(cmd), "\x00", " ")
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			pids = append(pids, pid)
		}
	}
	return pids
}
