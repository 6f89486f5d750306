package dns

import (
	"slices"
	"testing"

	miekg "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

const (
	nodata   = "NODATA"
	nxdomain = "NXDOMAIN"
	servfail = "SERVFAIL"
	upstream = "FORWARD"
)

// query is one question and what the store must answer. want is the
// answer section (sorted, as dig prints records), or one of the
// outcomes above.
type query struct {
	name  string
	qtype uint16
	want  []string
	extra []string // checked only when not nil
	chase string
}

func is(outcome string) []string { return []string{outcome} }

func checkQuery(t *testing.T, s *Store, q query) {
	t.Helper()
	var a Answer
	s.Lookup(q.name, q.qtype, &a)
	label := q.name + " " + miekg.TypeToString[q.qtype]
	var got []string
	switch {
	case a.Forward:
		got = is(upstream)
	case a.Rcode == miekg.RcodeNameError:
		got = is(nxdomain)
		checkSOA(t, a.Ns)
	case a.Rcode == miekg.RcodeServerFailure:
		got = is(servfail)
	case len(a.Answer) == 0:
		got = is(nodata)
		checkSOA(t, a.Ns)
	default:
		got = rrStrings(a.Answer)
		if len(a.Ns) != 0 {
			t.Errorf("%s: authority %v on a positive answer", label, rrStrings(a.Ns))
		}
	}
	if !slices.Equal(got, q.want) {
		t.Errorf("%s:\n got %q\nwant %q", label, got, q.want)
	}
	if q.extra != nil && !slices.Equal(rrStrings(a.Extra), q.extra) {
		t.Errorf("%s: extra\n got %q\nwant %q", label, rrStrings(a.Extra), q.extra)
	}
	if a.Chase != q.chase {
		t.Errorf("%s: chase %q, want %q", label, a.Chase, q.chase)
	}
}

func TestStoreLookup(t *testing.T) {
	web := makeService("default", "web").IPs("10.96.0.20").Port("http", 80, corev1.ProtocolTCP).Port("", 8080, corev1.ProtocolTCP)
	dual := makeService("default", "dual").IPs("10.96.0.21", "fd00:10:96::21").Port("dns", 53, corev1.ProtocolUDP)
	db := makeService("prod", "db").Headless().Port("pg", 5432, corev1.ProtocolTCP)
	dbSlice := makeSlice("prod", "db-abc", "db").Port("pg", 5432, corev1.ProtocolTCP).
		Ready("db-0", "10.244.1.5").Ready("", "10.244.2.6").NotReady("db-2", "10.244.3.7")
	objects := []any{
		web.Obj(), dual.Obj(), db.Obj(), dbSlice.Obj(),
		makeSlice("default", "web-xyz", "web").Port("http", 8080, corev1.ProtocolTCP).Ready("", "10.244.1.9").Obj(),
		makeService("prod", "empty").Headless().Obj(),
		makeSlice("prod", "empty-1", "empty").NotReady("", "10.244.1.10").Obj(),
		makeService("prod", "eager").Headless().PublishNotReady().Port("http", 80, corev1.ProtocolTCP).Obj(),
		makeSlice("prod", "eager-1", "eager").Port("http", 80, corev1.ProtocolTCP).NotReady("e-0", "10.244.1.11").Obj(),
		makeService("prod", "ext").ExternalName("WWW.Example.COM").Obj(),
		makeService("prod", "extip").ExternalName("192.0.2.1").Obj(),
		makeService("prod", "v6").Headless().Obj(),
		makeSlice("prod", "v6-1", "v6").Type(discoveryv1.AddressTypeIPv6).Ready("", "fd00:244::").Obj(),
	}
	s := newTestStore()
	for _, o := range objects {
		switch o := o.(type) {
		case *corev1.Service:
			s.UpsertService(o)
		case *discoveryv1.EndpointSlice:
			s.UpsertSlice(o)
		}
	}
	tests := []struct {
		name string
		q    query
	}{
		{"a ClusterIP Service answers A with its ClusterIP",
			query{name: "web.default.svc.cluster.local.", qtype: miekg.TypeA, want: []string{"web.default.svc.cluster.local. 30 IN A 10.96.0.20"}}},
		{"names are compared without regard to case",
			query{name: "WEB.Default.SVC.cluster.LOCAL.", qtype: miekg.TypeA, want: []string{"web.default.svc.cluster.local. 30 IN A 10.96.0.20"}}},
		{"AAAA of an IPv4-only Service is NODATA with the SOA",
			query{name: "web.default.svc.cluster.local.", qtype: miekg.TypeAAAA, want: is(nodata)}},
		{"a dual-stack Service answers AAAA with its IPv6 ClusterIP",
			query{name: "dual.default.svc.cluster.local.", qtype: miekg.TypeAAAA, want: []string{"dual.default.svc.cluster.local. 30 IN AAAA fd00:10:96::21"}}},
		{"another type of an existing name is NODATA",
			query{name: "web.default.svc.cluster.local.", qtype: miekg.TypeMX, want: is(nodata)}},
		{"a Service that does not exist is NXDOMAIN with the SOA",
			query{name: "nope.default.svc.cluster.local.", qtype: miekg.TypeA, want: is(nxdomain)}},
		{"a namespace with Services is an empty name: NODATA",
			query{name: "default.svc.cluster.local.", qtype: miekg.TypeA, want: is(nodata)}},
		{"a namespace without Services is NXDOMAIN",
			query{name: "kube-public.svc.cluster.local.", qtype: miekg.TypeA, want: is(nxdomain)}},
		{"svc.ZONE exists", query{name: "svc.cluster.local.", qtype: miekg.TypeA, want: is(nodata)}},
		{"a name under the zone that is neither svc nor pod is NXDOMAIN",
			query{name: "web.default.cluster.local.", qtype: miekg.TypeA, want: is(nxdomain)}},
		{"the server does not apply search lists: a name with the search suffix twice is NXDOMAIN",
			query{name: "web.default.svc.cluster.local.default.svc.cluster.local.", qtype: miekg.TypeA, want: is(nxdomain)}},
		{"a short name is outside the zone and goes upstream",
			query{name: "web.default.", qtype: miekg.TypeA, want: is(upstream)}},
		{"a name outside the zone goes upstream",
			query{name: "example.com.", qtype: miekg.TypeA, want: is(upstream)}},

		{"a headless Service answers one A per ready endpoint",
			query{name: "db.prod.svc.cluster.local.", qtype: miekg.TypeA, want: []string{
				"db.prod.svc.cluster.local. 30 IN A 10.244.1.5", "db.prod.svc.cluster.local. 30 IN A 10.244.2.6"}}},
		{"a headless Service with no ready endpoint is NXDOMAIN",
			query{name: "empty.prod.svc.cluster.local.", qtype: miekg.TypeA, want: is(nxdomain)}},
		{"publishNotReadyAddresses publishes endpoints that are not ready",
			query{name: "eager.prod.svc.cluster.local.", qtype: miekg.TypeA, want: []string{"eager.prod.svc.cluster.local. 30 IN A 10.244.1.11"}}},
		{"AAAA of a headless Service with only IPv4 endpoints is NODATA",
			query{name: "db.prod.svc.cluster.local.", qtype: miekg.TypeAAAA, want: is(nodata)}},
		{"an IPv6 headless Service answers AAAA",
			query{name: "v6.prod.svc.cluster.local.", qtype: miekg.TypeAAAA, want: []string{"v6.prod.svc.cluster.local. 30 IN AAAA fd00:244::"}}},
		{"an endpoint with a hostname has HOSTNAME.SVC.NS",
			query{name: "db-0.db.prod.svc.cluster.local.", qtype: miekg.TypeA, want: []string{"db-0.db.prod.svc.cluster.local. 30 IN A 10.244.1.5"}}},
		{"an endpoint without a hostname is named by its address with dashes",
			query{name: "10-244-2-6.db.prod.svc.cluster.local.", qtype: miekg.TypeA, want: []string{"10-244-2-6.db.prod.svc.cluster.local. 30 IN A 10.244.2.6"}}},
		{"an IPv6 address ending in :: is named with a trailing 0",
			query{name: "fd00-244--0.v6.prod.svc.cluster.local.", qtype: miekg.TypeAAAA, want: []string{"fd00-244--0.v6.prod.svc.cluster.local. 30 IN AAAA fd00:244::"}}},
		{"an endpoint that is not ready has no name",
			query{name: "db-2.db.prod.svc.cluster.local.", qtype: miekg.TypeA, want: is(nxdomain)}},
		{"an endpoint of a publishNotReadyAddresses Service has its name even when not ready",
			query{name: "e-0.eager.prod.svc.cluster.local.", qtype: miekg.TypeA, want: []string{"e-0.eager.prod.svc.cluster.local. 30 IN A 10.244.1.11"}}},
		{"endpoints of a ClusterIP Service have names too, as in CoreDNS",
			query{name: "10-244-1-9.web.default.svc.cluster.local.", qtype: miekg.TypeA, want: []string{"10-244-1-9.web.default.svc.cluster.local. 30 IN A 10.244.1.9"}}},
		{"a name below an endpoint is NXDOMAIN",
			query{name: "x.db-0.db.prod.svc.cluster.local.", qtype: miekg.TypeA, want: is(nxdomain)}},

		{"SRV of a named port of a ClusterIP Service targets the Service, with its address as extra",
			query{name: "_http._tcp.web.default.svc.cluster.local.", qtype: miekg.TypeSRV,
				want:  []string{"_http._tcp.web.default.svc.cluster.local. 30 IN SRV 0 100 80 web.default.svc.cluster.local."},
				extra: []string{"web.default.svc.cluster.local. 30 IN A 10.96.0.20"}}},
		{"SRV port and protocol labels are compared without regard to case",
			query{name: "_HTTP._Tcp.web.default.svc.cluster.local.", qtype: miekg.TypeSRV,
				want: []string{"_http._tcp.web.default.svc.cluster.local. 30 IN SRV 0 100 80 web.default.svc.cluster.local."}}},
		{"SRV of the wrong protocol is NXDOMAIN",
			query{name: "_http._udp.web.default.svc.cluster.local.", qtype: miekg.TypeSRV, want: is(nxdomain)}},
		{"SRV of a port the Service does not have is NXDOMAIN",
			query{name: "_grpc._tcp.web.default.svc.cluster.local.", qtype: miekg.TypeSRV, want: is(nxdomain)}},
		{"A of a port name is NODATA",
			query{name: "_http._tcp.web.default.svc.cluster.local.", qtype: miekg.TypeA, want: is(nodata)}},
		{"SRV of the Service name lists every port, sharing the weight",
			query{name: "web.default.svc.cluster.local.", qtype: miekg.TypeSRV, want: []string{
				"web.default.svc.cluster.local. 30 IN SRV 0 50 80 web.default.svc.cluster.local.",
				"web.default.svc.cluster.local. 30 IN SRV 0 50 8080 web.default.svc.cluster.local."}}},
		{"SRV of a headless Service has one record per ready endpoint, targeting its name",
			query{name: "_pg._tcp.db.prod.svc.cluster.local.", qtype: miekg.TypeSRV,
				want: []string{
					"_pg._tcp.db.prod.svc.cluster.local. 30 IN SRV 0 50 5432 10-244-2-6.db.prod.svc.cluster.local.",
					"_pg._tcp.db.prod.svc.cluster.local. 30 IN SRV 0 50 5432 db-0.db.prod.svc.cluster.local."},
				extra: []string{"10-244-2-6.db.prod.svc.cluster.local. 30 IN A 10.244.2.6", "db-0.db.prod.svc.cluster.local. 30 IN A 10.244.1.5"}}},

		{"PTR of a ClusterIP names the Service",
			query{name: "20.0.96.10.in-addr.arpa.", qtype: miekg.TypePTR, want: []string{"20.0.96.10.in-addr.arpa. 30 IN PTR web.default.svc.cluster.local."}}},
		{"PTR of an IPv6 ClusterIP names the Service",
			query{name: "1.2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.1.0.0.0.0.d.f.ip6.arpa.", qtype: miekg.TypePTR,
				want: []string{"1.2.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.1.0.0.0.0.d.f.ip6.arpa. 30 IN PTR dual.default.svc.cluster.local."}}},
		{"PTR of a headless endpoint names the endpoint",
			query{name: "5.1.244.10.in-addr.arpa.", qtype: miekg.TypePTR, want: []string{"5.1.244.10.in-addr.arpa. 30 IN PTR db-0.db.prod.svc.cluster.local."}}},
		{"PTR of an endpoint that is not ready goes upstream",
			query{name: "7.3.244.10.in-addr.arpa.", qtype: miekg.TypePTR, want: is(upstream)}},
		{"PTR of an unknown address goes upstream",
			query{name: "1.0.0.127.in-addr.arpa.", qtype: miekg.TypePTR, want: is(upstream)}},

		{"ExternalName answers a CNAME to its target in lower case, to be resolved",
			query{name: "ext.prod.svc.cluster.local.", qtype: miekg.TypeA, want: []string{"ext.prod.svc.cluster.local. 30 IN CNAME www.example.com."},
				chase: "www.example.com."}},
		{"a CNAME question for an ExternalName needs no resolving",
			query{name: "ext.prod.svc.cluster.local.", qtype: miekg.TypeCNAME, want: []string{"ext.prod.svc.cluster.local. 30 IN CNAME www.example.com."}}},
		{"SRV of an ExternalName Service is NODATA",
			query{name: "ext.prod.svc.cluster.local.", qtype: miekg.TypeSRV, want: is(nodata)}},
		{"an ExternalName that is an IP address gives no record",
			query{name: "extip.prod.svc.cluster.local.", qtype: miekg.TypeA, want: is(nxdomain)}},

		{"a pod's dashed address answers A",
			query{name: "10-244-1-5.prod.pod.cluster.local.", qtype: miekg.TypeA, want: []string{"10-244-1-5.prod.pod.cluster.local. 30 IN A 10.244.1.5"}}},
		{"a pod name that is not an address is NXDOMAIN",
			query{name: "web-0.prod.pod.cluster.local.", qtype: miekg.TypeA, want: is(nxdomain)}},
		{"dns-version holds the schema version",
			query{name: "dns-version.cluster.local.", qtype: miekg.TypeTXT, want: []string{`dns-version.cluster.local. 28800 IN TXT "1.1.0"`}}},
		{"the zone's NS is ns.dns.ZONE with its address as glue",
			query{name: "cluster.local.", qtype: miekg.TypeNS, want: []string{"cluster.local. 30 IN NS ns.dns.cluster.local."},
				extra: []string{"ns.dns.cluster.local. 30 IN A 10.96.0.10"}}},
		{"ns.dns.ZONE answers A with the DNS's address",
			query{name: "ns.dns.cluster.local.", qtype: miekg.TypeA, want: []string{"ns.dns.cluster.local. 30 IN A 10.96.0.10"}}},
		{"A of the apex is NODATA", query{name: "cluster.local.", qtype: miekg.TypeA, want: is(nodata)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkQuery(t, s, tt.q) })
	}

	t.Run("the apex answers its SOA", func(t *testing.T) {
		var a Answer
		s.Lookup("cluster.local.", miekg.TypeSOA, &a)
		checkSOA(t, a.Answer)
	})
}

// step changes the store, then asks questions.
type step struct {
	do      func(s *Store)
	queries []query
}

func TestStoreUpdates(t *testing.T) {
	web := makeService("default", "web").IPs("10.96.0.20").Port("http", 80, corev1.ProtocolTCP)
	moved := makeService("default", "web").IPs("10.96.0.30").Port("http", 80, corev1.ProtocolTCP)
	db := makeService("prod", "db").Headless().Port("pg", 5432, corev1.ProtocolTCP)
	webA := func(ip string) []string { return []string{"web.default.svc.cluster.local. 30 IN A " + ip} }
	upsert := func(svc svcBuilder) func(*Store) { return func(s *Store) { s.UpsertService(svc.Obj()) } }
	upsertSlice := func(sl sliceBuilder) func(*Store) { return func(s *Store) { s.UpsertSlice(sl.Obj()) } }
	tests := []struct {
		name  string
		steps []step
	}{
		{"a Service update replaces its address and PTR", []step{
			{upsert(web), []query{{name: "web.default.svc.cluster.local.", qtype: miekg.TypeA, want: webA("10.96.0.20")}}},
			{upsert(moved), []query{
				{name: "web.default.svc.cluster.local.", qtype: miekg.TypeA, want: webA("10.96.0.30")},
				{name: "20.0.96.10.in-addr.arpa.", qtype: miekg.TypePTR, want: is(upstream)},
				{name: "30.0.96.10.in-addr.arpa.", qtype: miekg.TypePTR, want: []string{"30.0.96.10.in-addr.arpa. 30 IN PTR web.default.svc.cluster.local."}},
			}},
		}},
		{"a deleted Service is NXDOMAIN, and so is its namespace once empty", []step{
			{upsert(web), nil},
			{func(s *Store) { s.DeleteService("default", "web") }, []query{
				{name: "web.default.svc.cluster.local.", qtype: miekg.TypeA, want: is(nxdomain)},
				{name: "default.svc.cluster.local.", qtype: miekg.TypeA, want: is(nxdomain)},
				{name: "20.0.96.10.in-addr.arpa.", qtype: miekg.TypePTR, want: is(upstream)},
			}},
		}},
		{"a Service that becomes ExternalName answers its CNAME", []step{
			{upsert(web), nil},
			{upsert(makeService("default", "web").ExternalName("db.example.org")), []query{
				{name: "web.default.svc.cluster.local.", qtype: miekg.TypeCNAME, want: []string{"web.default.svc.cluster.local. 30 IN CNAME db.example.org."}},
				{name: "20.0.96.10.in-addr.arpa.", qtype: miekg.TypePTR, want: is(upstream)},
			}},
		}},
		{"a slice that comes before its Service is answered once the Service comes", []step{
			{upsertSlice(makeSlice("prod", "db-1", "db").Ready("", "10.244.1.5")), []query{
				{name: "db.prod.svc.cluster.local.", qtype: miekg.TypeA, want: is(nxdomain)},
				{name: "5.1.244.10.in-addr.arpa.", qtype: miekg.TypePTR, want: is(upstream)},
			}},
			{upsert(db), []query{
				{name: "db.prod.svc.cluster.local.", qtype: miekg.TypeA, want: []string{"db.prod.svc.cluster.local. 30 IN A 10.244.1.5"}},
				{name: "5.1.244.10.in-addr.arpa.", qtype: miekg.TypePTR, want: []string{"5.1.244.10.in-addr.arpa. 30 IN PTR 10-244-1-5.db.prod.svc.cluster.local."}},
			}},
		}},
		{"a slice update replaces only that slice's endpoints", []step{
			{upsert(db), nil},
			{upsertSlice(makeSlice("prod", "db-1", "db").Ready("", "10.244.1.5")), nil},
			{upsertSlice(makeSlice("prod", "db-2", "db").Ready("", "10.244.2.5")), nil},
			{upsertSlice(makeSlice("prod", "db-1", "db").Ready("", "10.244.1.6")), []query{
				{name: "db.prod.svc.cluster.local.", qtype: miekg.TypeA, want: []string{
					"db.prod.svc.cluster.local. 30 IN A 10.244.1.6", "db.prod.svc.cluster.local. 30 IN A 10.244.2.5"}},
				{name: "5.1.244.10.in-addr.arpa.", qtype: miekg.TypePTR, want: is(upstream)},
			}},
		}},
		{"an endpoint that turns not ready leaves the answers", []step{
			{upsert(db), nil},
			{upsertSlice(makeSlice("prod", "db-1", "db").Ready("db-0", "10.244.1.5").Ready("db-1", "10.244.1.6")), nil},
			{upsertSlice(makeSlice("prod", "db-1", "db").Ready("db-0", "10.244.1.5").NotReady("db-1", "10.244.1.6")), []query{
				{name: "db.prod.svc.cluster.local.", qtype: miekg.TypeA, want: []string{"db.prod.svc.cluster.local. 30 IN A 10.244.1.5"}},
				{name: "db-1.db.prod.svc.cluster.local.", qtype: miekg.TypeA, want: is(nxdomain)},
			}},
			{upsert(makeService("prod", "db").Headless().PublishNotReady()), []query{
				{name: "db-1.db.prod.svc.cluster.local.", qtype: miekg.TypeA, want: []string{"db-1.db.prod.svc.cluster.local. 30 IN A 10.244.1.6"}},
				{name: "6.1.244.10.in-addr.arpa.", qtype: miekg.TypePTR, want: []string{"6.1.244.10.in-addr.arpa. 30 IN PTR db-1.db.prod.svc.cluster.local."}},
			}},
		}},
		{"a deleted slice takes its endpoints with it", []step{
			{upsert(db), nil},
			{upsertSlice(makeSlice("prod", "db-1", "db").Ready("", "10.244.1.5")), nil},
			{func(s *Store) { s.DeleteSlice("prod", "db-1") }, []query{
				{name: "db.prod.svc.cluster.local.", qtype: miekg.TypeA, want: is(nxdomain)},
				{name: "5.1.244.10.in-addr.arpa.", qtype: miekg.TypePTR, want: is(upstream)},
			}},
		}},
		{"a slice relabelled to another Service moves its endpoints", []step{
			{upsert(db), nil},
			{upsert(makeService("prod", "db2").Headless()), nil},
			{upsertSlice(makeSlice("prod", "s-1", "db").Ready("", "10.244.1.5")), nil},
			{upsertSlice(makeSlice("prod", "s-1", "db2").Ready("", "10.244.1.5")), []query{
				{name: "db.prod.svc.cluster.local.", qtype: miekg.TypeA, want: is(nxdomain)},
				{name: "db2.prod.svc.cluster.local.", qtype: miekg.TypeA, want: []string{"db2.prod.svc.cluster.local. 30 IN A 10.244.1.5"}},
				{name: "5.1.244.10.in-addr.arpa.", qtype: miekg.TypePTR, want: []string{"5.1.244.10.in-addr.arpa. 30 IN PTR 10-244-1-5.db2.prod.svc.cluster.local."}},
			}},
		}},
		{"an address in two Services has a PTR for each", []step{
			{upsert(db), nil},
			{upsert(makeService("prod", "db2").Headless()), nil},
			{upsertSlice(makeSlice("prod", "a", "db").Ready("", "10.244.1.5")), nil},
			{upsertSlice(makeSlice("prod", "b", "db2").Ready("", "10.244.1.5")), []query{
				{name: "5.1.244.10.in-addr.arpa.", qtype: miekg.TypePTR, want: []string{
					"5.1.244.10.in-addr.arpa. 30 IN PTR 10-244-1-5.db.prod.svc.cluster.local.",
					"5.1.244.10.in-addr.arpa. 30 IN PTR 10-244-1-5.db2.prod.svc.cluster.local."}},
			}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestStore()
			for _, st := range tt.steps {
				st.do(s)
				for _, q := range st.queries {
					checkQuery(t, s, q)
				}
			}
		})
	}
}

func TestStoreBeforeSync(t *testing.T) {
	s := NewStore(StoreConfig{})
	s.UpsertService(makeService("default", "web").IPs("10.96.0.20").Obj())
	tests := []struct {
		name string
		q    query
	}{
		{"a known name is answered", query{name: "web.default.svc.cluster.local.", qtype: miekg.TypeA, want: []string{"web.default.svc.cluster.local. 30 IN A 10.96.0.20"}}},
		{"an unknown name is SERVFAIL, not a cacheable NXDOMAIN", query{name: "db.default.svc.cluster.local.", qtype: miekg.TypeA, want: is(servfail)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkQuery(t, s, tt.q) })
	}
}
