package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
)

// ConntrackFilter selects UDP flows to forget. UDP has no connection to
// close: a flow that was DNATed to an endpoint that is gone, or that went
// nowhere while the Service had no endpoint, would keep its stale
// translation for as long as the client keeps sending. Zero fields match
// anything.
type ConntrackFilter struct {
	OrigDst netip.Addr // the address the client sent to (a Service IP)
	Port    int        // the port the client sent to (service port or node port)
	DstNAT  netip.Addr // the endpoint the flow was DNATed to
}

// Args are the filter as arguments of `conntrack -D`.
func (f ConntrackFilter) Args() []string {
	args := []string{"-D", "-p", "udp"}
	if f.OrigDst.IsValid() {
		args = append(args, "--orig-dst", f.OrigDst.String())
	}
	if f.Port != 0 {
		args = append(args, "--dport", strconv.Itoa(f.Port))
	}
	if f.DstNAT.IsValid() {
		args = append(args, "--dst-nat", f.DstNAT.String())
	}
	return args
}

func (f ConntrackFilter) String() string { return strings.Join(f.Args(), " ") }

// staleConntrack is the conntrack clean-up a change of a Service's rules
// calls for, as kube-proxy does it: for each UDP port, the flows DNATed to
// an endpoint that is no longer used, and, when the port had no endpoint
// and now has one, the flows to it that were never translated.
func staleConntrack(old, new *ServiceRules) []ConntrackFilter {
	if old == nil {
		return nil // nothing could have been translated by rules of ours
	}
	now := map[string]UDPPort{}
	if new != nil {
		for _, u := range new.UDP {
			now[u.Name] = u
		}
	}
	var out []ConntrackFilter
	for _, u := range old.UDP {
		n, still := now[u.Name]
		kept := map[netip.Addr]bool{}
		for _, e := range n.Endpoints {
			kept[e] = true
		}
		for _, e := range u.Endpoints {
			if kept[e] {
				continue
			}
			for _, ip := range u.IPs {
				out = append(out, ConntrackFilter{OrigDst: ip, Port: u.Port, DstNAT: e})
			}
			if u.NodePort != 0 {
				out = append(out, ConntrackFilter{Port: u.NodePort, DstNAT: e})
			}
		}
		if still && len(u.Endpoints) == 0 && len(n.Endpoints) > 0 {
			for _, ip := range n.IPs {
				out = append(out, ConntrackFilter{OrigDst: ip, Port: n.Port})
			}
			if n.NodePort != 0 {
				out = append(out, ConntrackFilter{Port: n.NodePort})
			}
		}
	}
	return out
}

// Conntrack deletes conntrack entries.
type Conntrack interface {
	Delete(ctx context.Context, f ConntrackFilter) error
}

// conntrackTool runs the `conntrack` command line tool.
type conntrackTool struct{ path string }

// NewConntrack returns a Conntrack over the `conntrack` tool, or nil and
// an error when it is not installed.
func NewConntrack() (Conntrack, error) {
	path, err := exec.LookPath("conntrack")
	if err != nil {
		return nil, fmt.Errorf("conntrack tool not found (Debian package conntrack): %w", err)
	}
	return conntrackTool{path}, nil
}

func (c conntrackTool) Delete(ctx context.Context, f ConntrackFilter) error {
	out, err := exec.CommandContext(ctx, c.path, f.Args()...).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) && strings.Contains(string(out), "0 flow entries") {
		return nil // nothing matched: conntrack exits 1
	}
	if err != nil {
		return fmt.Errorf("conntrack %s: %w: %s", f, err, strings.TrimSpace(string(out)))
	}
	return nil
}
