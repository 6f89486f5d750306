package reset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/namespaces"
	"golang.org/x/sys/unix"

	"minik/hostgw"
	ctdrt "minik/kubelet/runtime/containerd"
)

// Options says where to look. Zero values take the defaults.
type Options struct {
	// ContainerdAddresses are containerds to clean besides the system one
	// (ctdrt.DefaultAddress, when it answers) and those of the data dirs.
	ContainerdAddresses []string
	// OnlyTheseContainerds limits the clean-up to ContainerdAddresses (no
	// system containerd, no data dir's): for tests on a shared host.
	OnlyTheseContainerds bool
	// DataDir, if set, is a `minik up` data dir (or a kubelet root dir):
	// its containerd is cleaned too (started for it if need be), then its
	// files are removed.
	DataDir string
	// RunRoot is the run directory. Default ctdrt.RunRoot (/run/minik).
	RunRoot string
	// CgroupRoot is where the cgroup file systems are mounted. Default
	// /sys/fs/cgroup.
	CgroupRoot string
	// KubeletRoot is where `minik kubelet` keeps node dirs by default; its
	// mounts are undone and its nodes' containerds cleaned, its files
	// kept. Default /var/lib/minik.
	KubeletRoot string
	Logger      *slog.Logger
}

// Run removes what minik nodes left; it goes on past errors and returns
// them all.
func Run(ctx context.Context, o Options) error {
	if o.RunRoot == "" {
		o.RunRoot = ctdrt.RunRoot
	}
	if o.KubeletRoot == "" {
		o.KubeletRoot = "/var/lib/minik"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.DataDir != "" {
		abs, err := filepath.Abs(o.DataDir)
		if err != nil {
			return err
		}
		o.DataDir = abs
	}
	log := o.Logger
	var errs []error
	cleaned := map[string]bool{} // containerd namespaces, one per node
	errs = append(errs, cleanContainerds(ctx, o, log, cleaned)...)
	if !o.OnlyTheseContainerds {
		// Shims whose containerd state is gone (a data dir removed by
		// hand while they ran) are out of every containerd's reach.
		errs = append(errs, killOrphanShims(log, func(ns string) bool { return strings.HasPrefix(ns, NamespacePrefix) })...)
	}
	errs = append(errs, removeCgroups(o, cleaned, log)...)
	roots := []string{o.RunRoot, o.KubeletRoot}
	if o.DataDir != "" {
		roots = append(roots, o.DataDir)
	}
	// Hollow nodes keep their pod dirs in /dev/shm (hollow.Run); a hollow
	// process that was killed leaves them, with the volume mounts of an
	// older minik.
	hollowDirs, _ := filepath.Glob("/dev/shm/minik-hollow-*")
	roots = append(roots, hollowDirs...)
	errs = append(errs, unmountAll(roots, log)...)
	for _, dir := range append([]string{filepath.Join(o.RunRoot, "node"), filepath.Join(o.RunRoot, "runc"), filepath.Join(o.RunRoot, "containerd")}, hollowDirs...) {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, deleteLinks(ctx, log)...)
	errs = append(errs, deleteIPTablesRules(ctx, log)...)
	if err := deleteProxyTable(ctx, log); err != nil {
		errs = append(errs, err)
	}
	if out, err := exec.CommandContext(ctx, "ip", "route", "flush", "proto", strconv.Itoa(hostgw.Protocol)).CombinedOutput(); err != nil {
		errs = append(errs, fmt.Errorf("flushing the host-gw routes: %v: %s", err, strings.TrimSpace(string(out))))
	}
	if o.DataDir != "" {
		if err := os.RemoveAll(o.DataDir); err != nil {
			errs = append(errs, err)
		} else {
			log.Info("removed the data dir", "dir", o.DataDir)
		}
	}
	return errors.Join(errs...)
}

// containerdDirs are the containerd dirs StartDaemon may have used: the
// data dir's (minik up) and each node dir's (minik kubelet).
func containerdDirs(o Options) []string {
	var dirs []string
	for _, base := range []string{o.DataDir, filepath.Join(o.KubeletRoot, "kubelet")} {
		if base == "" {
			continue
		}
		dirs = append(dirs, filepath.Join(base, "containerd"))
		matches, _ := filepath.Glob(filepath.Join(base, "kubelet", "*", "containerd"))
		dirs = append(dirs, matches...)
		matches, _ = filepath.Glob(filepath.Join(base, "*", "containerd"))
		dirs = append(dirs, matches...)
	}
	return dirs
}

func cleanContainerds(ctx context.Context, o Options, log *slog.Logger, cleaned map[string]bool) []error {
	var errs []error
	addrs := append([]string{}, o.ContainerdAddresses...)
	if o.OnlyTheseContainerds {
		return cleanAll(ctx, addrs, log, cleaned)
	}
	if ctdrt.Answers(ctx, ctdrt.DefaultAddress, 2*time.Second) {
		addrs = append(addrs, ctdrt.DefaultAddress)
	}
	for _, dir := range containerdDirs(o) {
		if _, err := os.Stat(filepath.Join(dir, "root")); err != nil {
			continue
		}
		if sock := ctdrt.SocketFor(dir); ctdrt.Answers(ctx, sock, time.Second) {
			addrs = append(addrs, sock)
			continue
		}
		// Its containerd stopped with minik, but the shims and their
		// containers run on: start it to stop them.
		d, err := ctdrt.StartDaemon(ctx, dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("starting the containerd of %s to clean it: %w", dir, err))
			continue
		}
		defer d.Stop()
		addrs = append(addrs, d.Address)
	}
	return append(errs, cleanAll(ctx, addrs, log, cleaned)...)
}

func cleanAll(ctx context.Context, addrs []string, log *slog.Logger, cleaned map[string]bool) []error {
	var errs []error
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] {
			continue
		}
		seen[a] = true
		errs = append(errs, cleanContainerd(ctx, a, log, cleaned)...)
	}
	return errs
}

// cleanContainerd kills and deletes every container of every minik
// namespace of the containerd at addr. Images stay.
func cleanContainerd(ctx context.Context, addr string, log *slog.Logger, cleaned map[string]bool) []error {
	c, err := containerd.New(addr, containerd.WithTimeout(10*time.Second))
	if err != nil {
		return []error{fmt.Errorf("containerd %s: %w", addr, err)}
	}
	defer c.Close()
	nss, err := c.NamespaceService().List(ctx)
	if err != nil {
		return []error{fmt.Errorf("containerd %s: listing namespaces: %w", addr, err)}
	}
	var errs []error
	for _, ns := range nss {
		if !strings.HasPrefix(ns, NamespacePrefix) {
			continue
		}
		nctx := namespaces.WithNamespace(ctx, ns)
		ctrs, err := c.Containers(nctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("namespace %s: %w", ns, err))
			continue
		}
		for _, ctr := range ctrs {
			if err := deleteContainer(nctx, ctr); err != nil {
				errs = append(errs, fmt.Errorf("namespace %s, container %s: %w", ns, ctr.ID(), err))
			}
		}
		cleaned[ns] = true
		log.Info("removed a node's containers", "containerd", addr, "namespace", ns, "containers", len(ctrs))
	}
	return errs
}

func deleteContainer(ctx context.Context, ctr containerd.Container) error {
	task, err := ctr.Task(ctx, nil)
	if err == nil {
		wait, werr := task.Wait(ctx)
		if err := task.Kill(ctx, syscall.SIGKILL, containerd.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("kill: %w", err)
		}
		if werr == nil {
			select {
			case <-wait:
			case <-time.After(10 * time.Second):
			}
		}
		if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("delete task: %w", err)
		}
	} else if !errdefs.IsNotFound(err) {
		return fmt.Errorf("task: %w", err)
	}
	if err := ctr.Delete(ctx, containerd.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		// A snapshot already gone must not keep the record.
		if err2 := ctr.Delete(ctx); err2 != nil && !errdefs.IsNotFound(err2) {
			return fmt.Errorf("delete: %w", err)
		}
	}
	return nil
}

// killOrphanShims kills the shims of the matching namespaces that run no
// container (OrphanShims).
func killOrphanShims(log *slog.Logger, matches func(ns string) bool) []error {
	procs, err := readProcs()
	if err != nil {
		return []error{err}
	}
	dirExists := func(dir string) bool {
		fi, err := os.Stat(dir)
		return err == nil && fi.IsDir()
	}
	shims, containers := OrphanShims(procs, matches, dirExists)
	var errs []error
	// A container's first process is its PID namespace's init: killing it
	// ends every process of the container.
	for _, pid := range containers {
		if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("killing container process %d: %w", pid, err))
			continue
		}
		log.Info("killed a container no containerd can reach", "pid", pid, "shim", procs[pid].PPID)
	}
	for _, pid := range shims {
		ns, _ := ShimNamespace(procs[pid].Cmdline)
		if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("killing shim %d of namespace %s: %w", pid, ns, err))
			continue
		}
		log.Info("killed a shim no containerd will delete", "pid", pid, "namespace", ns)
	}
	return errs
}

// readProcs reads each process's parent and command line from /proc.
func readProcs() (map[int]Proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	procs := map[int]Proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err1 := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		cmdline, err2 := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err1 != nil || err2 != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		procs[pid] = Proc{PPID: ppid, Cmdline: strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")}
	}
	return procs, nil
}

// removeCgroups removes the nodes' emptied cgroups: runc removes a
// container's own, but not the minik/NAMESPACE parents it made them
// under (in every v1 hierarchy, or once in v2). Only empty cgroups can
// be removed, so a cgroup still in use anywhere stays. With
// OnlyTheseContainerds, only the cleaned namespaces' are touched.
func removeCgroups(o Options, cleaned map[string]bool, log *slog.Logger) []error {
	root := o.CgroupRoot
	if root == "" {
		root = "/sys/fs/cgroup"
	}
	var parents []string
	for _, pattern := range []string{filepath.Join(root, ctdrt.CgroupParent), filepath.Join(root, "*", ctdrt.CgroupParent)} {
		m, _ := filepath.Glob(pattern)
		parents = append(parents, m...)
	}
	var dirs []string
	for _, parent := range parents {
		_ = filepath.WalkDir(parent, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
	}
	var errs []error
	for _, dir := range CgroupRemovals(dirs, parents, cleaned, !o.OnlyTheseContainerds) {
		if err := unix.Rmdir(dir); err != nil {
			if !errors.Is(err, unix.EBUSY) && !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("rmdir %s: %w", dir, err))
			}
			continue
		}
		log.Debug("removed a cgroup", "path", dir)
	}
	return errs
}

func unmountAll(roots []string, log *slog.Logger) []error {
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, mp := range MountsUnder(string(info), roots) {
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err))
			continue
		}
		log.Debug("unmounted", "path", mp)
	}
	return errs
}

func deleteLinks(ctx context.Context, log *slog.Logger) []error {
	out, err := exec.CommandContext(ctx, "ip", "-d", "-j", "link", "show").Output()
	if err != nil {
		return []error{fmt.Errorf("ip link show: %w", err)}
	}
	var links []Link
	if err := json.Unmarshal(out, &links); err != nil {
		return []error{fmt.Errorf("ip link show: %w", err)}
	}
	var errs []error
	for _, name := range LinkDeletes(links) {
		if out, err := exec.CommandContext(ctx, "ip", "link", "del", name).CombinedOutput(); err != nil {
			if !strings.Contains(string(out), "Cannot find device") {
				errs = append(errs, fmt.Errorf("ip link del %s: %v: %s", name, err, strings.TrimSpace(string(out))))
			}
			continue
		}
		log.Info("removed a link", "link", name)
	}
	return errs
}

func deleteIPTablesRules(ctx context.Context, log *slog.Logger) []error {
	if _, err := exec.LookPath("iptables"); err != nil {
		return nil
	}
	var errs []error
	for _, table := range []string{"filter", "nat"} {
		out, err := exec.CommandContext(ctx, "iptables", "-w", "-t", table, "-S").Output()
		if err != nil {
			errs = append(errs, fmt.Errorf("iptables -t %s -S: %w", table, err))
			continue
		}
		for _, rule := range IPTablesDeletes(string(out)) {
			args := append([]string{"-w", "-t", table}, rule...)
			if out, err := exec.CommandContext(ctx, "iptables", args...).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out))))
				continue
			}
			log.Info("removed an iptables rule", "table", table, "rule", strings.Join(rule[1:], " "))
		}
	}
	return errs
}

func deleteProxyTable(ctx context.Context, log *slog.Logger) error {
	if _, err := exec.LookPath("nft"); err != nil {
		return nil
	}
	if exec.CommandContext(ctx, "nft", "list", "table", "ip", ProxyTable).Run() != nil {
		return nil // not there
	}
	if out, err := exec.CommandContext(ctx, "nft", "delete", "table", "ip", ProxyTable).CombinedOutput(); err != nil {
		return fmt.Errorf("nft delete table ip %s: %v: %s", ProxyTable, err, strings.TrimSpace(string(out)))
	}
	log.Info("removed the node proxy's nftables table", "table", "ip "+ProxyTable)
	return nil
}
