// Package reset removes what minik nodes left on a host, as kubeadm reset
// and k3s-killall.sh do: a host that ran one cluster can run another.
//
//	containerd (each address that answers; a data dir's own containerd is
//	started for the clean-up when it is not running)
//	   └─ every namespace minik-*: kill each task, delete it and its container
//	shims of a minik-* namespace that run no container: killed
//	mounts under the run root (/run/minik), /var/lib/minik and the data dir
//	   └─ unmounted deepest first (netns handles, tmpfs volumes, the run root)
//	links: veths on a minik bridge, then the bridges mk<8 hex>
//	iptables: every rule commented "minik pods" (filter and nat)
//	nftables: the node proxy's table `ip minik-proxy`
//	routes: the host-gw routes (proto 203)
//	--data-dir: its files
//
// Each step reads what is there and removes what is minik's: running it
// twice is harmless. The parsing of what the tools print is pure (this
// file) and table-tested.
package reset

import (
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"minik/internal/mountinfo"
)

// BridgeName matches the node bridges the containerd runtime makes.
var BridgeName = regexp.MustCompile(`^mk[0-9a-f]{8}$`)

// CNINetwork is the name of the nodes' CNI network (the bridge and
// portmap plugins' configuration).
const CNINetwork = "minik"

// IPTablesComment marks the rules the containerd runtime adds.
const IPTablesComment = "minik pods"

// NamespacePrefix starts every containerd namespace of a minik node.
const NamespacePrefix = "minik-"

// ProxyTable is the node proxy's nftables table (family ip).
const ProxyTable = "minik-proxy"

// IPTablesDeletes turns the output of `iptables -S` into the argument
// lists of `iptables -D` for every rule carrying IPTablesComment, and of
// the portmap plugin's jumps to the per-pod CNI-DN- chains of minik's
// network, followed by `-F` and `-X` of those chains.
func IPTablesDeletes(rules string) [][]string {
	var out, chains [][]string
	for _, line := range strings.Split(rules, "\n") {
		if !strings.HasPrefix(line, "-A ") {
			continue
		}
		args := splitQuoted(line)
		switch {
		case strings.Contains(line, `--comment "`+IPTablesComment+`"`):
		case args[1] == "CNI-HOSTPORT-DNAT" && slices.ContainsFunc(args, isPortmapComment):
			// The portmap plugin's jump to a pod's own chain of host
			// ports; the chain goes after it (CNI DEL would have removed
			// both, but a reset kills pods without it).
			if i := slices.Index(args, "-j"); i > 0 && i+1 < len(args) && strings.HasPrefix(args[i+1], "CNI-DN-") {
				chains = append(chains, []string{"-F", args[i+1]}, []string{"-X", args[i+1]})
			}
		default:
			continue
		}
		args[0] = "-D"
		out = append(out, args)
	}
	return append(out, chains...)
}

// isPortmapComment matches the comment the portmap plugin puts on a
// pod's host-port rules for minik's network: dnat name: "minik" id: "…".
func isPortmapComment(word string) bool {
	return strings.HasPrefix(word, `dnat name: "`+CNINetwork+`" id: `)
}

// splitQuoted splits an iptables -S line into words, a double-quoted
// string being one word without its quotes.
func splitQuoted(s string) []string {
	var out []string
	var cur strings.Builder
	inQuote, have := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && inQuote && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case c == '"':
			inQuote, have = !inQuote, true
		case c == ' ' && !inQuote:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(c)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}

// MountsUnder returns the mount points of mountinfo (the text of
// /proc/self/mountinfo) at or below any of roots, deepest first, so that
// each can be unmounted before what holds it.
func MountsUnder(info string, roots []string) []string {
	var out []string
	for _, mp := range mountinfo.Points(info) {
		for _, r := range roots {
			r = strings.TrimRight(r, "/")
			if r != "" && (mp == r || strings.HasPrefix(mp, r+"/")) {
				out = append(out, mp)
				break
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return slices.Compact(out)
}

// Link is a network link as `ip -j link show` reports it.
type Link struct {
	Name   string `json:"ifname"`
	Master string `json:"master"`
	Info   struct {
		Kind string `json:"info_kind"`
	} `json:"linkinfo"`
}

// LinkDeletes returns the links to delete, in order: the links attached to
// a minik bridge (pod veths whose pod is gone), then the bridges.
func LinkDeletes(links []Link) []string {
	var ports, bridges []string
	for _, l := range links {
		switch {
		case BridgeName.MatchString(l.Master):
			ports = append(ports, l.Name)
		case BridgeName.MatchString(l.Name) && (l.Info.Kind == "bridge" || l.Info.Kind == ""):
			bridges = append(bridges, l.Name)
		}
	}
	return append(ports, bridges...)
}

// CgroupRemovals orders the cgroup directories under the minik parents
// for removal, deepest first: everything under a cleaned namespace's
// cgroup (minik/NAMESPACE/...), and with all set, every directory under
// the parents and the parents themselves.
func CgroupRemovals(dirs, parents []string, cleaned map[string]bool, all bool) []string {
	var out []string
	for _, d := range dirs {
		for _, p := range parents {
			rel, err := filepath.Rel(p, d)
			if err != nil || strings.HasPrefix(rel, "..") {
				continue
			}
			ns, _, _ := strings.Cut(rel, string(filepath.Separator))
			if all || (rel != "." && cleaned[ns]) {
				out = append(out, d)
			}
			break
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		return strings.Count(out[i], string(filepath.Separator)) > strings.Count(out[j], string(filepath.Separator))
	})
	return out
}

// ShimNamespace returns the containerd namespace a shim process serves,
// from its command line (/proc/PID/cmdline split at NULs): a
// containerd-shim* binary with "-namespace NS". ok is false for any other
// process.
func ShimNamespace(cmdline []string) (ns string, ok bool) {
	return shimFlag(cmdline, "namespace")
}

// shimFlag returns the value of a shim's flag (-name VALUE), if cmdline
// is a shim's.
func shimFlag(cmdline []string, name string) (string, bool) {
	if len(cmdline) == 0 || !strings.HasPrefix(filepath.Base(cmdline[0]), "containerd-shim") {
		return "", false
	}
	for i, arg := range cmdline[:len(cmdline)-1] {
		if arg == "-"+name || arg == "--"+name {
			return cmdline[i+1], true
		}
	}
	return "", false
}

// OrphanShims returns, of the shims serving a namespace that matches,
// those no containerd will ever ask to delete their task, and the
// processes those run (their containers' first processes), to be killed
// first:
//   - a shim without a child: its container is gone and its containerd was
//     stopped, or its state removed, before it deleted the task; the shim
//     waits for that delete forever;
//   - a shim whose containerd's directory (that of its -address socket) is
//     gone: the data dir was removed while its containers ran, so no
//     containerd can reach them or adopt them again.
//
// procs maps each PID to its parent PID and command line; dirExists
// tells whether a directory exists.
func OrphanShims(procs map[int]Proc, matches func(ns string) bool, dirExists func(string) bool) (shims, containers []int) {
	children := map[int][]int{}
	for pid, p := range procs {
		children[p.PPID] = append(children[p.PPID], pid)
	}
	for pid, p := range procs {
		ns, ok := ShimNamespace(p.Cmdline)
		if !ok || !matches(ns) {
			continue
		}
		address, _ := shimFlag(p.Cmdline, "address")
		switch {
		case len(children[pid]) == 0:
			shims = append(shims, pid)
		case address != "" && !dirExists(filepath.Dir(address)):
			shims = append(shims, pid)
			containers = append(containers, children[pid]...)
		}
	}
	sort.Ints(shims)
	sort.Ints(containers)
	return shims, containers
}

// Proc is what OrphanShims reads of a process.
type Proc struct {
	PPID    int
	Cmdline []string
}
