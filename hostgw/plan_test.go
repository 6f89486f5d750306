package hostgw

import (
	"fmt"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name, ip, cidr string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{PodCIDR: cidr}}
	if cidr != "" {
		n.Spec.PodCIDRs = []string{cidr}
	}
	if ip != "" {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalIP, Address: ip}}
	}
	return n
}

func route(dst, via string) Route {
	return Route{Dst: netip.MustParsePrefix(dst), Via: netip.MustParseAddr(via)}
}

func show(rs []Route) string {
	s := "["
	for i, r := range rs {
		if i > 0 {
			s += " "
		}
		s += r.key()
	}
	return s + "]"
}

func TestDesired(t *testing.T) {
	master := node("master", "172.18.0.2", "10.244.0.0/24")
	node01 := node("node01", "172.18.0.3", "10.244.1.0/24")
	node02 := node("node02", "172.18.0.4", "10.244.2.0/24")
	cases := []struct {
		name  string
		nodes []*corev1.Node
		self  string
		want  string
	}{
		{"a route to every other node's podCIDR via its InternalIP", []*corev1.Node{node02, master, node01}, "master",
			"[10.244.1.0/24 via 172.18.0.3 10.244.2.0/24 via 172.18.0.4]"},
		{"a node alone needs no route", []*corev1.Node{master}, "master", "[]"},
		{"a node without a podCIDR yet gets no route", []*corev1.Node{master, node("new", "172.18.0.9", "")}, "master", "[]"},
		{"a node without an InternalIP gets no route", []*corev1.Node{master, node("noip", "", "10.244.5.0/24")}, "master", "[]"},
		{"a loopback InternalIP (minik up's nodes) gets no route", []*corev1.Node{master, node("local", "127.0.0.1", "10.244.5.0/24")}, "master", "[]"},
		{"a range claimed by two nodes gets no route", []*corev1.Node{master, node01, node("dup", "172.18.0.7", "10.244.1.0/24")}, "master", "[]"},
		{"another node claiming our own range gets no route", []*corev1.Node{master, node("dup", "172.18.0.7", "10.244.0.0/24")}, "master", "[]"},
		{"an IPv6 range via an IPv4 address gets no route", []*corev1.Node{master, node("v6", "172.18.0.8", "fd00:10:244:1::/64")}, "master", "[]"},
		{"a podCIDR written unmasked is masked", []*corev1.Node{master, node("odd", "172.18.0.6", "10.244.9.7/24")}, "master", "[10.244.9.0/24 via 172.18.0.6]"},
		{"an unknown self routes to everyone", []*corev1.Node{master, node01}, "elsewhere", "[10.244.0.0/24 via 172.18.0.2 10.244.1.0/24 via 172.18.0.3]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := show(Desired(tc.nodes, tc.self)); got != tc.want {
				t.Fatalf("Desired = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	cases := []struct {
		name               string
		desired, installed []Route
		add, del           string
	}{
		{"nothing installed: add every route", []Route{route("10.244.1.0/24", "172.18.0.3")}, nil, "[10.244.1.0/24 via 172.18.0.3]", "[]"},
		{"in place: nothing to do", []Route{route("10.244.1.0/24", "172.18.0.3")}, []Route{route("10.244.1.0/24", "172.18.0.3")}, "[]", "[]"},
		{"a deleted node's route goes", nil, []Route{route("10.244.2.0/24", "172.18.0.4")}, "[]", "[10.244.2.0/24 via 172.18.0.4]"},
		{"a node that moved is replaced, not deleted", []Route{route("10.244.1.0/24", "172.18.0.9")}, []Route{route("10.244.1.0/24", "172.18.0.3")},
			"[10.244.1.0/24 via 172.18.0.9]", "[]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			add, del := Diff(tc.desired, tc.installed)
			if got := fmt.Sprint(show(add), show(del)); got != fmt.Sprint(tc.add, tc.del) {
				t.Fatalf("Diff = %s, want %s %s", got, tc.add, tc.del)
			}
		})
	}
}
