package hostgw

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	goruntime "runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// inNewNetNS runs fn on a thread in a network namespace of its own (gone
// with the thread); the `ip` commands fn runs start in it too.
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

func ip(args ...string) (string, error) {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// TestSyncInstallsAndRemovesRoutes runs the `ip route` driver in a
// network namespace of the test's own, with a bridge standing for the
// nodes' shared network: routes come for the other nodes, follow a node
// that moves, go with a deleted node, and a route hostgw did not make
// stays.
func TestSyncInstallsAndRemovesRoutes(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("needs root to make a network namespace; skipped under -short")
	}
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	inNewNetNS(t, func() error {
		for _, args := range [][]string{{"link", "add", "nodes0", "type", "bridge"}, {"addr", "add", "172.18.0.2/16", "dev", "nodes0"},
			{"link", "set", "nodes0", "up"}, {"route", "add", "10.99.0.0/24", "via", "172.18.0.50"}} {
			if _, err := ip(args...); err != nil {
				return err
			}
		}
		master := node("master", "172.18.0.2", "10.244.0.0/24")
		node01 := node("node01", "172.18.0.3", "10.244.1.0/24")
		node02 := node("node02", "172.18.0.4", "10.244.2.0/24")
		steps := []struct {
			name  string
			nodes []*corev1.Node
			want  string
		}{
			{"routes to the other nodes", []*corev1.Node{master, node01, node02}, "[10.244.1.0/24 via 172.18.0.3 10.244.2.0/24 via 172.18.0.4]"},
			{"a node with another address", []*corev1.Node{master, node01, node("node02", "172.18.0.5", "10.244.2.0/24")}, "[10.244.1.0/24 via 172.18.0.3 10.244.2.0/24 via 172.18.0.5]"},
			{"a deleted node", []*corev1.Node{master, node01}, "[10.244.1.0/24 via 172.18.0.3]"},
			{"again: nothing changes", []*corev1.Node{master, node01}, "[10.244.1.0/24 via 172.18.0.3]"},
		}
		for _, s := range steps {
			if err := Sync(ctx, IPRoute{}, s.nodes, "master", log); err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			got, err := IPRoute{}.List(ctx)
			if err != nil {
				return err
			}
			if show(got) != s.want {
				return fmt.Errorf("%s: routes %s, want %s", s.name, show(got), s.want)
			}
		}
		all, err := ip("route", "show")
		if err != nil {
			return err
		}
		if !strings.Contains(all, "10.99.0.0/24 via 172.18.0.50") {
			return fmt.Errorf("a route hostgw did not make was touched:\n%s", all)
		}
		return nil
	})
}
