package dns

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	miekg "github.com/miekg/dns"
)

func mustRR(t *testing.T, s string) miekg.RR {
	t.Helper()
	rr, err := miekg.NewRR(s)
	if err != nil {
		t.Fatal(err)
	}
	return rr
}

func TestAnswerCache(t *testing.T) {
	const soa = "example.com. 3600 IN SOA ns.example.com. admin.example.com. 1 7200 1800 86400 10"
	tests := []struct {
		name    string
		rcode   int
		tc      bool
		records []string
		after   time.Duration // when the question comes again
		wantTTL int           // TTL of the first record of the cached copy; -1: not cached
	}{
		{name: "an answer is kept 30s at most, its TTL lowered by the time it was kept", records: []string{"www.example.com. 300 IN A 192.0.2.1"},
			after: 10 * time.Second, wantTTL: 20},
		{name: "an answer is kept 30s at most", records: []string{"www.example.com. 300 IN A 192.0.2.1"},
			after: 30 * time.Second, wantTTL: -1},
		{name: "an answer expires with its own shorter TTL", records: []string{"www.example.com. 5 IN A 192.0.2.1"},
			after: 5 * time.Second, wantTTL: -1},
		{name: "NXDOMAIN is kept for the SOA's negative TTL", rcode: miekg.RcodeNameError, records: []string{soa},
			after: 9 * time.Second, wantTTL: 1},
		{name: "NXDOMAIN goes after the SOA's negative TTL", rcode: miekg.RcodeNameError, records: []string{soa},
			after: 10 * time.Second, wantTTL: -1},
		{name: "a negative answer without SOA is not kept", rcode: miekg.RcodeNameError, wantTTL: -1},
		{name: "SERVFAIL is not kept", rcode: miekg.RcodeServerFailure, records: []string{soa}, wantTTL: -1},
		{name: "a truncated answer is not kept", tc: true, records: []string{"www.example.com. 300 IN A 192.0.2.1"}, wantTTL: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			c := newAnswerCache(30*time.Second, 10, func() time.Time { return now })
			req := new(miekg.Msg).SetQuestion("www.example.com.", miekg.TypeA)
			resp := new(miekg.Msg).SetRcode(req, tt.rcode)
			resp.Truncated = tt.tc
			for _, s := range tt.records {
				rr := mustRR(t, s)
				if rr.Header().Rrtype == miekg.TypeSOA {
					resp.Ns = append(resp.Ns, rr)
				} else {
					resp.Answer = append(resp.Answer, rr)
				}
			}
			c.put(req, resp)
			now = now.Add(tt.after)
			again := new(miekg.Msg).SetQuestion("WWW.example.com.", miekg.TypeA)
			got := c.get(again)
			if tt.wantTTL < 0 {
				if got != nil {
					t.Errorf("answered from the cache: %v", got)
				}
				return
			}
			if got == nil {
				t.Fatal("not in the cache")
			}
			first := append(got.Answer, got.Ns...)[0]
			if int(first.Header().Ttl) != tt.wantTTL {
				t.Errorf("TTL %d, want %d", first.Header().Ttl, tt.wantTTL)
			}
			if got.Id != again.Id || got.Question[0].Name != "WWW.example.com." || got.Rcode != tt.rcode {
				t.Errorf("id %d question %v rcode %d; want the new question's id and name, rcode %d", got.Id, got.Question, got.Rcode, tt.rcode)
			}
			if resp.Answer != nil && resp.Answer[0].Header().Ttl == uint32(tt.wantTTL) {
				t.Errorf("the cached answer shares its records with the copy handed out")
			}
		})
	}
}

func TestAnswerCacheKeepsItsSize(t *testing.T) {
	c := newAnswerCache(30*time.Second, 3, time.Now)
	for _, name := range []string{"a.", "b.", "c.", "d.", "e."} {
		req := new(miekg.Msg).SetQuestion(name, miekg.TypeA)
		resp := new(miekg.Msg).SetReply(req)
		resp.Answer = []miekg.RR{mustRR(t, name+" 60 IN A 192.0.2.1")}
		c.put(req, resp)
	}
	if n := c.len(); n != 3 {
		t.Errorf("%d answers kept, want 3", n)
	}
}

func TestServerAnswersRepeatsFromTheCache(t *testing.T) {
	var asked atomic.Int32
	upstream := fakeUpstream(t, func(w miekg.ResponseWriter, req *miekg.Msg) {
		asked.Add(1)
		exampleCom(w, req)
	})
	now := time.Unix(1000, 0)
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	srv := NewServer(ServerConfig{Listen: "127.0.0.1:0", Store: newTestStore(), Forwarder: NewForwarder([]string{upstream}, time.Second),
		Now: func() time.Time { return *clock.Load() }, Logger: slog.New(slog.DiscardHandler)})
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()

	for i, tt := range []struct {
		name       string
		advance    time.Duration
		wantAsked  int32
		wantTTL    uint32
		overTCP    bool
		wantAnswer int
	}{
		{name: "the first question goes upstream; its TTL is capped at the cache's 30s", wantAsked: 1, wantTTL: 30},
		{name: "a repeat within 30s is answered from the cache", advance: 20 * time.Second, wantAsked: 1, wantTTL: 10},
		{name: "over TCP too", overTCP: true, wantAsked: 1, wantTTL: 10},
		{name: "after 30s it goes upstream again", advance: 10 * time.Second, wantAsked: 2, wantTTL: 30},
	} {
		next := clock.Load().Add(tt.advance)
		clock.Store(&next)
		network := "udp"
		if tt.overTCP {
			network = "tcp"
		}
		resp := ask(t, srv.Addr(), network, "www.example.com.", miekg.TypeA, 0)
		if asked.Load() != tt.wantAsked || len(resp.Answer) != 1 || resp.Answer[0].Header().Ttl != tt.wantTTL {
			t.Errorf("%d. %s: upstream asked %d times, answer %v; want %d times, TTL %d", i, tt.name, asked.Load(), resp.Answer, tt.wantAsked, tt.wantTTL)
		}
	}
}
