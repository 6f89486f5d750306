package containerd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"minik/proto/cri"
)

// podNetwork gives each pod's network namespace an eth0 on the node's
// bridge (bridge.go, in-process) and, for hostPorts, runs Debian's CNI
// portmap plugin (the CNI protocol is "exec the plugin with env and JSON
// on stdin"). lo is set up by newNetNS itself.
type podNetwork struct {
	binDir string // where the CNI plugins are, e.g. /usr/lib/cni
	bridge string // the node's bridge device
	ipam   hostLocal

	// host is a netlink socket in the node's network namespace, kept for
	// the per-pod calls on the host side: the package's functions open and
	// close one per call.
	hostMu     sync.Mutex
	host       *netlink.Handle
	hostClosed bool

	bridgeMu   sync.Mutex
	bridgeLink netlink.Link // the bridge ensureBridge last checked, or nil
	bridgeCIDR netip.Prefix // and for which range

	// mu serializes portmap runs: its iptables calls take the xtables
	// lock, which polls once a second when contended, far slower than a
	// queue.
	mu        sync.Mutex
	forwardMu sync.Mutex
	forwarded map[string]bool // pod ranges with their iptables rules
}

// newPodNetwork is the network of a node's pods; runDir keeps their
// addresses.
func newPodNetwork(binDir, runDir, bridge string) *podNetwork {
	return &podNetwork{binDir: binDir, bridge: bridge, ipam: hostLocal{dir: filepath.Join(runDir, "ipam", "minik")}}
}

// hostLinks is the node's netlink handle (route family only), opened on
// first use by a thread in the node's namespace, as every thread that is
// not locked is (one that enters a pod's namespace is never given back).
func (n *podNetwork) hostLinks() (*netlink.Handle, error) {
	n.hostMu.Lock()
	defer n.hostMu.Unlock()
	if n.hostClosed {
		return nil, errors.New("the pod network is closed")
	}
	if n.host == nil {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return nil, fmt.Errorf("opening a netlink socket: %w", err)
		}
		n.host = h
	}
	return n.host, nil
}

// close closes the node's netlink handle; hostLinks fails from then on.
func (n *podNetwork) close() {
	n.hostMu.Lock()
	defer n.hostMu.Unlock()
	if n.host != nil {
		n.host.Close()
		n.host = nil
	}
	n.hostClosed = true
}

const cniVersion = "0.4.0"

type portMapping struct {
	HostPort      int32  `json:"hostPort"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP,omitempty"`
}

func (n *podNetwork) portmapConf(ports []*cri.PortMapping, prev json.RawMessage) map[string]any {
	var pm []portMapping
	for _, p := range ports {
		if p.HostPort == 0 {
			continue
		}
		proto := strings.ToLower(p.Protocol)
		if proto == "" {
			proto = "tcp"
		}
		pm = append(pm, portMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: proto, HostIP: p.HostIp})
	}
	conf := map[string]any{
		"cniVersion": cniVersion, "name": "minik", "type": "portmap",
		"capabilities":  map[string]bool{"portMappings": true},
		"runtimeConfig": map[string]any{"portMappings": pm},
		"snat":          true,
	}
	if prev != nil {
		conf["prevResult"] = prev
	}
	return conf
}

func hasHostPorts(ports []*cri.PortMapping) bool {
	for _, p := range ports {
		if p.HostPort != 0 {
			return true
		}
	}
	return false
}

// allowForward lets the bridge's traffic through the FORWARD chain, whose
// policy Docker sets to DROP, with one rule per direction for the node
// (instead of per-pod rules, which cost several iptables runs per pod).
// Without iptables there is nothing to allow.
// The pod range is masqueraded the same way, once per range, rather than
// by the bridge plugin's ipMasq, which adds a chain per pod.
func (n *podNetwork) allowForward(ctx context.Context, cidr string) {
	n.forwardMu.Lock()
	defer n.forwardMu.Unlock()
	if n.forwarded == nil {
		n.forwarded = map[string]bool{}
	}
	if n.forwarded[cidr] {
		return
	}
	n.forwarded[cidr] = true
	removeStaleBridges(ctx, n.bridge, cidr)
	if _, err := exec.LookPath("iptables"); err != nil {
		return
	}
	for _, rule := range nodeRules(n.bridge, cidr) {
		if exec.CommandContext(ctx, "iptables", append([]string{"-w", "-C"}, rule...)...).Run() == nil {
			continue
		}
		_ = exec.CommandContext(ctx, "iptables", append([]string{"-w", "-I"}, rule...)...).Run()
	}
}

// nodeRules are the iptables rules a node's pod network needs: forwarding
// through its bridge, and masquerading of its pod range (if known).
func nodeRules(bridge, cidr string) [][]string {
	comment := []string{"-m", "comment", "--comment", "minik pods"}
	rules := [][]string{
		append([]string{"FORWARD", "-i", bridge, "-j", "ACCEPT"}, comment...),
		append([]string{"FORWARD", "-o", bridge, "-j", "ACCEPT"}, comment...),
	}
	if cidr != "" {
		rules = append(rules, append([]string{"POSTROUTING", "-t", "nat", "-s", cidr, "!", "-d", cidr, "-j", "MASQUERADE"}, comment...))
	}
	return rules
}

// RemoveNodeNetwork deletes what a node's pod network leaves on the host
// when the node goes away for good: its bridge and its iptables rules.
// (A kubelet that merely stops keeps them, as its pods keep running.)
func RemoveNodeNetwork(namespace, cidr string) {
	bridge := BridgeName(namespace)
	_ = exec.Command("ip", "link", "del", bridge).Run()
	for _, r := range nodeRules(bridge, cidr) {
		// -D removes one copy; repeat in case earlier runs added several.
		for i := 0; i < 10 && exec.Command("iptables", append([]string{"-w", "-D"}, r...)...).Run() == nil; i++ {
		}
	}
}

// add attaches netns to the pod network and returns the pod IP and the
// CNI result (kept for del).
func (n *podNetwork) add(ctx context.Context, id, netns, cidr string, ports []*cri.PortMapping) (string, json.RawMessage, error) {
	if cidr == "" {
		return "", nil, fmt.Errorf("no pod CIDR: the node has no spec.podCIDR and no fallback range is configured")
	}
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return "", nil, fmt.Errorf("pod CIDR %q: %w", cidr, err)
	}
	n.allowForward(ctx, cidr)
	ip, res, err := n.attach(id, netns, prefix.Masked())
	if err != nil {
		return "", res, err
	}
	if hasHostPorts(ports) {
		n.mu.Lock()
		_, err := n.exec(ctx, "ADD", id, netns, podInterface, n.portmapConf(ports, res))
		n.mu.Unlock()
		if err != nil {
			return "", res, err
		}
	}
	return ip.String(), res, nil
}

// del detaches netns and frees its IP; it succeeds when nothing is left.
func (n *podNetwork) del(ctx context.Context, id, netns string, ports []*cri.PortMapping, prev json.RawMessage) error {
	var errs []string
	if hasHostPorts(ports) {
		n.mu.Lock()
		_, err := n.exec(ctx, "DEL", id, netns, podInterface, n.portmapConf(ports, prev))
		n.mu.Unlock()
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if err := n.detach(id, netns); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("pod network del: %s", strings.Join(errs, "; "))
	}
	return nil
}

func (n *podNetwork) exec(ctx context.Context, command, id, netns, ifname string, conf map[string]any) ([]byte, error) {
	plugin := conf["type"].(string)
	stdin, err := json.Marshal(conf)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(n.binDir, plugin))
	cmd.Env = append(os.Environ(),
		"CNI_COMMAND="+command, "CNI_CONTAINERID="+id, "CNI_NETNS="+netns,
		"CNI_IFNAME="+ifname, "CNI_PATH="+n.binDir)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	slog.Debug("cni", "plugin", plugin, "command", command, "id", id, "took", time.Since(start))
	if err != nil {
		return nil, fmt.Errorf("cni %s %s %s: %v: %s%s", plugin, command, ifname, err, strings.TrimSpace(stdout.String()), strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// removeStaleBridges deletes other nodes' bridges (named mk…) that carry
// an address of cidr and have no interface attached: left by a minik that
// is gone, they would make the pod range unroutable.
func removeStaleBridges(ctx context.Context, own, cidr string) {
	_, pods, err := net.ParseCIDR(cidr)
	if err != nil {
		return
	}
	links, err := net.Interfaces()
	if err != nil {
		return
	}
	for _, l := range links {
		if l.Name == own || !strings.HasPrefix(l.Name, "mk") {
			continue
		}
		if ports, err := os.ReadDir(filepath.Join("/sys/class/net", l.Name, "brif")); err != nil || len(ports) > 0 {
			continue // not a bridge, or in use
		}
		addrs, _ := l.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && pods.Contains(ipn.IP) {
				slog.Info("removing a stale pod bridge", "bridge", l.Name, "cidr", cidr)
				_ = exec.CommandContext(ctx, "ip", "link", "del", l.Name).Run()
				break
			}
		}
	}
}

// BridgeName is the bridge device of the node whose containerd namespace
// is ns.
func BridgeName(ns string) string { return bridgeName(ns) }

// bridgeGateway is the address the bridge plugin gives the node's bridge
// for cidr (isGateway, no explicit gateway): the range's first host.
func bridgeGateway(cidr netip.Prefix) netip.Prefix {
	return netip.PrefixFrom(cidr.Masked().Addr().Next(), cidr.Bits())
}

// staleBridgeAddrs returns the addresses of have that the node's bridge
// must lose to serve cidr: every IPv4 address but cidr's gateway (an
// earlier cluster's range, or a node name that came back with another
// podCIDR). The bridge plugin refuses a bridge that holds one ("bridge
// already has an IP address different from …"). IPv6 addresses (the
// link-local one) stay.
func staleBridgeAddrs(have []netip.Prefix, cidr netip.Prefix) []netip.Prefix {
	gw := bridgeGateway(cidr)
	var out []netip.Prefix
	for _, a := range have {
		if a.Addr().Is4() && a != gw {
			out = append(out, a)
		}
	}
	return out
}

// ready checks that pods can get a network on cidr: the plugins are
// installed, and the node's bridge, if it exists, holds no address of
// another range (removed here, so that the next sandbox succeeds).
func (n *podNetwork) ready(ctx context.Context, cidr string) error {
	if _, err := os.Stat(filepath.Join(n.binDir, "portmap")); err != nil {
		return fmt.Errorf("CNI plugin portmap (for hostPorts) not found in %s (Debian: containernetworking-plugins): %w", n.binDir, err)
	}
	if cidr == "" {
		return fmt.Errorf("no pod CIDR: the node has no spec.podCIDR and no fallback range is configured")
	}
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return fmt.Errorf("pod CIDR %q: %w", cidr, err)
	}
	return reconcileBridge(n.bridge, prefix.Masked())
}

// reconcileBridge removes from bridge (if it exists) the addresses
// staleBridgeAddrs names.
func reconcileBridge(bridge string, cidr netip.Prefix) error {
	br, err := netlink.LinkByName(bridge)
	if err != nil {
		return nil // not made yet: ensureBridge makes it with the right address
	}
	return removeStaleAddrs(br, cidr)
}

// removeStaleAddrs removes from the bridge br the addresses
// staleBridgeAddrs names.
func removeStaleAddrs(br netlink.Link, cidr netip.Prefix) error {
	addrs, err := netlink.AddrList(br, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("reading the addresses of bridge %s: %w", br.Attrs().Name, err)
	}
	var have []netip.Prefix
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			bits, _ := a.Mask.Size()
			have = append(have, netip.PrefixFrom(ip.Unmap(), bits))
		}
	}
	for _, a := range staleBridgeAddrs(have, cidr) {
		slog.Info("removing an address of another pod range from the node's bridge", "bridge", br.Attrs().Name, "address", a, "podCIDR", cidr)
		if err := netlink.AddrDel(br, &netlink.Addr{IPNet: ipNet(a)}); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
			return fmt.Errorf("bridge %s holds %s, not the gateway of the pod range %s, and it could not be removed: %w",
				br.Attrs().Name, a, cidr, err)
		}
	}
	return nil
}
