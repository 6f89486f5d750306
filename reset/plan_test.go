package reset

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestIPTablesDeletes(t *testing.T) {
	rules := `-P FORWARD DROP
-A FORWARD -i mk1234abcd -m comment --comment "minik pods" -j ACCEPT
-A FORWARD -j DOCKER-USER
-A POSTROUTING -s 10.244.0.0/24 ! -d 10.244.0.0/24 -m comment --comment "minik pods" -j MASQUERADE
-A FORWARD -m comment --comment "other pods" -j ACCEPT`
	got := fmt.Sprint(IPTablesDeletes(rules))
	want := "[[-D FORWARD -i mk1234abcd -m comment --comment minik pods -j ACCEPT] [-D POSTROUTING -s 10.244.0.0/24 ! -d 10.244.0.0/24 -m comment --comment minik pods -j MASQUERADE]]"
	if got != want {
		t.Fatalf("IPTablesDeletes =\n%s\nwant\n%s", got, want)
	}
	if d := IPTablesDeletes(rules); len(d[0]) != 10 || d[0][7] != "minik pods" {
		t.Fatalf("the quoted comment must be one word: %q", d[0])
	}
}

func TestIPTablesDeletesTakesThePortmapChainsOfMinikPods(t *testing.T) {
	rules := `-N CNI-DN-0a1b2c
-N CNI-DN-ffffff
-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment "dnat name: \"minik\" id: \"abc123\"" -m multiport --dports 8080 -j CNI-DN-0a1b2c
-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment "dnat name: \"other\" id: \"def\"" -m multiport --dports 9090 -j CNI-DN-ffffff
-A CNI-DN-0a1b2c -p tcp -m tcp --dport 8080 -j DNAT --to-destination 10.244.0.5:8080`
	got := fmt.Sprint(IPTablesDeletes(rules))
	want := `[[-D CNI-HOSTPORT-DNAT -p tcp -m comment --comment dnat name: "minik" id: "abc123" -m multiport --dports 8080 -j CNI-DN-0a1b2c] [-F CNI-DN-0a1b2c] [-X CNI-DN-0a1b2c]]`
	if got != want {
		t.Fatalf("IPTablesDeletes =\n%s\nwant\n%s", got, want)
	}
}

func TestMountsUnder(t *testing.T) {
	info := `22 1 0:21 / / rw - ext4 /dev/sda1 rw
40 22 0:50 / /run/minik rw - tmpfs tmpfs rw
41 40 0:4 net:[4026532] /run/minik/node/0a0b0c0d/netns/abc rw - nsfs nsfs rw
42 22 0:51 / /var/lib/minik/kubelet/n1/pods/uid/volumes/secret rw - tmpfs tmpfs rw
43 22 0:52 / /srv/data\040dir/kubelet/x rw - tmpfs tmpfs rw
44 22 0:53 / /run/minikother rw - tmpfs tmpfs rw`
	cases := []struct {
		name  string
		roots []string
		want  string
	}{
		{"mounts below the run root come deepest first, the root last", []string{"/run/minik"}, "[/run/minik/node/0a0b0c0d/netns/abc /run/minik]"},
		{"a sibling with the same prefix is not below", []string{"/run/minik/"}, "[/run/minik/node/0a0b0c0d/netns/abc /run/minik]"},
		{"escaped spaces are read back", []string{"/srv/data dir"}, "[/srv/data dir/kubelet/x]"},
		{"several roots", []string{"/var/lib/minik", "/run/minik"}, "[/var/lib/minik/kubelet/n1/pods/uid/volumes/secret /run/minik/node/0a0b0c0d/netns/abc /run/minik]"},
		{"nothing below an unrelated root", []string{"/nowhere"}, "[]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprint(MountsUnder(info, tc.roots)); got != tc.want {
				t.Fatalf("MountsUnder = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestLinkDeletes(t *testing.T) {
	link := func(name, master, kind string) Link {
		l := Link{Name: name, Master: master}
		l.Info.Kind = kind
		return l
	}
	links := []Link{
		link("lo", "", ""), link("eth0", "", "veth"), link("mk0a1b2c3d", "", "bridge"), link("veth12ab", "mk0a1b2c3d", "veth"),
		link("docker0", "", "bridge"), link("vethdock", "docker0", "veth"), link("mkfake", "", "bridge"), link("mk0a1b2c3e", "", "vxlan"),
	}
	if got, want := fmt.Sprint(LinkDeletes(links)), "[veth12ab mk0a1b2c3d]"; got != want {
		t.Fatalf("LinkDeletes = %s, want %s (pod veths first, then minik bridges; nothing else)", got, want)
	}
}

func TestCgroupRemovalsTakeTheDeepestFirstAndOnlyCleanedNodesWhenAsked(t *testing.T) {
	parents := []string{"/cg/cpu/minik", "/cg/memory/minik"}
	dirs := []string{
		"/cg/cpu/minik", "/cg/cpu/minik/minik-a", "/cg/cpu/minik/minik-a/c1", "/cg/cpu/minik/minik-b",
		"/cg/memory/minik", "/cg/memory/minik/minik-a",
	}
	cases := []struct {
		name    string
		cleaned map[string]bool
		all     bool
		want    []string
	}{
		{"everything, children before parents", nil, true, []string{
			"/cg/cpu/minik/minik-a/c1",
			"/cg/cpu/minik/minik-a", "/cg/cpu/minik/minik-b", "/cg/memory/minik/minik-a",
			"/cg/cpu/minik", "/cg/memory/minik",
		}},
		{"only the cleaned node's, never the shared parent", map[string]bool{"minik-a": true}, false, []string{
			"/cg/cpu/minik/minik-a/c1", "/cg/cpu/minik/minik-a", "/cg/memory/minik/minik-a",
		}},
		{"nothing cleaned, nothing touched", map[string]bool{}, false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := CgroupRemovals(dirs, parents, c.cleaned, c.all); !slices.Equal(got, c.want) {
				t.Fatalf("got %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestOrphanShims(t *testing.T) {
	shim := func(ppid int, ns, address string) Proc {
		return Proc{PPID: ppid, Cmdline: []string{"/usr/bin/containerd-shim-runc-v2", "-namespace", ns, "-id", "abc", "-address", address}}
	}
	const live, removed = "/data/containerd/containerd.sock", "/gone/containerd/containerd.sock"
	procs := map[int]Proc{
		1:  {Cmdline: []string{"/sbin/init"}},
		10: shim(1, "minik-node1", live),                        // its container is gone: orphan
		11: shim(1, "minik-node1", live),                        // runs a container
		12: {PPID: 11, Cmdline: []string{"sleep", "3600"}},      // ... this one
		13: shim(1, "k8s.io", removed),                          // another user's
		14: {PPID: 1, Cmdline: []string{"sleep", "-namespace"}}, // not a shim
		15: {PPID: 1, Cmdline: []string{"containerd-shim", "-id", "x"}},
		16: shim(1, "minik-node2", removed),                // its data dir was removed while it ran
		17: {PPID: 16, Cmdline: []string{"sleep", "3600"}}, // ... this container
		18: {PPID: 13, Cmdline: []string{"sleep", "3600"}}, // the other user's container
	}
	dirExists := func(dir string) bool { return dir == "/data/containerd" }
	shims, containers := OrphanShims(procs, func(ns string) bool { return strings.HasPrefix(ns, NamespacePrefix) }, dirExists)
	if !slices.Equal(shims, []int{10, 16}) || !slices.Equal(containers, []int{17}) {
		t.Fatalf("OrphanShims = %v, %v; want [10 16], [17]", shims, containers)
	}
	if ns, ok := ShimNamespace([]string{"containerd-shim-runc-v2", "-namespace"}); ok {
		t.Fatalf("a shim without the namespace's value: %q", ns)
	}
}
