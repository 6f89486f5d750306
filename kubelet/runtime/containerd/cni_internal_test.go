package containerd

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func TestStaleBridgeAddrs(t *testing.T) {
	p := netip.MustParsePrefix
	cases := []struct {
		name string
		have []netip.Prefix
		cidr string
		want []netip.Prefix
	}{
		{"a bridge with the range's gateway keeps it", []netip.Prefix{p("10.244.1.1/24")}, "10.244.1.0/24", nil},
		{"an earlier cluster's gateway goes", []netip.Prefix{p("10.244.0.1/24")}, "10.244.1.0/24", []netip.Prefix{p("10.244.0.1/24")}},
		{"the right address with another prefix length goes", []netip.Prefix{p("10.244.1.1/16")}, "10.244.1.0/24", []netip.Prefix{p("10.244.1.1/16")}},
		{"IPv6 link-local addresses stay", []netip.Prefix{p("fe80::1/64"), p("10.88.0.1/16")}, "10.244.2.0/24", []netip.Prefix{p("10.88.0.1/16")}},
		{"a bridge with no address needs nothing removed", nil, "10.244.1.0/24", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := staleBridgeAddrs(tc.have, netip.MustParsePrefix(tc.cidr)); !slices.Equal(got, tc.want) {
				t.Fatalf("staleBridgeAddrs = %v, want %v", got, tc.want)
			}
		})
	}
}

// inNewNetNS runs fn on a thread in a network namespace of its own, which
// goes away with the thread; commands fn runs start in it too.
func inNewNetNS(t *testing.T, fn func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		errc <- fn()
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func ipCmd(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func addrsOf(name string) ([]string, error) {
	l, err := net.InterfaceByName(name)
	if err != nil {
		return nil, err
	}
	addrs, err := l.Addrs()
	var out []string
	for _, a := range addrs {
		if !strings.Contains(a.String(), ":") {
			out = append(out, a.String())
		}
	}
	return out, err
}

// TestNodeBridgeIsReconciledToTheCurrentPodCIDR reproduces a node bridge
// left by an earlier cluster (another gateway address): ready() removes
// the stale address, and so does the next pod's attach, which gives the
// pod an address of the current range, a default route via the bridge
// and a hairpin port; del leaves no veth and frees the address.
func TestNodeBridgeIsReconciledToTheCurrentPodCIDR(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("needs root; skipped under -short")
	}
	dir := t.TempDir()
	const bridge, cidr = "mktest0", "10.244.1.0/24"
	n := newPodNetwork(t.TempDir(), dir, bridge)
	ctx := context.Background()
	inNewNetNS(t, func() error {
		stale := func() error {
			for _, args := range [][]string{{"link", "add", bridge, "type", "bridge"}, {"addr", "add", "10.244.7.1/24", "dev", bridge}, {"link", "set", bridge, "up"}} {
				if err := ipCmd(args...); err != nil {
					return err
				}
			}
			return nil
		}
		if err := stale(); err != nil {
			return err
		}
		if err := n.ready(ctx, cidr); err == nil || !strings.Contains(err.Error(), "portmap") {
			return fmt.Errorf("ready without the portmap plugin = %v, want it named", err)
		}
		n.binDir = "/usr/lib/cni"
		if _, err := os.Stat(filepath.Join(n.binDir, "portmap")); err != nil {
			return fmt.Errorf("CI installs containernetworking-plugins: %v", err)
		}
		if err := n.ready(ctx, cidr); err != nil {
			return fmt.Errorf("ready: %w", err)
		}
		if have, err := addrsOf(bridge); err != nil || len(have) != 0 {
			return fmt.Errorf("bridge addresses after ready = %v (%v), want none", have, err)
		}
		// An earlier cluster's bridge met by attach itself.
		if err := ipCmd("link", "del", bridge); err != nil {
			return err
		}
		if err := stale(); err != nil {
			return err
		}
		podNS := filepath.Join(dir, "pod")
		if err := newNetNS(podNS); err != nil {
			return err
		}
		defer removeNetNS(podNS)
		ip, res, err := n.add(ctx, "pod1", podNS, cidr, nil)
		if err != nil {
			return fmt.Errorf("add: %w", err)
		}
		if !strings.HasPrefix(ip, "10.244.1.") || ip == "10.244.1.1" {
			return fmt.Errorf("pod address %s, want one of %s other than the gateway", ip, cidr)
		}
		if !strings.Contains(string(res), `"address":"`+ip+`/24"`) || !strings.Contains(string(res), `"sandbox":"`+podNS+`"`) {
			return fmt.Errorf("CNI result %s lacks the pod's address or sandbox", res)
		}
		if have, err := addrsOf(bridge); err != nil || !slices.Equal(have, []string{"10.244.1.1/24"}) {
			return fmt.Errorf("bridge addresses = %v (%v), want [10.244.1.1/24]", have, err)
		}
		// (sysfs shows the test process's namespace, not this thread's:
		// ask netlink.)
		host := vethName("pod1")
		br, err := netlink.LinkByName(bridge)
		if err != nil {
			return err
		}
		veth, err := netlink.LinkByName(host)
		if err != nil || veth.Attrs().MasterIndex != br.Attrs().Index {
			return fmt.Errorf("veth %s (%v) is not on bridge %s", host, err, bridge)
		}
		if pi, err := netlink.LinkGetProtinfo(veth); err != nil || !pi.Hairpin {
			return fmt.Errorf("veth %s protinfo %+v (%v), want hairpin", host, pi, err)
		}
		out, err := exec.Command("nsenter", "--net="+podNS, "ip", "-4", "route").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "default via 10.244.1.1 dev eth0") {
			return fmt.Errorf("pod routes = %s (%v), want the default via the gateway", out, err)
		}
		if again, _, err := n.add(ctx, "pod1", podNS, cidr, nil); err != nil || again != ip {
			return fmt.Errorf("add again for the same sandbox = %s, %v; want %s", again, err, ip)
		}
		if err := n.del(ctx, "pod1", podNS, nil, res); err != nil {
			return fmt.Errorf("del: %w", err)
		}
		if _, err := netlink.LinkByName(host); err == nil {
			return fmt.Errorf("veth %s still there after del", host)
		}
		if _, err := os.Stat(filepath.Join(dir, "ipam", "minik", ip)); !os.IsNotExist(err) {
			return fmt.Errorf("address %s still reserved after del (%v)", ip, err)
		}
		if err := n.del(ctx, "pod1", podNS, nil, res); err != nil {
			return fmt.Errorf("del of what is gone: %w", err)
		}
		// The bridge it kept, deleted behind its back, is made again.
		if err := ipCmd("link", "del", bridge); err != nil {
			return err
		}
		if _, res, err = n.add(ctx, "pod2", podNS, cidr, nil); err != nil {
			return fmt.Errorf("add after the bridge went away: %w", err)
		}
		if br, err = netlink.LinkByName(bridge); err != nil {
			return fmt.Errorf("bridge not made again: %w", err)
		}
		if veth, err := netlink.LinkByName(vethName("pod2")); err != nil || veth.Attrs().MasterIndex != br.Attrs().Index {
			return fmt.Errorf("veth of pod2 (%v) is not on the new bridge %s", err, bridge)
		}
		if have, err := addrsOf(bridge); err != nil || !slices.Equal(have, []string{"10.244.1.1/24"}) {
			return fmt.Errorf("new bridge addresses = %v (%v), want [10.244.1.1/24]", have, err)
		}
		if err := n.del(ctx, "pod2", podNS, nil, res); err != nil {
			return err
		}
		// A closed runtime's network makes no more pods.
		n.close()
		if _, _, err := n.add(ctx, "pod3", podNS, cidr, nil); err == nil || !strings.Contains(err.Error(), "closed") {
			return fmt.Errorf("add after close = %v, want the network named closed", err)
		}
		return nil
	})
}

// TestPodAddressesAreKeptAsHostLocalKeepsThem: addresses go round-robin
// past the network, gateway and broadcast addresses; a sandbox keeps its
// address; a full range says so; an address store written by the CNI
// host-local plugin (pods of an earlier minik) is honoured.
func TestPodAddressesAreKeptAsHostLocalKeepsThem(t *testing.T) {
	dir := t.TempDir()
	cidr := netip.MustParsePrefix("10.244.3.0/29") // .2 to .6 for pods
	if err := os.WriteFile(filepath.Join(dir, "10.244.3.4"), []byte("old-sandbox\r\neth0"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &hostLocal{dir: dir}
	var got []string
	for _, id := range []string{"a", "b", "c", "d"} {
		ip, err := a.reserve(id, cidr)
		if err != nil {
			t.Fatalf("reserve %s: %v", id, err)
		}
		got = append(got, ip.String())
	}
	if want := []string{"10.244.3.2", "10.244.3.3", "10.244.3.5", "10.244.3.6"}; !slices.Equal(got, want) {
		t.Fatalf("addresses = %v, want %v", got, want)
	}
	if ip, err := a.reserve("b", cidr); err != nil || ip.String() != "10.244.3.3" {
		t.Fatalf("reserve b again = %v, %v; want its own 10.244.3.3", ip, err)
	}
	if _, err := a.reserve("e", cidr); err == nil || !strings.Contains(err.Error(), "no free address in the pod range 10.244.3.0/29") {
		t.Fatalf("reserve in a full range = %v, want it named", err)
	}
	if err := a.release("old-sandbox"); err != nil {
		t.Fatal(err)
	}
	if err := a.release("b"); err != nil {
		t.Fatal(err)
	}
	// Round-robin: the next address after the last given out (.6) wraps
	// to the first free one.
	if ip, err := a.reserve("e", cidr); err != nil || ip.String() != "10.244.3.3" {
		t.Fatalf("reserve e = %v, %v; want 10.244.3.3", ip, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "10.244.3.3"))
	if err != nil || string(data) != "e\r\neth0" {
		t.Fatalf("address file = %q (%v), want host-local's format", data, err)
	}
	// A new kubelet reads the store back.
	b := &hostLocal{dir: dir}
	if ip, err := b.reserve("a", cidr); err != nil || ip.String() != "10.244.3.2" {
		t.Fatalf("after a restart, reserve a = %v, %v; want its 10.244.3.2", ip, err)
	}
	if ip, err := b.reserve("f", cidr); err != nil || ip.String() != "10.244.3.4" {
		t.Fatalf("after a restart, reserve f = %v, %v; want the freed 10.244.3.4", ip, err)
	}
}
