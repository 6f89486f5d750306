package dns

import (
	"strings"
	"sync"
	"time"

	miekg "github.com/miekg/dns"
)

// answerCache keeps upstream's answers for names outside the cluster zone
// for at most maxTTL, as kubeadm's Corefile has CoreDNS do (`cache 30`,
// disabled for cluster.local, whose answers come from memory anyway). A
// pod's search list turns one lookup of an outside name into several
// questions, most of them misses that upstream would be asked again and
// again.
type answerCache struct {
	maxTTL  time.Duration
	size    int
	now     func() time.Time
	mu      sync.Mutex
	entries map[cacheKey]cacheEntry
}

type cacheKey struct {
	name          string // lower case
	qtype, qclass uint16
	do, cd        bool // DNSSEC OK and checking disabled change the answer
}

type cacheEntry struct {
	msg     *miekg.Msg
	stored  time.Time
	expires time.Time
}

func newAnswerCache(maxTTL time.Duration, size int, now func() time.Time) *answerCache {
	return &answerCache{maxTTL: maxTTL, size: size, now: now, entries: map[cacheKey]cacheEntry{}}
}

func keyOf(req *miekg.Msg) cacheKey {
	q := req.Question[0]
	k := cacheKey{name: strings.ToLower(q.Name), qtype: q.Qtype, qclass: q.Qclass, cd: req.CheckingDisabled}
	if opt := req.IsEdns0(); opt != nil {
		k.do = opt.Do()
	}
	return k
}

// get returns a copy of the cached answer to req, its TTLs lowered by
// the time it spent in the cache, or nil.
func (c *answerCache) get(req *miekg.Msg) *miekg.Msg {
	k := keyOf(req)
	now := c.now()
	c.mu.Lock()
	e, ok := c.entries[k]
	if ok && !now.Before(e.expires) {
		delete(c.entries, k)
		ok = false
	}
	c.mu.Unlock()
	if !ok {
		return nil
	}
	m := e.msg.Copy()
	age := uint32(now.Sub(e.stored) / time.Second)
	for _, section := range [][]miekg.RR{m.Answer, m.Ns, m.Extra} {
		for _, rr := range section {
			if h := rr.Header(); h.Rrtype != miekg.TypeOPT {
				h.Ttl -= min(age, h.Ttl)
			}
		}
	}
	m.Id = req.Id
	m.Question = req.Question // as the client asked it
	return m
}

// put keeps resp, the answer to req, if it may be: a complete NOERROR or
// NXDOMAIN answer, for the smallest TTL in it (the SOA's negative TTL
// for a negative answer), at most maxTTL. Like CoreDNS's cache it lowers
// resp's TTLs to that time, so that clients do not keep it longer than
// this server does.
func (c *answerCache) put(req, resp *miekg.Msg) {
	if resp.Truncated || (resp.Rcode != miekg.RcodeSuccess && resp.Rcode != miekg.RcodeNameError) {
		return
	}
	ttl := uint32(c.maxTTL / time.Second)
	records := 0
	for _, section := range [][]miekg.RR{resp.Answer, resp.Ns} {
		for _, rr := range section {
			records++
			ttl = min(ttl, rr.Header().Ttl)
			if soa, ok := rr.(*miekg.SOA); ok {
				ttl = min(ttl, soa.Minttl)
			}
		}
	}
	if ttl == 0 || records == 0 { // a negative answer without SOA says nothing of how long
		return
	}
	for _, section := range [][]miekg.RR{resp.Answer, resp.Ns, resp.Extra} {
		for _, rr := range section {
			if h := rr.Header(); h.Rrtype != miekg.TypeOPT {
				h.Ttl = min(h.Ttl, ttl)
			}
		}
	}
	now := c.now()
	k := keyOf(req)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[k]; !ok && len(c.entries) >= c.size {
		for old := range c.entries { // full: drop one, whichever the map gives
			delete(c.entries, old)
			break
		}
	}
	c.entries[k] = cacheEntry{msg: resp.Copy(), stored: now, expires: now.Add(time.Duration(ttl) * time.Second)}
}

func (c *answerCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
