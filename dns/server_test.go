package dns

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	miekg "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"

	"minik/internal/freeport"
)

// fakeUpstream is a resolver on a loopback port that knows example.com.
func fakeUpstream(t *testing.T, handler miekg.HandlerFunc) string {
	t.Helper()
	pc, ln := listenUDPAndTCP(t)
	for _, srv := range []*miekg.Server{{PacketConn: pc, Handler: handler}, {Listener: ln, Handler: handler}} {
		go func() { _ = srv.ActivateAndServe() }()
		t.Cleanup(func() { _ = srv.Shutdown() })
	}
	return pc.LocalAddr().String()
}

// listenUDPAndTCP binds one port for both, as a DNS server serves both.
// The port comes from freeport, below the ephemeral range: a port the
// kernel gave UDP may be held for TCP by a client connection of another
// test, which once failed this package's tests.
func listenUDPAndTCP(t *testing.T) (net.PacketConn, net.Listener) {
	t.Helper()
	var err error
	for range 10 {
		var addr string
		if addr, err = freeport.Addr(); err != nil {
			continue
		}
		var pc net.PacketConn
		if pc, err = net.ListenPacket("udp", addr); err != nil {
			continue
		}
		var ln net.Listener
		if ln, err = net.Listen("tcp", addr); err != nil {
			pc.Close()
			continue
		}
		return pc, ln
	}
	t.Fatal(err)
	return nil, nil
}

func exampleCom(w miekg.ResponseWriter, req *miekg.Msg) {
	m := new(miekg.Msg).SetReply(req)
	m.RecursionAvailable = true
	q := req.Question[0]
	if q.Name == "www.example.com." && q.Qtype == miekg.TypeA {
		rr, _ := miekg.NewRR("www.example.com. 300 IN A 192.0.2.53")
		m.Answer = append(m.Answer, rr)
	} else {
		m.Rcode = miekg.RcodeNameError
	}
	_ = w.WriteMsg(m)
}

// startServer runs a server for s on a loopback port, forwarding to
// upstreams, until the test ends, and returns its address.
func startServer(t *testing.T, s *Store, upstreams []string, timeout time.Duration) string {
	t.Helper()
	srv := NewServer(ServerConfig{Listen: "127.0.0.1:0", Store: s, Forwarder: NewForwarder(upstreams, timeout),
		UpstreamTimeout: 2 * timeout, Logger: slog.New(slog.DiscardHandler)})
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return srv.Addr()
}

func ask(t *testing.T, addr, net_ string, name string, qtype uint16, edns uint16) *miekg.Msg {
	t.Helper()
	c := &miekg.Client{Net: net_, Timeout: 5 * time.Second}
	m := new(miekg.Msg).SetQuestion(name, qtype)
	if edns > 0 {
		m.SetEdns0(edns, false)
	}
	resp, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s over %s: %v", name, miekg.TypeToString[qtype], net_, err)
	}
	if resp.Id != m.Id {
		t.Errorf("answer id %d, want %d", resp.Id, m.Id)
	}
	return resp
}

func TestServer(t *testing.T) {
	s := newTestStore()
	s.UpsertService(makeService("default", "web").IPs("10.96.0.20").Port("http", 80, corev1.ProtocolTCP).Obj())
	s.UpsertService(makeService("default", "ext").ExternalName("www.example.com").Obj())
	s.UpsertService(makeService("default", "big").Headless().Obj())
	big := makeSlice("default", "big-1", "big")
	for i := range 100 {
		big = big.Ready("", fmt.Sprintf("10.244.0.%d", i+1))
	}
	s.UpsertSlice(big.Obj())
	addr := startServer(t, s, []string{fakeUpstream(t, exampleCom)}, time.Second)

	tests := []struct {
		name    string
		net     string
		qname   string
		qtype   uint16
		edns    uint16
		rcode   int
		answers int
		tc      bool
		aa      bool
		opt     bool
		authSOA bool
	}{
		{name: "a Service's A over UDP", net: "udp", qname: "web.default.svc.cluster.local.", qtype: miekg.TypeA, answers: 1, aa: true},
		{name: "a Service's A over TCP", net: "tcp", qname: "web.default.svc.cluster.local.", qtype: miekg.TypeA, answers: 1, aa: true},
		{name: "a question in upper case is answered", net: "udp", qname: "WEB.default.svc.cluster.local.", qtype: miekg.TypeA, answers: 1, aa: true},
		{name: "an unknown Service is NXDOMAIN with the SOA in the authority section", net: "udp", qname: "nope.default.svc.cluster.local.", qtype: miekg.TypeA,
			rcode: miekg.RcodeNameError, aa: true, authSOA: true},
		{name: "NODATA has the SOA in the authority section", net: "udp", qname: "web.default.svc.cluster.local.", qtype: miekg.TypeAAAA, aa: true, authSOA: true},
		{name: "a name outside the zone is forwarded over UDP", net: "udp", qname: "www.example.com.", qtype: miekg.TypeA, answers: 1},
		{name: "a name outside the zone is forwarded over TCP", net: "tcp", qname: "www.example.com.", qtype: miekg.TypeA, answers: 1},
		{name: "upstream's NXDOMAIN is passed on", net: "udp", qname: "nope.example.com.", qtype: miekg.TypeA, rcode: miekg.RcodeNameError},
		{name: "an ExternalName's CNAME comes with its target's address", net: "udp", qname: "ext.default.svc.cluster.local.", qtype: miekg.TypeA, answers: 2, aa: true},
		{name: "100 endpoints do not fit 512 bytes: truncated, TC set", net: "udp", qname: "big.default.svc.cluster.local.", qtype: miekg.TypeA,
			answers: 29, tc: true, aa: true}, // (512 - 12 header - 35 question) / 16 per compressed A
		{name: "an EDNS0 buffer of 4096 bytes takes all 100, with an OPT record", net: "udp", qname: "big.default.svc.cluster.local.", qtype: miekg.TypeA,
			edns: 4096, answers: 100, aa: true, opt: true},
		{name: "TCP takes all 100", net: "tcp", qname: "big.default.svc.cluster.local.", qtype: miekg.TypeA, answers: 100, aa: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := ask(t, addr, tt.net, tt.qname, tt.qtype, tt.edns)
			if resp.Rcode != tt.rcode {
				t.Errorf("rcode %s, want %s", miekg.RcodeToString[resp.Rcode], miekg.RcodeToString[tt.rcode])
			}
			if len(resp.Answer) != tt.answers {
				t.Errorf("%d answers, want %d: %v", len(resp.Answer), tt.answers, resp.Answer)
			}
			if resp.Truncated != tt.tc {
				t.Errorf("TC %v, want %v", resp.Truncated, tt.tc)
			}
			if resp.Authoritative != tt.aa {
				t.Errorf("AA %v, want %v", resp.Authoritative, tt.aa)
			}
			if got := resp.IsEdns0() != nil; got != tt.opt {
				t.Errorf("OPT record %v, want %v", got, tt.opt)
			}
			gotSOA := len(resp.Ns) == 1 && resp.Ns[0].Header().Rrtype == miekg.TypeSOA
			if gotSOA != tt.authSOA {
				t.Errorf("SOA in authority %v, want %v: %v", gotSOA, tt.authSOA, resp.Ns)
			}
			if len(resp.Question) != 1 || resp.Question[0].Name != tt.qname {
				t.Errorf("question %v, want %s echoed as asked", resp.Question, tt.qname)
			}
		})
	}
}

func TestServerShufflesAddresses(t *testing.T) {
	s := newTestStore()
	s.UpsertService(makeService("default", "db").Headless().Obj())
	sl := makeSlice("default", "db-1", "db")
	var want []string
	for i := range 10 {
		ip := fmt.Sprintf("10.244.0.%d", i+1)
		sl = sl.Ready("", ip)
		want = append(want, "db.default.svc.cluster.local. 30 IN A "+ip)
	}
	s.UpsertSlice(sl.Obj())
	slices.Sort(want)
	addr := startServer(t, s, nil, time.Second)
	firsts := map[string]bool{}
	for range 50 {
		resp := ask(t, addr, "udp", "db.default.svc.cluster.local.", miekg.TypeA, 0)
		if got := rrStrings(resp.Answer); !slices.Equal(got, want) {
			t.Fatalf("answer %q, want the 10 endpoints", got)
		}
		firsts[resp.Answer[0].(*miekg.A).A.String()] = true
	}
	if len(firsts) < 3 {
		t.Errorf("50 answers began with only %d different addresses; want them spread", len(firsts))
	}
	var a Answer
	s.Lookup("db.default.svc.cluster.local.", miekg.TypeA, &a)
	if a.Answer[0].(*miekg.A).A.String() != "10.244.0.1" {
		t.Errorf("the store's own order changed: %v", a.Answer[0])
	}
}

func TestServerUpstreamFailure(t *testing.T) {
	// A resolver that never answers, and a port where nothing listens.
	silent := fakeUpstream(t, func(miekg.ResponseWriter, *miekg.Msg) {})
	closed := func() string {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		return pc.LocalAddr().String()
	}()
	tests := []struct {
		name      string
		upstreams []string
		wantRcode int
	}{
		{"an upstream that does not answer gives SERVFAIL after the timeout", []string{silent}, miekg.RcodeServerFailure},
		{"an upstream that refuses gives SERVFAIL", []string{closed}, miekg.RcodeServerFailure},
		{"no upstream at all gives SERVFAIL", nil, miekg.RcodeServerFailure},
		{"the next upstream is asked when one fails", []string{closed, fakeUpstream(t, exampleCom)}, miekg.RcodeSuccess},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := startServer(t, newTestStore(), tt.upstreams, 200*time.Millisecond)
			start := time.Now()
			resp := ask(t, addr, "udp", "www.example.com.", miekg.TypeA, 0)
			if resp.Rcode != tt.wantRcode {
				t.Errorf("rcode %s, want %s", miekg.RcodeToString[resp.Rcode], miekg.RcodeToString[tt.wantRcode])
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("answered after %v, want within the upstream timeout", d)
			}
		})
	}
}

func TestServerRefusesForwardsOverTheCap(t *testing.T) {
	release := make(chan struct{})
	slow := fakeUpstream(t, func(w miekg.ResponseWriter, req *miekg.Msg) {
		<-release
		exampleCom(w, req)
	})
	srv := NewServer(ServerConfig{Listen: "127.0.0.1:0", Store: newTestStore(), Forwarder: NewForwarder([]string{slow}, 5*time.Second),
		MaxForwards: 1, Logger: slog.New(slog.DiscardHandler)})
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()

	first := make(chan *miekg.Msg, 1)
	go func() {
		resp, err := miekg.Exchange(new(miekg.Msg).SetQuestion("www.example.com.", miekg.TypeA), srv.Addr())
		if err != nil {
			resp = new(miekg.Msg) // reported below as a wrong answer
		}
		first <- resp
	}()
	eventuallyCond(t, "the first question waits on upstream", func() bool { return len(srv.fwds) == 1 })
	if resp := ask(t, srv.Addr(), "udp", "www.example.com.", miekg.TypeA, 0); resp.Rcode != miekg.RcodeRefused {
		t.Errorf("second question over the cap: rcode %s, want REFUSED", miekg.RcodeToString[resp.Rcode])
	}
	if resp := ask(t, srv.Addr(), "udp", "web.default.svc.cluster.local.", miekg.TypeA, 0); resp.Rcode != miekg.RcodeNameError {
		t.Errorf("a cluster name is answered from the store whatever upstream does: rcode %s", miekg.RcodeToString[resp.Rcode])
	}
	close(release)
	if resp := <-first; resp.Rcode != miekg.RcodeSuccess || len(resp.Answer) != 1 {
		t.Errorf("the waiting question: %v", resp)
	}
}

func eventuallyCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventually(t, what, func() error {
		if !cond() {
			return errString("not yet")
		}
		return nil
	})
}

func TestUpstreamsFromResolvConf(t *testing.T) {
	tests := []struct {
		name   string
		conf   string
		listen string
		self   []string
		want   []string
	}{
		{"every nameserver, in order", "nameserver 10.0.0.2\nnameserver 10.0.0.3\n", "192.0.2.2:53", nil,
			[]string{"10.0.0.2:53", "10.0.0.3:53"}},
		{"this server's own address is left out", "nameserver 192.0.2.2\nnameserver 10.0.0.3\n", "192.0.2.2:53", nil,
			[]string{"10.0.0.3:53"}},
		{"the kube-dns ClusterIP is left out", "nameserver 10.96.0.10\nnameserver 10.0.0.3\n", "192.0.2.2:53", []string{"10.96.0.10"},
			[]string{"10.0.0.3:53"}},
		{"loopback is left out when listening on every address", "nameserver 127.0.0.1\nnameserver 10.0.0.3\n", "0.0.0.0:53", nil,
			[]string{"10.0.0.3:53"}},
		{"the same address on another port is not this server", "nameserver 127.0.0.1\n", "127.0.0.1:5353", nil,
			[]string{"127.0.0.1:53"}},
		{"IPv6 nameservers are bracketed", "nameserver fd00::1\n", "192.0.2.2:53", nil, []string{"[fd00::1]:53"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "resolv.conf")
			if err := os.WriteFile(path, []byte(tt.conf), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := UpstreamsFromResolvConf(path, tt.listen, tt.self...)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("upstreams %v, want %v", got, tt.want)
			}
		})
	}
}
