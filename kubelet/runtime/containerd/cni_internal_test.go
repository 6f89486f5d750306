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
// left by an earlier cluster (another gateway address): the bridge
// plugin refuses it, ready() removes the stale address, and the next pod
// gets an address of the current range.
func TestNodeBridgeIsReconciledToTheCurrentPodCIDR(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("needs root and the CNI plugins; skipped under -short")
	}
	const binDir = "/usr/lib/cni"
	if _, err := os.Stat(filepath.Join(binDir, "bridge")); err != nil {
		t.Fatalf("CI installs containernetworking-plugins: %v", err)
	}
	dir := t.TempDir()
	const bridge, cidr = "mktest0", "10.244.1.0/24"
	n := &cniNetwork{binDir: binDir, dataDir: filepath.Join(dir, "ipam"), bridge: bridge}
	ctx := context.Background()
	inNewNetNS(t, func() error {
		for _, args := range [][]string{{"link", "add", bridge, "type", "bridge"}, {"addr", "add", "10.244.7.1/24", "dev", bridge}, {"link", "set", bridge, "up"}} {
			if err := ipCmd(args...); err != nil {
				return err
			}
		}
		podNS := filepath.Join(dir, "pod")
		if err := newNetNS(podNS); err != nil {
			return err
		}
		defer removeNetNS(podNS)
		_, err := n.exec(ctx, "ADD", "pod1", podNS, "eth0", n.bridgeConf(cidr))
		if err == nil || !strings.Contains(err.Error(), "already has an IP address different from") {
			return fmt.Errorf("ADD on a stale bridge: err = %v, want the bridge plugin's refusal", err)
		}
		if err := n.ready(ctx, cidr); err != nil {
			return fmt.Errorf("ready: %w", err)
		}
		if have, err := addrsOf(bridge); err != nil || len(have) != 0 {
			return fmt.Errorf("bridge addresses after ready = %v (%v), want none", have, err)
		}
		// A failed sandbox is torn down; the kubelet retries with a new one.
		podNS2 := filepath.Join(dir, "pod2")
		if err := newNetNS(podNS2); err != nil {
			return err
		}
		defer removeNetNS(podNS2)
		out, err := n.exec(ctx, "ADD", "pod2", podNS2, "eth0", n.bridgeConf(cidr))
		if err != nil {
			return fmt.Errorf("ADD after ready: %w", err)
		}
		if !strings.Contains(string(out), `"10.244.1.`) {
			return fmt.Errorf("pod address not in %s: %s", cidr, out)
		}
		if have, err := addrsOf(bridge); err != nil || !slices.Equal(have, []string{"10.244.1.1/24"}) {
			return fmt.Errorf("bridge addresses = %v (%v), want [10.244.1.1/24]", have, err)
		}
		if err := n.ready(ctx, cidr); err != nil {
			return fmt.Errorf("ready on a good bridge: %w", err)
		}
		return nil
	})
}

func TestReadyNamesAMissingPlugin(t *testing.T) {
	n := &cniNetwork{binDir: t.TempDir(), bridge: "mknone"}
	err := n.ready(context.Background(), "10.244.1.0/24")
	if err == nil || !strings.Contains(err.Error(), "CNI plugin bridge not found") {
		t.Fatalf("ready = %v, want the missing plugin named", err)
	}
}
