package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// floorBridge is the networked floor's bridge: "mk" and 8 hex digits, the
// shape `minik reset` removes, with the veths on it, should the bench die
// before its own clean-up.
const floorBridge = "mkf1007000"

// floorNetRange is the networked floor's addresses: apart from the
// bench node's pod range (podCIDR).
var floorNetRange = netip.MustParsePrefix("10.251.0.0/16")

// floorNet gives each container of the networked floor what every pod
// gets before its container starts, with none of minik's code: a network
// namespace of its own, bind-mounted as CRI runtimes keep them, with lo
// up, and a veth pair, one end on a bridge and the other in the namespace
// as eth0 with an address and a default route. It is the kernel's part of
// a pod network, the least any runtime that gives pods one pays.
type floorNet struct {
	dir    string // the namespaces' bind mounts
	bridge netlink.Link
	gw     netip.Addr

	mu    sync.Mutex
	next  netip.Addr
	paths []string // every namespace made, for close
	veths []string // their host ends
}

func newFloorNet(dir string) (*floorNet, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if old, err := netlink.LinkByName(floorBridge); err == nil {
		_ = netlink.LinkDel(old) // an earlier bench's, killed
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name = floorBridge
	if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: attrs}); err != nil {
		return nil, fmt.Errorf("creating bridge %s: %w", floorBridge, err)
	}
	f := &floorNet{dir: dir, gw: floorNetRange.Addr().Next()}
	f.next = f.gw.Next()
	br, err := netlink.LinkByName(floorBridge)
	if err == nil {
		f.bridge = br
		err = netlink.AddrAdd(br, &netlink.Addr{IPNet: prefixNet(netip.PrefixFrom(f.gw, floorNetRange.Bits()))})
	}
	if err == nil {
		err = netlink.LinkSetUp(br)
	}
	if err != nil {
		f.close()
		return nil, fmt.Errorf("setting up bridge %s: %w", floorBridge, err)
	}
	return f, nil
}

// add makes container i's network and returns its namespace's path.
func (f *floorNet) add(i int) (string, error) {
	f.mu.Lock()
	ip := f.next
	f.next = f.next.Next()
	path := filepath.Join(f.dir, fmt.Sprintf("ns%d", len(f.paths)))
	f.paths = append(f.paths, path)
	f.mu.Unlock()
	if !floorNetRange.Contains(ip) {
		return "", errors.New("the networked floor ran out of addresses")
	}

	ns, err := newNamedNS(path)
	if err != nil {
		return "", err
	}
	defer ns.Close()
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.MasterIndex, attrs.Flags = fmt.Sprintf("mkfl%d", i), f.bridge.Attrs().Index, net.FlagUp
	veth := &netlink.Veth{LinkAttrs: attrs, PeerName: "eth0", PeerNamespace: netlink.NsFd(ns)}
	err = netlink.LinkAdd(veth)
	if errors.Is(err, unix.EEXIST) { // left by a bench that was killed
		if old, lerr := netlink.LinkByName(attrs.Name); lerr == nil {
			_ = netlink.LinkDel(old)
		}
		veth.Index = 0
		err = netlink.LinkAdd(veth)
	}
	if err != nil {
		return "", fmt.Errorf("creating veth %s: %w", attrs.Name, err)
	}
	f.mu.Lock()
	f.veths = append(f.veths, attrs.Name)
	f.mu.Unlock()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return "", err
	}
	defer h.Close()
	eth0, err := h.LinkByName("eth0")
	if err == nil {
		err = h.AddrAdd(eth0, &netlink.Addr{IPNet: prefixNet(netip.PrefixFrom(ip, floorNetRange.Bits()))})
	}
	if err == nil {
		err = h.LinkSetUp(eth0)
	}
	if err == nil {
		err = h.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: f.gw.AsSlice()})
	}
	if err != nil {
		return "", fmt.Errorf("configuring eth0 in %s: %w", path, err)
	}
	return path, nil
}

// newNamedNS makes a network namespace with lo up, bind-mounted at path,
// on a thread of its own that then goes back to the bench's namespace.
func newNamedNS(path string) (netns.NsHandle, error) {
	if err := os.WriteFile(path, nil, 0o444); err != nil {
		return netns.None(), err
	}
	type made struct {
		ns  netns.NsHandle
		err error
	}
	done := make(chan made, 1)
	go func() {
		goruntime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			goruntime.UnlockOSThread()
			done <- made{err: err}
			return
		}
		defer orig.Close()
		ns, err := netns.New() // this thread is in it from now on
		if err == nil {
			var lo netlink.Link
			if lo, err = netlink.LinkByName("lo"); err == nil {
				err = netlink.LinkSetUp(lo)
			}
		}
		if err == nil {
			err = unix.Mount(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), path, "none", unix.MS_BIND, "")
		}
		if serr := netns.Set(orig); serr == nil {
			goruntime.UnlockOSThread()
		} // else the thread stays locked, and Go discards it
		done <- made{ns, err}
	}()
	m := <-done
	if m.err != nil {
		if m.ns.IsOpen() {
			m.ns.Close()
		}
		return netns.None(), fmt.Errorf("making the network namespace %s: %w", path, m.err)
	}
	return m.ns, nil
}

// close removes every veth and namespace made, and the bridge. The
// containers in them must be gone. The veths go first: a namespace's are
// removed only when the kernel gets round to the namespace.
func (f *floorNet) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, name := range f.veths {
		if l, err := netlink.LinkByName(name); err == nil {
			_ = netlink.LinkDel(l)
		}
	}
	f.veths = nil
	for _, p := range f.paths {
		_ = unix.Unmount(p, unix.MNT_DETACH)
		_ = os.Remove(p)
	}
	f.paths = nil
	if br, err := netlink.LinkByName(floorBridge); err == nil {
		_ = netlink.LinkDel(br)
	}
	_ = os.Remove(f.dir)
}

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
