// Package hostgw keeps a node's routes to every other node's pods, as
// flannel's host-gw backend does: a route to each node's podCIDR via that
// node's InternalIP, on the shared L2 network, with no encapsulation and
// no NAT between pods.
//
//	Node informer (every Node; the identity must be allowed to list them)
//	      │ add / update / delete, and a resync every 30s
//	      ▼
//	Desired(nodes, self) ─▶ routes: other node's podCIDR via its InternalIP
//	      │
//	      ▼
//	Diff(desired, installed) ─▶ add (ip route replace … proto 203)
//	      ▲                     del (ip route del … proto 203)
//	installed: `ip route show proto 203`, only the routes hostgw made
package hostgw

import (
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Protocol marks the routes hostgw installs (the rtnetlink "proto" field),
// so it lists and removes only its own, and `minik reset` finds them.
const Protocol = 203

// Route is one route to a node's pods.
type Route struct {
	Dst  netip.Prefix // the node's podCIDR
	Via  netip.Addr   // the node's InternalIP
	Node string       // for logs; not part of the identity
}

// key is what identifies an installed route.
func (r Route) key() string { return r.Dst.String() + " via " + r.Via.String() }

// Desired returns the routes self needs: one per pod range of every other
// node that has a podCIDR and an InternalIP of the same family, sorted by
// destination. A range claimed by self, or by two nodes, gets no route.
func Desired(nodes []*corev1.Node, self string) []Route {
	var out []Route
	own := map[netip.Prefix]bool{}
	count := map[netip.Prefix]int{}
	for _, n := range nodes {
		for _, c := range podCIDRs(n) {
			count[c]++
			if n.Name == self {
				own[c] = true
			}
		}
	}
	for _, n := range nodes {
		if n.Name == self {
			continue
		}
		ip, ok := internalIP(n)
		if !ok {
			continue
		}
		for _, c := range podCIDRs(n) {
			if own[c] || count[c] > 1 || c.Addr().Is4() != ip.Is4() || c.Contains(ip) {
				continue
			}
			out = append(out, Route{Dst: c, Via: ip, Node: n.Name})
		}
	}
	slices.SortFunc(out, func(a, b Route) int { return strings.Compare(a.key(), b.key()) })
	return out
}

// Diff returns what to add (missing or with another gateway: replaced)
// and what to delete (installed routes no node wants).
func Diff(desired, installed []Route) (add, del []Route) {
	have := map[string]bool{}
	for _, r := range installed {
		have[r.key()] = true
	}
	wantDst := map[netip.Prefix]bool{}
	for _, r := range desired {
		wantDst[r.Dst] = true
		if !have[r.key()] {
			add = append(add, r)
		}
	}
	for _, r := range installed {
		if !wantDst[r.Dst] {
			del = append(del, r)
		}
	}
	return add, del
}

func podCIDRs(n *corev1.Node) []netip.Prefix {
	list := n.Spec.PodCIDRs
	if len(list) == 0 && n.Spec.PodCIDR != "" {
		list = []string{n.Spec.PodCIDR}
	}
	var out []netip.Prefix
	for _, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}

func internalIP(n *corev1.Node) (netip.Addr, bool) {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			if ip, err := netip.ParseAddr(a.Address); err == nil && !ip.IsLoopback() && !ip.IsUnspecified() {
				return ip.Unmap(), true
			}
		}
	}
	return netip.Addr{}, false
}
