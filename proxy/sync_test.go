package proxy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/knftables"
)

// newFakeProxier returns a Proxier over a fake nftables, with the given
// objects already known and its first (full) sync done.
func newFakeProxier(t *testing.T, objs ...any) (*Proxier, *knftables.Fake) {
	t.Helper()
	fake := knftables.NewFake(knftables.IPv4Family, TableName)
	p, err := New(Options{Config: testConfig, NFT: fake})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Service:
			p.OnServiceAdd(o)
		case *discoveryv1.EndpointSlice:
			p.OnEndpointSliceAdd(o)
		}
	}
	p.SetInitialized()
	res, err := p.Sync(context.Background())
	if err != nil || !res.Full {
		t.Fatalf("first sync: %+v, %v", res, err)
	}
	return p, fake
}

func mustSync(t *testing.T, p *Proxier) SyncResult {
	t.Helper()
	res, err := p.Sync(context.Background())
	if err != nil {
		t.Fatalf("sync: %v\n%s", err, res.Transaction)
	}
	return res
}

// assertMatchesPlan checks that what incremental syncs left in the fake
// is exactly what a full write of the plan of the current objects gives.
func assertMatchesPlan(t *testing.T, p *Proxier, fake *knftables.Fake) {
	t.Helper()
	var svcs []*corev1.Service
	var sls []*discoveryv1.EndpointSlice
	p.mu.Lock()
	for _, s := range p.services {
		svcs = append(svcs, s)
	}
	for k := range p.slices {
		sls = append(sls, p.slicesOfLocked(k)...)
	}
	p.mu.Unlock()
	want := canonical(dumpRuleset(t, testConfig, Plan(testConfig, svcs, sls), true))
	if got := canonical(fake.Dump()); got != want {
		t.Fatalf("the table after incremental syncs differs from a full write of the plan\n--- got:\n%s\n--- want:\n%s", got, want)
	}
}

func TestIncrementalSync(t *testing.T) {
	web := makeService("default", "web", "10.96.0.10").Port("http", tcp, 80, num(8080)).NodePort(30080).Obj()
	webSlice := makeSlice("default", "web-1", "web").Port("http", tcp, 8080).
		Endpoint("10.244.0.5", "node-a", ready).Endpoint("10.244.1.7", "node-b", ready).Obj()
	db := makeService("default", "db", "10.96.0.20").Port("sql", tcp, 5432, num(5432)).Obj()
	dbSlice := makeSlice("default", "db-1", "db").Port("sql", tcp, 5432).Endpoint("10.244.0.9", "node-a", ready).Obj()
	dns := makeService("kube-system", "dns", "10.96.0.53").Port("dns", udp, 53, num(53)).Obj()
	dnsSlice := makeSlice("kube-system", "dns-1", "dns").Port("dns", udp, 53).Endpoint("10.244.0.3", "node-a", ready).Obj()
	all := []any{web, webSlice, db, dbSlice, dns, dnsSlice}

	t.Run("an endpoint change touches only that Service's chains and elements", func(t *testing.T) {
		p, fake := newFakeProxier(t, all...)
		three := webSlice.DeepCopy()
		three.Endpoints = append(three.Endpoints, makeSlice("", "", "").Endpoint("10.244.1.8", "node-b", ready).Obj().Endpoints...)
		p.OnEndpointSliceUpdate(webSlice, three)
		res := mustSync(t, p)
		if res.Full || res.Services != 1 {
			t.Fatalf("want an incremental sync of 1 Service, got %+v", res)
		}
		// The service chain is rewritten with the new endpoint, and the
		// endpoint's address joins the hairpin set; nothing else.
		hairpin := "add element ip minik-proxy hairpin-endpoints { 10.244.1.8 . 10.244.1.8 }"
		for _, line := range strings.Split(strings.TrimSpace(res.Transaction), "\n") {
			if !strings.Contains(line, "default/web/") && line != hairpin {
				t.Errorf("operation outside Service default/web: %s", line)
			}
		}
		if n := strings.Count(res.Transaction, "add chain"); n != 0 {
			t.Errorf("%d chains added, want none (an endpoint is a rule of the service chain):\n%s", n, res.Transaction)
		}
		if n := strings.Count(res.Transaction, "flush chain"); n != 1 {
			t.Errorf("%d chains flushed, want 1 (the service chain):\n%s", n, res.Transaction)
		}
		if n := strings.Count(res.Transaction, "element"); n != 1 || !strings.Contains(res.Transaction, hairpin) {
			t.Errorf("want one element added, the new endpoint's hairpin pair:\n%s", res.Transaction)
		}
		assertMatchesPlan(t, p, fake)
	})

	t.Run("the last endpoint going away swaps the service-ips element for a reject", func(t *testing.T) {
		p, fake := newFakeProxier(t, all...)
		none := dbSlice.DeepCopy()
		none.Endpoints = nil
		p.OnEndpointSliceUpdate(dbSlice, none)
		res := mustSync(t, p)
		for _, want := range []string{
			"delete element ip minik-proxy service-ips { 10.96.0.20 . tcp . 5432 }",
			`add element ip minik-proxy no-endpoint-services { 10.96.0.20 . tcp . 5432 comment "default/db:sql" : goto reject-chain }`,
			"delete chain ip minik-proxy service-",
			"delete element ip minik-proxy hairpin-endpoints { 10.244.0.9 . 10.244.0.9 }",
		} {
			if !strings.Contains(res.Transaction, want) {
				t.Errorf("transaction lacks %q:\n%s", want, res.Transaction)
			}
		}
		assertMatchesPlan(t, p, fake)
	})

	t.Run("a deleted Service's objects are all removed in the sync", func(t *testing.T) {
		p, fake := newFakeProxier(t, all...)
		p.OnServiceDelete(web)
		p.OnEndpointSliceDelete(webSlice)
		res := mustSync(t, p)
		if res.Full {
			t.Fatalf("a deletion made a full sync")
		}
		if strings.Contains(fake.Dump(), "default/web") || strings.Contains(fake.Dump(), "30080") {
			t.Errorf("objects of default/web remain:\n%s", fake.Dump())
		}
		assertMatchesPlan(t, p, fake)
	})

	t.Run("Services sharing an endpoint share its hairpin pair until the last lets it go", func(t *testing.T) {
		p, fake := newFakeProxier(t, all...)
		pair := "hairpin-endpoints { 10.244.0.9 . 10.244.0.9 }"
		// A second Service selects db's pod.
		admin := makeService("default", "db-admin", "10.96.0.21").Port("sql", tcp, 5432, num(5432)).Obj()
		adminSlice := makeSlice("default", "db-admin-1", "db-admin").Port("sql", tcp, 5432).Endpoint("10.244.0.9", "node-a", ready).Obj()
		p.OnServiceAdd(admin)
		p.OnEndpointSliceAdd(adminSlice)
		if res := mustSync(t, p); strings.Contains(res.Transaction, pair) {
			t.Errorf("the pair was written again for its second holder:\n%s", res.Transaction)
		}
		p.OnServiceDelete(db)
		p.OnEndpointSliceDelete(dbSlice)
		if res := mustSync(t, p); strings.Contains(res.Transaction, pair) {
			t.Errorf("the pair was deleted while db-admin still holds it:\n%s", res.Transaction)
		}
		assertMatchesPlan(t, p, fake)
		p.OnServiceDelete(admin)
		p.OnEndpointSliceDelete(adminSlice)
		if res := mustSync(t, p); !strings.Contains(res.Transaction, "delete element ip minik-proxy "+pair) {
			t.Errorf("the pair outlived its last holder:\n%s", res.Transaction)
		}
		assertMatchesPlan(t, p, fake)
	})

	t.Run("a change that alters no rule makes an empty transaction", func(t *testing.T) {
		p, _ := newFakeProxier(t, all...)
		same := webSlice.DeepCopy()
		same.ResourceVersion = "2"
		p.OnEndpointSliceUpdate(webSlice, same)
		svc := web.DeepCopy()
		svc.Annotations = map[string]string{"note": "x"}
		p.OnServiceUpdate(web, svc)
		if res := mustSync(t, p); res.Operations != 0 || res.Services != 1 {
			t.Fatalf("want 0 operations for 1 Service, got %+v\n%s", res, res.Transaction)
		}
	})

	t.Run("a ClusterIP and NodePort moving to a new Service in one sync", func(t *testing.T) {
		p, fake := newFakeProxier(t, all...)
		p.OnServiceDelete(web)
		web2 := web.DeepCopy()
		web2.Name = "web2"
		p.OnServiceAdd(web2)
		s2 := webSlice.DeepCopy()
		s2.Name, s2.Labels[ServiceNameLabel] = "web2-1", "web2"
		p.OnEndpointSliceAdd(s2)
		mustSync(t, p)
		assertMatchesPlan(t, p, fake)
	})

	t.Run("a failed transaction is retried as a full rewrite", func(t *testing.T) {
		fake := knftables.NewFake(knftables.IPv4Family, TableName)
		flaky := &failingNFT{Interface: fake}
		p, err := New(Options{Config: testConfig, NFT: flaky})
		if err != nil {
			t.Fatal(err)
		}
		p.OnServiceAdd(db)
		p.OnEndpointSliceAdd(dbSlice)
		p.SetInitialized()
		mustSync(t, p)
		p.OnServiceAdd(web)
		p.OnEndpointSliceAdd(webSlice)
		flaky.fail = true
		if _, err := p.Sync(context.Background()); err == nil {
			t.Fatal("sync did not report the failure")
		}
		flaky.fail = false
		if res := mustSync(t, p); !res.Full || res.Services != 2 {
			t.Fatalf("want a full sync of 2 Services after a failure, got %+v", res)
		}
		assertMatchesPlan(t, p, fake)
	})
}

// canonical sorts the elements of a dump: a set keeps them in the order
// they were added, which the comparison must not depend on. Rules keep
// their order.
func canonical(dump string) string {
	var rest, elements []string
	for _, l := range strings.Split(dump, "\n") {
		if strings.HasPrefix(l, "add element ") {
			elements = append(elements, l)
		} else {
			rest = append(rest, l)
		}
	}
	slices.Sort(elements)
	return strings.Join(append(rest, elements...), "\n")
}

type failingNFT struct {
	knftables.Interface
	fail bool
}

func (f *failingNFT) Run(ctx context.Context, tx *knftables.Transaction) error {
	if f.fail {
		return errors.New("injected failure")
	}
	return f.Interface.Run(ctx, tx)
}

// TestRandomChangesMatchFullPlan applies random Service and endpoint
// changes, syncing incrementally after each few, and checks every time
// that the table equals a full write of the plan.
func TestRandomChangesMatchFullPlan(t *testing.T) {
	p, fake := newFakeProxier(t)
	randomChanges(t, p, 300, func() { assertMatchesPlan(t, p, fake) })
}

// randomChanges makes steps random changes of Services and their
// endpoints, syncing after about every third and calling check after
// each sync.
func randomChanges(t *testing.T, p *Proxier, steps int, check func()) {
	rng := rand.New(rand.NewPCG(1, 2))
	services := map[string]*corev1.Service{}
	slices := map[string]*discoveryv1.EndpointSlice{}
	for step := 0; step < steps; step++ {
		name := fmt.Sprintf("s%d", rng.IntN(8))
		switch op := rng.IntN(10); {
		case op < 2: // create or replace the Service, with random features
			b := makeService("ns", name, fmt.Sprintf("10.96.1.%d", rng.IntN(12)+1)).Port("p", []corev1.Protocol{tcp, udp}[rng.IntN(2)], 80, num(8080))
			if rng.IntN(2) == 0 {
				b.NodePort(int32(30000 + rng.IntN(12)))
				if rng.IntN(2) == 0 {
					b.ExternalLocal()
				}
			}
			if rng.IntN(3) == 0 {
				b.Affinity(int32(60 * (1 + rng.IntN(2))))
			}
			if rng.IntN(4) == 0 {
				b.InternalLocal()
			}
			// Addresses and node ports are unique among live Services.
			clash := false
			for n, o := range services {
				if n != name && (o.Spec.ClusterIP == b.s.Spec.ClusterIP || o.Spec.Ports[0].NodePort != 0 && o.Spec.Ports[0].NodePort == b.s.Spec.Ports[0].NodePort) {
					clash = true
				}
			}
			if clash {
				continue
			}
			svc := b.Obj()
			p.OnServiceUpdate(services[name], svc)
			services[name] = svc
		case op < 3:
			if old := services[name]; old != nil {
				p.OnServiceDelete(old)
				delete(services, name)
			}
		default: // new endpoints for the Service
			proto := tcp
			if s := services[name]; s != nil {
				proto = s.Spec.Ports[0].Protocol
			}
			b := makeSlice("ns", name+"-1", name).Port("p", proto, 8080)
			for i := 0; i < rng.IntN(4); i++ {
				b.Endpoint(fmt.Sprintf("10.244.%d.%d", rng.IntN(2), rng.IntN(6)+1), []string{"node-a", "node-b"}[rng.IntN(2)], epState(rng.IntN(4)))
			}
			s := b.Obj()
			if old := slices[name]; old != nil {
				p.OnEndpointSliceUpdate(old, s)
			} else {
				p.OnEndpointSliceAdd(s)
			}
			slices[name] = s
		}
		if rng.IntN(3) == 0 {
			mustSync(t, p)
			check()
		}
	}
}

func TestProgrammingLatencyIsMeasuredFromTheTriggerTime(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	k := types.NamespacedName{Namespace: "default", Name: "web"}
	fake := knftables.NewFake(knftables.IPv4Family, TableName)
	got := map[types.NamespacedName][]time.Duration{}
	p, err := New(Options{Config: testConfig, NFT: fake, Now: func() time.Time { return now },
		ObserveProgramming: func(k types.NamespacedName, d time.Duration) { got[k] = append(got[k], d) }})
	if err != nil {
		t.Fatal(err)
	}
	p.OnServiceAdd(makeService("default", "web", "10.96.0.10").Port("http", tcp, 80, num(8080)).Obj())
	// Listed at start: a change from before the proxy, and one without a
	// trigger time; neither is measured.
	old := makeSlice("default", "web-1", "web").Port("http", tcp, 8080).Endpoint("10.244.0.4", "node-a", ready).TriggerTime(now.Add(-time.Hour)).Obj()
	p.OnEndpointSliceAdd(old)
	p.OnEndpointSliceAdd(makeSlice("default", "web-2", "web").Port("http", tcp, 8080).Obj())
	p.SetInitialized()
	mustSync(t, p)
	if len(got) != 0 {
		t.Fatalf("the first list was measured: %v", got)
	}

	now = now.Add(time.Second)
	p.OnEndpointSliceUpdate(old, makeSlice("default", "web-1", "web").Port("http", tcp, 8080).
		Endpoint("10.244.0.5", "node-a", ready).TriggerTime(now.Add(-300*time.Millisecond)).Obj())
	now = now.Add(20 * time.Millisecond)
	mustSync(t, p)
	if want := []time.Duration{320 * time.Millisecond}; fmt.Sprint(got[k]) != fmt.Sprint(want) {
		t.Fatalf("latencies %v, want %v (from the trigger time)", got[k], want)
	}

	// Without a trigger time: from when the proxy saw the change.
	p.OnEndpointSliceDelete(makeSlice("default", "web-2", "web").Obj())
	now = now.Add(7 * time.Millisecond)
	mustSync(t, p)
	if want := []time.Duration{320 * time.Millisecond, 7 * time.Millisecond}; fmt.Sprint(got[k]) != fmt.Sprint(want) {
		t.Fatalf("latencies %v, want %v", got[k], want)
	}
}

func TestStaleConntrack(t *testing.T) {
	a, b := netip.MustParseAddr("10.244.0.5"), netip.MustParseAddr("10.244.1.7")
	vip := netip.MustParseAddr("10.96.0.53")
	rules := func(eps ...netip.Addr) *ServiceRules {
		return &ServiceRules{UDP: []UDPPort{{Name: "kube-system/dns:dns", IPs: []netip.Addr{vip}, Port: 53, NodePort: 30053, Endpoints: eps}}}
	}
	tests := []struct {
		name     string
		old, new *ServiceRules
		want     []string
	}{{
		name: "a new Service has nothing stale",
		new:  rules(a),
	}, {
		name: "an endpoint that goes away loses its flows, to the VIP and to the node port",
		old:  rules(a, b), new: rules(a),
		want: []string{"-D -p udp --orig-dst 10.96.0.53 --dport 53 --dst-nat 10.244.1.7", "-D -p udp --dport 30053 --dst-nat 10.244.1.7"},
	}, {
		name: "the first endpoint clears the flows that were never translated",
		old:  rules(), new: rules(a),
		want: []string{"-D -p udp --orig-dst 10.96.0.53 --dport 53", "-D -p udp --dport 30053"},
	}, {
		name: "a deleted Service's endpoints lose their flows",
		old:  rules(a), new: nil,
		want: []string{"-D -p udp --orig-dst 10.96.0.53 --dport 53 --dst-nat 10.244.0.5", "-D -p udp --dport 30053 --dst-nat 10.244.0.5"},
	}, {
		name: "unchanged endpoints keep their flows",
		old:  rules(a, b), new: rules(b, a),
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range staleConntrack(tc.old, tc.new) {
				got = append(got, f.String())
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestChainDeletionCanWait(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fake := knftables.NewFake(knftables.IPv4Family, TableName)
	p, err := New(Options{Config: testConfig, NFT: fake, ChainDeleteDelay: time.Second, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	web := makeService("default", "web", "10.96.0.10").Port("http", tcp, 80, num(8080)).Obj()
	two := makeSlice("default", "web-1", "web").Port("http", tcp, 8080).
		Endpoint("10.244.0.5", "node-a", ready).Endpoint("10.244.1.7", "node-b", ready).Obj()
	// A Service whose endpoints all go keeps no service chain: its address
	// now leads to the reject verdict.
	empty := makeSlice("default", "web-1", "web").Port("http", tcp, 8080).Obj()
	p.OnServiceAdd(web)
	p.OnEndpointSliceAdd(two)
	p.SetInitialized()
	mustSync(t, p)
	gone := "service-SUSTUHLJ-default/web/tcp/http"

	p.OnEndpointSliceUpdate(two, empty)
	now = now.Add(10 * time.Millisecond)
	res := mustSync(t, p)
	if !strings.Contains(res.Transaction, "flush chain ip minik-proxy "+gone) || strings.Contains(res.Transaction, "delete chain") {
		t.Fatalf("want the unused chain flushed and kept:\n%s", res.Transaction)
	}
	if ch := fake.Table.Chains[gone]; ch == nil || len(ch.Rules) != 0 {
		t.Fatalf("the unused chain should be there and empty: %+v", ch)
	}

	now = now.Add(500 * time.Millisecond)
	if res := mustSync(t, p); res.Operations != 0 {
		t.Fatalf("deleted before its time:\n%s", res.Transaction)
	}
	now = now.Add(500 * time.Millisecond)
	res = mustSync(t, p)
	if res.Transaction != "delete chain ip minik-proxy "+gone+"\n" {
		t.Fatalf("want only the deletion of the stale chain, got:\n%s", res.Transaction)
	}
	assertMatchesPlan(t, p, fake)

	// A chain wanted again before its deletion is refilled, not deleted.
	p.OnEndpointSliceUpdate(empty, two)
	mustSync(t, p)
	p.OnEndpointSliceUpdate(two, empty)
	mustSync(t, p)
	p.OnEndpointSliceUpdate(empty, two)
	now = now.Add(2 * time.Second)
	res = mustSync(t, p)
	if strings.Contains(res.Transaction, "delete chain") {
		t.Fatalf("deleted a chain wanted again:\n%s", res.Transaction)
	}
	assertMatchesPlan(t, p, fake)
	if res := mustSync(t, p); res.Operations != 0 {
		t.Fatalf("a later sync still had work:\n%s", res.Transaction)
	}
}

func TestKernelRelease(t *testing.T) {
	for release, want := range map[string]bool{
		"6.1.0-18-amd64": false, "5.10.0-28-amd64": false, "6.2.0": true,
		"6.18.44-fc-v669": true, "7.0.1": true, "6.2-rc1": true, "garbage": false,
	} {
		if got := releaseAtLeast(release, 6, 2); got != want {
			t.Errorf("releaseAtLeast(%q, 6, 2) = %v, want %v", release, got, want)
		}
	}
}

func TestLoopCoalescesBurstsAndResyncsInFull(t *testing.T) {
	fake := &lockedFake{Fake: knftables.NewFake(knftables.IPv4Family, TableName)}
	var mu sync.Mutex
	var syncs []SyncResult
	p, err := New(Options{Config: testConfig, NFT: fake, MinSyncPeriod: 100 * time.Millisecond, FullSyncPeriod: time.Hour,
		ObserveSync: func(res SyncResult, _ time.Duration) { mu.Lock(); syncs = append(syncs, res); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		p.OnServiceAdd(makeService("default", fmt.Sprintf("s%d", i), fmt.Sprintf("10.96.0.%d", i+1)).Port("http", tcp, 80, num(8080)).Obj())
	}
	p.SetInitialized()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Loop(ctx) }()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(syncs) }
	waitFor := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); count() < n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d syncs after 5s, want %d", count(), n)
			}
		}
	}
	waitFor(1)
	// A burst of 20 endpoint changes: the first goes at once (or after the
	// minimum period), the rest together.
	for i := range 20 {
		p.OnEndpointSliceAdd(makeSlice("default", fmt.Sprintf("s%d-1", i), fmt.Sprintf("s%d", i)).Port("http", tcp, 8080).Endpoint("10.244.0.5", "node-a", ready).Obj())
	}
	time.Sleep(400 * time.Millisecond)
	if n := count(); n < 2 || n > 3 {
		t.Fatalf("%d syncs for the start and a burst of 20 changes, want 2 or 3", n)
	}
	if n := strings.Count(fake.dump(), "add element ip minik-proxy service-ips {"); n != 20 {
		t.Fatalf("%d Services reachable after the burst, want 20:\n%s", n, fake.dump())
	}
	cancel()
	<-done

	// The periodic full rewrite.
	p.opts.FullSyncPeriod = 50 * time.Millisecond
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	before := count()
	go p.Loop(ctx)
	p.OnServiceDelete(makeService("default", "s0", "10.96.0.1").Obj())
	waitFor(before + 2)
	mu.Lock()
	defer mu.Unlock()
	if !syncs[len(syncs)-1].Full {
		t.Fatalf("want a full sync after FullSyncPeriod, got %+v", syncs[len(syncs)-1])
	}
}
