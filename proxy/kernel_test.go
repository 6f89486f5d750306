package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"sigs.k8s.io/knftables"

	"minik/internal/netnsdir"
)

// The tests in this file program the real kernel with the real `nft`, in
// network namespaces they create and delete: never in the host's.

// netns is a named network namespace made by the test (ip netns add).
type netns string

func newNetns(t *testing.T, name string) netns {
	t.Helper()
	name = fmt.Sprintf("mkp-%d-%s", os.Getpid(), name)
	dirWasMounted := netnsdir.Mounted()
	run(t, "ip", "netns", "add", name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
		if err := netnsdir.Release(dirWasMounted); err != nil {
			t.Errorf("unmounting %s: %v", netnsdir.Dir, err)
		}
	})
	ns := netns(name)
	ns.ip(t, "link", "set", "lo", "up")
	return ns
}

// ip runs `ip` inside the namespace.
func (ns netns) ip(t *testing.T, args ...string) {
	t.Helper()
	run(t, "ip", append([]string{"-n", string(ns)}, args...)...)
}

func run(t *testing.T, cmd string, args ...string) string {
	t.Helper()
	out, err := exec.Command(cmd, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", cmd, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// do runs f on a thread that has entered the namespace: sockets it opens
// and processes it starts (nft) live there.
func (ns netns) do(t *testing.T, f func()) {
	t.Helper()
	runtime.LockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	defer self.Close()
	target, err := os.Open("/run/netns/" + string(ns))
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("setns %s: %v", ns, err)
	}
	defer func() {
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			// Leave the thread locked: it dies with the goroutine instead of
			// serving others in the wrong namespace.
			t.Errorf("setns back: %v", err)
			return
		}
		runtime.UnlockOSThread()
	}()
	f()
}

// serve answers every connection to addr (inside ns) with name.
func (ns netns) serve(t *testing.T, addr, name string) {
	ns.accept(t, addr, func(c net.Conn) {
		_, _ = io.WriteString(c, name)
	})
}

// accept hands every connection to addr (inside ns) to handle, on its
// own goroutine, and closes it after.
func (ns netns) accept(t *testing.T, addr string, handle func(net.Conn)) {
	t.Helper()
	var l net.Listener
	ns.do(t, func() {
		var err error
		if l, err = net.Listen("tcp", addr); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
}

// get connects to addr from inside ns and returns what the server said.
func (ns netns) get(t *testing.T, addr string) (string, error) {
	t.Helper()
	var out string
	var err error
	ns.do(t, func() {
		var c net.Conn
		c, err = net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		var b []byte
		b, err = io.ReadAll(c)
		out = string(b)
	})
	return out, err
}

// twoHosts makes the namespaces of TestKernel: a node whose lo holds the
// (endpoint) addresses 10.244.0.5 and 10.244.0.6, and a client host that
// routes the service range through it.
func twoHosts(t *testing.T, suffix string) (node, client netns) {
	t.Helper()
	node, client = newNetns(t, "node"+suffix), newNetns(t, "client"+suffix)
	run(t, "ip", "link", "add", "mkp-n", "netns", string(node), "type", "veth", "peer", "name", "mkp-c", "netns", string(client))
	node.ip(t, "addr", "add", "192.168.77.2/24", "dev", "mkp-n")
	node.ip(t, "link", "set", "mkp-n", "up")
	client.ip(t, "addr", "add", "192.168.77.1/24", "dev", "mkp-c")
	client.ip(t, "link", "set", "mkp-c", "up")
	client.ip(t, "route", "add", "10.96.0.0/12", "via", "192.168.77.2")
	// A node has a default route and forwards, as a real one does: what
	// the proxy does not translate is routed on (and must be refused by
	// the proxy's filter chains, not black-holed).
	node.ip(t, "route", "add", "default", "via", "192.168.77.1")
	run(t, "ip", "netns", "exec", string(node), "sysctl", "-qw", "net.ipv4.ip_forward=1")
	node.ip(t, "addr", "add", "10.244.0.5/32", "dev", "lo")
	node.ip(t, "addr", "add", "10.244.0.6/32", "dev", "lo")
	return node, client
}

// TestKernel programs a Service in a namespace standing for a node, and
// reaches it with real TCP from a second namespace standing for a pod on
// another host (routed through the node), and from the node itself.
//
//	client ns  192.168.77.1 ──veth── 192.168.77.2  node ns (table ip minik-proxy)
//	route 10.96.0.0/12 via .2     default via .1    backends 10.244.0.5:8080 "a"
//	                                                         10.244.0.6:8080 "b"
func TestKernel(t *testing.T) {
	if _, err := exec.LookPath("nft"); err != nil {
		t.Fatalf("this test needs nft (Debian package nftables): %v", err)
	}
	node, client := twoHosts(t, "")
	node.serve(t, "10.244.0.5:8080", "a")
	node.serve(t, "10.244.0.6:8080", "b")

	ctx := context.Background()
	var p *Proxier
	var nft knftables.Interface
	node.do(t, func() {
		var err error
		if nft, err = knftables.New(knftables.IPv4Family, TableName); err != nil {
			t.Fatal(err)
		}
		p, err = New(Options{Config: testConfig, NFT: nft})
		if err != nil {
			t.Fatal(err)
		}
	})
	sync := func(what string) SyncResult {
		t.Helper()
		var res SyncResult
		var err error
		node.do(t, func() { res, err = p.Sync(ctx) })
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return res
	}
	list := func() (string, error) {
		var out []byte
		var err error
		node.do(t, func() { out, err = exec.Command("nft", "list", "table", "ip", TableName).CombinedOutput() })
		return string(out), err
	}

	svc := makeService("default", "web", "10.96.0.10").Port("http", tcp, 80, num(8080)).NodePort(30080).Obj()
	twoBackends := makeSlice("default", "web-1", "web").Port("http", tcp, 8080).
		Endpoint("10.244.0.5", "node-a", ready).Endpoint("10.244.0.6", "node-a", ready).Obj()
	p.OnServiceAdd(svc)
	p.OnEndpointSliceAdd(twoBackends)
	p.SetInitialized()
	if res := sync("first sync"); !res.Full {
		t.Fatalf("first sync was not a full one: %+v", res)
	}

	t.Run("the VIP reaches both backends, from another host and from the node", func(t *testing.T) {
		for _, from := range []netns{client, node} {
			seen := map[string]bool{}
			for i := 0; i < 60 && len(seen) < 2; i++ {
				got, err := from.get(t, "10.96.0.10:80")
				if err != nil {
					t.Fatalf("from %s: %v", from, err)
				}
				seen[got] = true
			}
			if !seen["a"] || !seen["b"] || len(seen) != 2 {
				t.Errorf("from %s: backends seen %v, want a and b", from, seen)
			}
		}
	})

	t.Run("the NodePort answers on the node's address", func(t *testing.T) {
		got, err := client.get(t, "192.168.77.2:30080")
		if err != nil || (got != "a" && got != "b") {
			t.Fatalf("NodePort: %q, %v", got, err)
		}
	})

	t.Run("an address of the Service range that no Service has is dropped", func(t *testing.T) {
		// Unless dropped, the node routes it on, by its default route, to
		// the client host, which answers for that address.
		client.ip(t, "addr", "add", "10.96.0.99/32", "dev", "lo")
		client.serve(t, "10.96.0.99:80", "leaked")
		got, err := node.get(t, "10.96.0.99:80")
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			out, _ := list()
			t.Fatalf("want a timeout (dropped), got %q, %v\n%s", got, err, out)
		}
	})

	t.Run("loadBalancerSourceRanges let only those sources reach the load balancer IP", func(t *testing.T) {
		client.ip(t, "route", "add", "192.168.88.0/24", "via", "192.168.77.2")
		lb := makeService("default", "lb", "10.96.0.11").Port("http", tcp, 80, num(8080)).NodePort(30081).
			LoadBalancer([]string{"192.168.88.10"}, "192.168.77.1/32").Obj()
		lbSlice := makeSlice("default", "lb-1", "lb").Port("http", tcp, 8080).Endpoint("10.244.0.5", "node-a", ready).Obj()
		p.OnServiceAdd(lb)
		p.OnEndpointSliceAdd(lbSlice)
		sync("load balancer added")
		if got, err := client.get(t, "192.168.88.10:80"); err != nil || got != "a" {
			t.Fatalf("from an allowed source: %q, %v", got, err)
		}
		elsewhere := lb.DeepCopy()
		elsewhere.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/25"}
		p.OnServiceUpdate(lb, elsewhere)
		sync("source ranges changed")
		_, err := client.get(t, "192.168.88.10:80")
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("from a source outside the ranges: want a timeout (dropped), got %v", err)
		}
		if got, err := client.get(t, "192.168.77.2:30081"); err != nil || got != "a" {
			t.Fatalf("the NodePort is not subject to the ranges: %q, %v", got, err)
		}
		p.OnServiceDelete(elsewhere)
		p.OnEndpointSliceDelete(lbSlice)
		sync("load balancer deleted")
	})

	t.Run("an unknown port of the VIP is refused", func(t *testing.T) {
		_, err := client.get(t, "10.96.0.10:81")
		if !errors.Is(err, syscall.ECONNREFUSED) {
			out, _ := list()
			t.Fatalf("want connection refused, got %v\n%s", err, out)
		}
	})

	t.Run("without endpoints the VIP refuses at once", func(t *testing.T) {
		none := twoBackends.DeepCopy()
		none.Endpoints = nil
		p.OnEndpointSliceUpdate(twoBackends, none)
		if res := sync("endpoints gone"); res.Full {
			t.Fatalf("an endpoint change made a full sync: %+v", res)
		}
		for _, from := range []netns{client, node} {
			start := time.Now()
			_, err := from.get(t, "10.96.0.10:80")
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("from %s: want connection refused, got %v", from, err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("from %s: refused after %v, want at once", from, d)
			}
		}
		if _, err := client.get(t, "192.168.77.2:30080"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("NodePort: want connection refused, got %v", err)
		}
		p.OnEndpointSliceUpdate(none, twoBackends)
		sync("endpoints back")
		if got, err := client.get(t, "10.96.0.10:80"); err != nil || (got != "a" && got != "b") {
			t.Fatalf("after the endpoints came back: %q, %v", got, err)
		}
	})

	t.Run("a restarted proxy replaces the table and keeps serving", func(t *testing.T) {
		var p2 *Proxier
		node.do(t, func() {
			var err error
			if p2, err = New(Options{Config: testConfig, NFT: nft}); err != nil {
				t.Fatal(err)
			}
		})
		p2.OnServiceAdd(svc)
		p2.OnEndpointSliceAdd(twoBackends)
		p2.SetInitialized()
		var err error
		var res SyncResult
		node.do(t, func() { res, err = p2.Sync(ctx) })
		if err != nil {
			t.Fatal(err)
		}
		if !res.Full {
			t.Fatalf("a restart's first sync was not a full rewrite: %+v", res)
		}
		if got, err := client.get(t, "10.96.0.10:80"); err != nil || (got != "a" && got != "b") {
			t.Fatalf("after the restart: %q, %v", got, err)
		}
		p = p2
	})

	t.Run("a deleted Service's rules are gone after the sync", func(t *testing.T) {
		p.OnServiceDelete(svc)
		p.OnEndpointSliceDelete(twoBackends)
		sync("service deleted")
		out, err := list()
		if err != nil {
			t.Fatalf("nft list: %v: %s", err, out)
		}
		if strings.Contains(out, "web") || strings.Contains(out, "10.96.0.10") {
			t.Errorf("rules of the deleted Service remain:\n%s", out)
		}
	})

	var err error
	node.do(t, func() { err = Cleanup(ctx, nft) })
	if err != nil {
		t.Fatal(err)
	}
	if out, err := list(); err == nil {
		t.Errorf("table still there after Cleanup:\n%s", out)
	}
}

// TestKernelAcceptsEveryIncrementalTransaction runs the random changes of
// TestRandomChangesMatchFullPlan against the real kernel: every
// incremental transaction (chains rewritten and deleted, elements
// swapped, affinity sets replaced) must be accepted by nft.
func TestKernelAcceptsEveryIncrementalTransaction(t *testing.T) {
	t.Run("chains deleted at once", func(t *testing.T) { randomInKernel(t, 0) })
	t.Run("chains deleted later", func(t *testing.T) { randomInKernel(t, time.Nanosecond) })
}

func randomInKernel(t *testing.T, chainDeleteDelay time.Duration) {
	node := newNetns(t, "random")
	var p *Proxier
	var nft knftables.Interface
	node.do(t, func() {
		var err error
		if nft, err = knftables.New(knftables.IPv4Family, TableName); err != nil {
			t.Fatal(err)
		}
		if p, err = New(Options{Config: testConfig, NFT: nft, ChainDeleteDelay: chainDeleteDelay}); err != nil {
			t.Fatal(err)
		}
	})
	p.SetInitialized()
	syncs := 0
	node.do(t, func() {
		randomChanges(t, p, 150, func() { syncs++ })
		if err := Cleanup(context.Background(), nft); err != nil {
			t.Fatal(err)
		}
	})
	if syncs < 30 {
		t.Fatalf("only %d syncs ran", syncs)
	}
}

// TestKernelPodsOnOneBridge is the pod network of a node: two pods on the
// node's bridge, a Service whose endpoint is one of them. A pod reaching
// the Service on its own bridge needs br_netfilter (EnsureKernel); the
// endpoint reaching itself through its Service needs the hairpin
// masquerade and the bridge port's hairpin mode (as the kubelet's CNI
// config sets it).
//
//	node ns: bridge mkp-br 10.244.0.1/24 ── pod1 ns 10.244.0.5 (server "a")
//	         table ip minik-proxy        └─ pod2 ns 10.244.0.6 (client)
func TestKernelPodsOnOneBridge(t *testing.T) {
	node, pod1, pod2 := newNetns(t, "bnode"), newNetns(t, "pod1"), newNetns(t, "pod2")
	node.ip(t, "link", "add", "mkp-br", "type", "bridge")
	node.ip(t, "addr", "add", "10.244.0.1/24", "dev", "mkp-br")
	node.ip(t, "link", "set", "mkp-br", "up")
	for i, pod := range []netns{pod1, pod2} {
		host, peer, ip := fmt.Sprintf("mkp-h%d", i+1), fmt.Sprintf("mkp-p%d", i+1), fmt.Sprintf("10.244.0.%d/24", i+5)
		run(t, "ip", "link", "add", host, "netns", string(node), "type", "veth", "peer", "name", peer, "netns", string(pod))
		node.ip(t, "link", "set", host, "master", "mkp-br")
		node.ip(t, "link", "set", host, "type", "bridge_slave", "hairpin", "on")
		node.ip(t, "link", "set", host, "up")
		pod.ip(t, "addr", "add", ip, "dev", peer)
		pod.ip(t, "link", "set", peer, "up")
		pod.ip(t, "route", "add", "default", "via", "10.244.0.1")
	}
	pod1.serve(t, "10.244.0.5:8080", "a")

	ctx := context.Background()
	var p *Proxier
	var nft knftables.Interface
	node.do(t, func() {
		if err := EnsureKernel(slog.Default()); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(bridgeNFCall)
		if err != nil || strings.TrimSpace(string(b)) != "1" {
			t.Fatalf("bridge-nf-call-iptables in the node's namespace: %q, %v", b, err)
		}
		if nft, err = knftables.New(knftables.IPv4Family, TableName); err != nil {
			t.Fatal(err)
		}
		if p, err = New(Options{Config: testConfig, NFT: nft}); err != nil {
			t.Fatal(err)
		}
		p.OnServiceAdd(makeService("default", "web", "10.96.0.20").Port("http", tcp, 80, num(8080)).Obj())
		p.OnEndpointSliceAdd(makeSlice("default", "web-1", "web").Port("http", tcp, 8080).Endpoint("10.244.0.5", "node-a", ready).Obj())
		p.SetInitialized()
		if _, err := p.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	})
	defer node.do(t, func() {
		if err := Cleanup(ctx, nft); err != nil {
			t.Error(err)
		}
	})

	t.Run("a pod reaches a Service whose endpoint is on its bridge", func(t *testing.T) {
		if got, err := pod2.get(t, "10.96.0.20:80"); err != nil || got != "a" {
			t.Fatalf("got %q, %v", got, err)
		}
	})
	t.Run("a pod reaches itself through its Service (hairpin)", func(t *testing.T) {
		if got, err := pod1.get(t, "10.96.0.20:80"); err != nil || got != "a" {
			t.Fatalf("got %q, %v", got, err)
		}
	})
	t.Run("a killed proxy leaves traffic flowing; its successor resyncs without dropping a connection", func(t *testing.T) {
		pod1.serveEcho(t, "10.244.0.5:9090")
		echo := makeService("default", "echo", "10.96.0.21").Port("echo", tcp, 90, num(9090)).Obj()
		echoSlice := makeSlice("default", "echo-1", "echo").Port("echo", tcp, 9090).Endpoint("10.244.0.5", "node-a", ready).Obj()
		node.do(t, func() {
			p.OnServiceAdd(echo)
			p.OnEndpointSliceAdd(echoSlice)
			if _, err := p.Sync(ctx); err != nil {
				t.Fatal(err)
			}
		})
		var conn net.Conn
		pod2.do(t, func() {
			var err error
			if conn, err = net.DialTimeout("tcp", "10.96.0.21:90", 2*time.Second); err != nil {
				t.Fatal(err)
			}
		})
		defer conn.Close()
		roundTrip := func(msg string) {
			t.Helper()
			_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
			if _, err := io.WriteString(conn, msg); err != nil {
				t.Fatalf("write %q on the established connection: %v", msg, err)
			}
			buf := make([]byte, len(msg))
			if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != msg {
				t.Fatalf("echo of %q on the established connection: %q, %v", msg, buf, err)
			}
		}
		roundTrip("before")
		// Killed: no clean-up runs, the table stays in the kernel.
		p = nil
		if got, err := pod2.get(t, "10.96.0.20:80"); err != nil || got != "a" {
			t.Fatalf("a new connection with no proxy running: %q, %v", got, err)
		}
		roundTrip("no proxy")
		// Its successor starts from nothing and rewrites the table whole.
		node.do(t, func() {
			var err error
			if p, err = New(Options{Config: testConfig, NFT: nft}); err != nil {
				t.Fatal(err)
			}
			p.OnServiceAdd(makeService("default", "web", "10.96.0.20").Port("http", tcp, 80, num(8080)).Obj())
			p.OnEndpointSliceAdd(makeSlice("default", "web-1", "web").Port("http", tcp, 8080).Endpoint("10.244.0.5", "node-a", ready).Obj())
			p.OnServiceAdd(echo)
			p.OnEndpointSliceAdd(echoSlice)
			p.SetInitialized()
			if _, err := p.Sync(ctx); err != nil {
				t.Fatal(err)
			}
		})
		roundTrip("after the restart")
		if got, err := pod2.get(t, "10.96.0.20:80"); err != nil || got != "a" {
			t.Fatalf("a new connection after the restart: %q, %v", got, err)
		}
	})
}

// serveEcho echoes every connection to addr (inside ns) back to it.
func (ns netns) serveEcho(t *testing.T, addr string) {
	ns.accept(t, addr, func(c net.Conn) { _, _ = io.Copy(c, c) })
}

// serveUDP answers every datagram to addr (inside ns) with name.
func (ns netns) serveUDP(t *testing.T, addr, name string) {
	t.Helper()
	var c net.PacketConn
	ns.do(t, func() {
		var err error
		if c, err = net.ListenPacket("udp", addr); err != nil {
			t.Fatal(err)
		}
	})
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 64)
		for {
			_, from, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = c.WriteTo([]byte(name), from)
		}
	}()
}

// TestKernelStaleUDPFlows checks the conntrack clean-up: a UDP client
// that keeps its source port stays on its flow, so when its endpoint goes
// away only deleting the flow moves it to the new one.
func TestKernelStaleUDPFlows(t *testing.T) {
	ct, err := NewConntrack()
	if err != nil {
		t.Fatal(err)
	}
	node, client := twoHosts(t, "u")
	node.serveUDP(t, "10.244.0.5:5353", "a")
	node.serveUDP(t, "10.244.0.6:5353", "b")
	var sock net.PacketConn
	client.do(t, func() {
		if sock, err = net.ListenPacket("udp", "192.168.77.1:40000"); err != nil {
			t.Fatal(err)
		}
	})
	defer sock.Close()
	vip := &net.UDPAddr{IP: net.ParseIP("10.96.0.53"), Port: 53}
	ask := func() string {
		t.Helper()
		if _, err := sock.WriteTo([]byte("?"), vip); err != nil {
			t.Fatal(err)
		}
		_ = sock.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 64)
		n, _, err := sock.ReadFrom(buf)
		if err != nil {
			t.Fatalf("no answer from the VIP: %v", err)
		}
		return string(buf[:n])
	}

	ctx := context.Background()
	var p *Proxier
	var nft knftables.Interface
	sync := func() {
		t.Helper()
		node.do(t, func() {
			if _, err := p.Sync(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
	node.do(t, func() {
		if nft, err = knftables.New(knftables.IPv4Family, TableName); err != nil {
			t.Fatal(err)
		}
		if p, err = New(Options{Config: testConfig, NFT: nft, Conntrack: ct}); err != nil {
			t.Fatal(err)
		}
	})
	defer node.do(t, func() {
		if err := Cleanup(ctx, nft); err != nil {
			t.Error(err)
		}
	})
	svc := makeService("kube-system", "dns", "10.96.0.53").Port("dns", udp, 53, num(5353)).Obj()
	onA := makeSlice("kube-system", "dns-1", "dns").Port("dns", udp, 5353).Endpoint("10.244.0.5", "node-a", ready).Obj()
	p.OnServiceAdd(svc)
	p.OnEndpointSliceAdd(onA)
	p.SetInitialized()
	sync()
	if got := ask(); got != "a" {
		t.Fatalf("first answer from %q, want a", got)
	}
	onB := makeSlice("kube-system", "dns-1", "dns").Port("dns", udp, 5353).Endpoint("10.244.0.6", "node-a", ready).Obj()
	p.OnEndpointSliceUpdate(onA, onB)
	sync()
	if got := ask(); got != "b" {
		t.Fatalf("after endpoint a went away the same flow answered from %q, want b (stale conntrack entry kept)", got)
	}
}
