package containerd

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The pod's eth0 on the node's bridge is made here, in the kubelet's
// process, with netlink: what the CNI bridge plugin with host-local IPAM
// did for us (bridge with isGateway and hairpinMode, a veth per pod, an
// address from the pod range, a default route via the bridge), without
// the two process execs per pod that cost about 12 ms of CPU, a sixth of a
// whole pod start here (make bench-kubelet). Addresses are kept on disk
// in host-local's format, so pods started by an earlier minik keep theirs.

// podInterface is the pod's end of its veth.
const podInterface = "eth0"

// ensureBridge makes the node's bridge with the gateway address of cidr
// and sets it up, as the bridge plugin does on every ADD. A bridge that
// exists loses the addresses of other ranges (an earlier cluster's). The
// bridge checked last is kept, so a pod start does not look it up again:
// one deleted since is found when a veth cannot join it (forgetBridge).
func (n *podNetwork) ensureBridge(cidr netip.Prefix) (netlink.Link, error) {
	n.bridgeMu.Lock()
	defer n.bridgeMu.Unlock()
	if n.bridgeLink != nil && n.bridgeCIDR == cidr {
		return n.bridgeLink, nil // checked already, for this range
	}
	br, err := netlink.LinkByName(n.bridge)
	if err != nil {
		if !errors.As(err, &netlink.LinkNotFoundError{}) {
			return nil, fmt.Errorf("looking up bridge %s: %w", n.bridge, err)
		}
		attrs := netlink.NewLinkAttrs()
		attrs.Name, attrs.Flags = n.bridge, net.FlagUp
		if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: attrs}); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("creating bridge %s: %w", n.bridge, err)
		}
		if br, err = netlink.LinkByName(n.bridge); err != nil {
			return nil, fmt.Errorf("looking up bridge %s: %w", n.bridge, err)
		}
	}
	if br.Type() != "bridge" {
		return nil, fmt.Errorf("%s is a %s device, not a bridge", n.bridge, br.Type())
	}
	if err := removeStaleAddrs(br, cidr); err != nil {
		return nil, err
	}
	gw := bridgeGateway(cidr)
	if err := netlink.AddrAdd(br, &netlink.Addr{IPNet: ipNet(gw)}); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("giving bridge %s the pod range's gateway %s: %w", n.bridge, gw, err)
	}
	if err := netlink.LinkSetUp(br); err != nil {
		return nil, fmt.Errorf("setting bridge %s up: %w", n.bridge, err)
	}
	// Pods reach other nodes and the world through the host (isGateway).
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644); err != nil {
		return nil, fmt.Errorf("enabling IPv4 forwarding: %w", err)
	}
	n.bridgeLink, n.bridgeCIDR = br, cidr
	return br, nil
}

// forgetBridge drops br, if ensureBridge still keeps it, so that the next
// ensureBridge looks the bridge up (and makes it) again.
func (n *podNetwork) forgetBridge(br netlink.Link) {
	n.bridgeMu.Lock()
	defer n.bridgeMu.Unlock()
	if n.bridgeLink == br {
		n.bridgeLink = nil
	}
}

// addVeth makes the veth host ↔ the pod's eth0 in ns and puts host on
// the node's bridge, as a hairpin port (a pod reaching itself through a
// Service comes back out of its own port). It returns the host end and
// the bridge.
func (n *podNetwork) addVeth(host string, ns netns.NsHandle, cidr netip.Prefix) (netlink.Link, netlink.Link, error) {
	nl, err := n.hostLinks()
	if err != nil {
		return nil, nil, err
	}
	br, err := n.ensureBridge(cidr)
	if err != nil {
		return nil, nil, err
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.MTU, attrs.Flags = host, br.Attrs().MTU, net.FlagUp
	veth := &netlink.Veth{LinkAttrs: attrs, PeerName: podInterface, PeerNamespace: netlink.NsFd(ns)}
	err = nl.LinkAdd(veth)
	if errors.Is(err, unix.EEXIST) {
		if old, lerr := nl.LinkByName(host); lerr == nil {
			_ = nl.LinkDel(old) // an earlier, failed attempt for this sandbox
		}
		veth.Index = 0
		err = nl.LinkAdd(veth)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("creating veth %s: %w", host, err)
	}
	hostLink, err := nl.LinkByName(host) // its MAC, for the CNI result
	if err == nil {
		err = nl.LinkSetMaster(hostLink, br)
		if err != nil {
			// The bridge kept may be gone: look it up (or make it) again.
			n.forgetBridge(br)
			if br, err = n.ensureBridge(cidr); err == nil {
				err = nl.LinkSetMaster(hostLink, br)
			}
		}
	}
	if err == nil {
		err = nl.LinkSetHairpin(hostLink, true)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("attaching veth %s to bridge %s: %w", host, n.bridge, err)
	}
	return hostLink, br, nil
}

// attach gives the network namespace at nsPath an eth0 on the node's
// bridge with an address of cidr, and returns the address and a CNI
// result (what portmap reads as prevResult).
func (n *podNetwork) attach(id, nsPath string, cidr netip.Prefix) (netip.Addr, json.RawMessage, error) {
	ip, err := n.ipam.reserve(id, cidr)
	if err != nil {
		return netip.Addr{}, nil, err
	}
	ns, err := netns.GetFromPath(nsPath)
	if err != nil {
		return ip, nil, fmt.Errorf("opening the pod's network namespace: %w", err)
	}
	defer ns.Close()
	host := vethName(id)
	hostLink, br, err := n.addVeth(host, ns, cidr)
	if err != nil {
		return ip, nil, err
	}
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return ip, nil, fmt.Errorf("entering the pod's network namespace: %w", err)
	}
	defer h.Close()
	pod, err := h.LinkByName(podInterface)
	if err != nil {
		return ip, nil, fmt.Errorf("finding the pod's %s: %w", podInterface, err)
	}
	gw := bridgeGateway(cidr).Addr()
	if err := h.AddrAdd(pod, &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(ip, cidr.Bits()))}); err != nil {
		return ip, nil, fmt.Errorf("giving the pod %s: %w", ip, err)
	}
	if err := h.LinkSetUp(pod); err != nil {
		return ip, nil, fmt.Errorf("setting the pod's %s up: %w", podInterface, err)
	}
	if err := h.RouteAdd(&netlink.Route{LinkIndex: pod.Attrs().Index, Gw: gw.AsSlice()}); err != nil {
		return ip, nil, fmt.Errorf("adding the pod's default route via %s: %w", gw, err)
	}
	res, err := json.Marshal(cniResult{
		CNIVersion: cniVersion,
		Interfaces: []cniInterface{
			{Name: n.bridge, Mac: br.Attrs().HardwareAddr.String()},
			{Name: host, Mac: hostLink.Attrs().HardwareAddr.String()},
			{Name: podInterface, Mac: pod.Attrs().HardwareAddr.String(), Sandbox: nsPath},
		},
		IPs:    []cniIP{{Version: "4", Interface: 2, Address: netip.PrefixFrom(ip, cidr.Bits()).String(), Gateway: gw.String()}},
		Routes: []cniRoute{{Dst: "0.0.0.0/0"}},
	})
	return ip, res, err
}

// detach removes the pod's veth (if its namespace still exists) and frees
// its address; it succeeds when nothing is left.
func (n *podNetwork) detach(id, nsPath string) error {
	if ns, err := netns.GetFromPath(nsPath); err == nil {
		h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
		ns.Close()
		if err != nil {
			return fmt.Errorf("entering the pod's network namespace: %w", err)
		}
		defer h.Close()
		if pod, err := h.LinkByName(podInterface); err == nil {
			if err := h.LinkDel(pod); err != nil { // its peer goes with it
				return fmt.Errorf("deleting the pod's %s: %w", podInterface, err)
			}
		}
	}
	if nl, err := n.hostLinks(); err == nil {
		if l, err := nl.LinkByName(vethName(id)); err == nil {
			_ = nl.LinkDel(l) // the namespace is gone but the host end was not
		}
	}
	return n.ipam.release(id)
}

// vethName is the host end of a sandbox's veth: stable per sandbox, so a
// retry finds what a failed attempt left.
func vethName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "veth" + hex.EncodeToString(sum[:4])
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// The CNI 0.4.0 result of an ADD, as the bridge plugin printed it.
type cniResult struct {
	CNIVersion string         `json:"cniVersion"`
	Interfaces []cniInterface `json:"interfaces"`
	IPs        []cniIP        `json:"ips"`
	Routes     []cniRoute     `json:"routes"`
	DNS        struct{}       `json:"dns"`
}

type cniInterface struct {
	Name    string `json:"name"`
	Mac     string `json:"mac,omitempty"`
	Sandbox string `json:"sandbox,omitempty"`
}

type cniIP struct {
	Version   string `json:"version"`
	Interface int    `json:"interface"`
	Address   string `json:"address"`
	Gateway   string `json:"gateway"`
}

type cniRoute struct {
	Dst string `json:"dst"`
}

// hostLocal allocates pod addresses as the CNI host-local plugin does and
// in its on-disk format (one file per address, named by it, holding the
// sandbox ID and interface; last_reserved_ip.0 for round-robin), so the
// addresses of pods that outlive a kubelet stay theirs. One kubelet owns
// the directory; the index is read from it once.
type hostLocal struct {
	dir string

	mu     sync.Mutex
	loaded bool
	byID   map[string]netip.Addr
	used   map[netip.Addr]bool
	last   netip.Addr
}

const lastReservedFile = "last_reserved_ip.0"

func (a *hostLocal) load() error {
	if a.loaded {
		return nil
	}
	a.byID, a.used = map[string]netip.Addr{}, map[netip.Addr]bool{}
	if err := os.MkdirAll(a.dir, 0o755); err != nil {
		return fmt.Errorf("pod address store: %w", err)
	}
	ents, err := os.ReadDir(a.dir)
	if err != nil {
		return fmt.Errorf("pod address store: %w", err)
	}
	for _, e := range ents {
		ip, err := netip.ParseAddr(e.Name())
		if err != nil {
			continue // lock, last_reserved_ip.0
		}
		data, err := os.ReadFile(filepath.Join(a.dir, e.Name()))
		if err != nil {
			return fmt.Errorf("pod address store: %w", err)
		}
		id, _, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
		a.byID[strings.TrimSpace(id)], a.used[ip] = ip, true
	}
	if data, err := os.ReadFile(filepath.Join(a.dir, lastReservedFile)); err == nil {
		a.last, _ = netip.ParseAddr(strings.TrimSpace(string(data)))
	}
	a.loaded = true
	return nil
}

// reserve returns the address of id in cidr: the one it holds already,
// or the next free one after the last given out, skipping the network,
// gateway and broadcast addresses.
func (a *hostLocal) reserve(id string, cidr netip.Prefix) (netip.Addr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.load(); err != nil {
		return netip.Addr{}, err
	}
	if ip, ok := a.byID[id]; ok && cidr.Contains(ip) {
		return ip, nil
	}
	first := bridgeGateway(cidr).Addr().Next()
	size := 1 << (cidr.Addr().BitLen() - cidr.Bits())
	ip := a.last
	if !cidr.Contains(ip) {
		ip = first.Prev()
	}
	for range size {
		ip = ip.Next()
		if !cidr.Contains(ip) || isBroadcast(ip, cidr) {
			ip = first
		}
		if a.used[ip] {
			continue
		}
		f, err := os.OpenFile(filepath.Join(a.dir, ip.String()), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			a.used[ip] = true
			continue
		}
		if err != nil {
			return netip.Addr{}, fmt.Errorf("reserving %s: %w", ip, err)
		}
		_, err = f.WriteString(id + "\r\n" + podInterface)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(f.Name())
			return netip.Addr{}, fmt.Errorf("reserving %s: %w", ip, err)
		}
		a.byID[id], a.used[ip], a.last = ip, true, ip
		_ = os.WriteFile(filepath.Join(a.dir, lastReservedFile), []byte(ip.String()), 0o644) // round-robin only
		return ip, nil
	}
	return netip.Addr{}, fmt.Errorf("no free address in the pod range %s: all %d are taken", cidr, len(a.used))
}

// release frees the address id holds, if any.
func (a *hostLocal) release(id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.load(); err != nil {
		return err
	}
	ip, ok := a.byID[id]
	if !ok {
		return nil
	}
	if err := os.Remove(filepath.Join(a.dir, ip.String())); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("freeing %s: %w", ip, err)
	}
	delete(a.byID, id)
	delete(a.used, ip)
	return nil
}

func isBroadcast(ip netip.Addr, cidr netip.Prefix) bool {
	return !cidr.Contains(ip.Next())
}
