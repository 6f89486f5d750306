package dns

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	miekg "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// SchemaVersion is the version of the Kubernetes DNS schema served in the
// TXT record dns-version.ZONE, the one CoreDNS serves.
const SchemaVersion = "1.1.0"

// StoreConfig configures a Store.
type StoreConfig struct {
	// Zone is the cluster domain. Default "cluster.local".
	Zone string
	// TTL of every record, in seconds. Default 30, as kubeadm configures
	// CoreDNS (CoreDNS's own default is 5).
	TTL uint32
	// Nameservers are the addresses of ns.dns.ZONE, the name the SOA and NS
	// records give for the zone: the kube-dns ClusterIP. Optional.
	Nameservers []net.IP
	// Now is the clock for the SOA serial. Default time.Now.
	Now func() time.Time
}

// Store holds the records of the cluster zone in memory, built from
// Services and EndpointSlices. Each Upsert or Delete rebuilds only the
// records of the object it is given; Lookup answers from what is there and
// never calls anything. It is safe for concurrent use: updates come from
// the watches, lookups from the server's goroutines.
type Store struct {
	zone    string // "cluster.local.", lower case
	dotZone string // ".cluster.local."
	ttl     uint32
	now     func() time.Time
	nsA     []miekg.RR // ns.dns.ZONE
	nsAAAA  []miekg.RR
	ns      []miekg.RR // ZONE NS ns.dns.ZONE
	version []miekg.RR // dns-version.ZONE TXT

	soa    atomic.Pointer[miekg.SOA]
	synced atomic.Bool

	mu         sync.RWMutex
	services   map[string]*serviceRecords // by "SVC.NS"
	namespaces map[string]int             // Services per namespace
	slices     map[string][]*sliceRecords // by owner "SVC.NS", in name order
	sliceOwner map[string]string          // "NS/SLICE" → owner "SVC.NS"
	ptrs       map[string][]ptrRef        // reverse name → PTRs
}

// ptrRef is a PTR record in the reverse index, with what decides whether
// it is answered.
type ptrRef struct {
	rr      miekg.RR
	service string // owner "SVC.NS"
	cluster bool   // a ClusterIP's (answered before any endpoint's)
	ready   bool
}

// NewStore returns an empty store.
func NewStore(cfg StoreConfig) *Store {
	if cfg.Zone == "" {
		cfg.Zone = "cluster.local"
	}
	if cfg.TTL == 0 {
		cfg.TTL = 30
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	zone := miekg.CanonicalName(cfg.Zone)
	s := &Store{
		zone: zone, dotZone: "." + zone, ttl: cfg.TTL, now: cfg.Now,
		services:   map[string]*serviceRecords{},
		namespaces: map[string]int{},
		slices:     map[string][]*sliceRecords{},
		sliceOwner: map[string]string{},
		ptrs:       map[string][]ptrRef{},
	}
	nsName := "ns.dns." + zone
	for _, ip := range cfg.Nameservers {
		rr, v6 := addressRR(nsName, ip, cfg.TTL)
		if v6 {
			s.nsAAAA = append(s.nsAAAA, rr)
		} else if rr != nil {
			s.nsA = append(s.nsA, rr)
		}
	}
	s.ns = []miekg.RR{&miekg.NS{Hdr: header(zone, miekg.TypeNS, cfg.TTL), Ns: nsName}}
	s.version = []miekg.RR{&miekg.TXT{Hdr: header("dns-version."+zone, miekg.TypeTXT, 28800), Txt: []string{SchemaVersion}}}
	s.touch()
	return s
}

// Zone returns the zone the store answers for, e.g. "cluster.local.".
func (s *Store) Zone() string { return s.zone }

// SetSynced records whether the store holds every Service and
// EndpointSlice (the watches' first lists are in). Until it does, a name
// the store does not know gets SERVFAIL rather than NXDOMAIN, which a
// client would cache.
func (s *Store) SetSynced(v bool) { s.synced.Store(v) }

// touch moves the SOA serial to now: the zone changed.
func (s *Store) touch() {
	ttl := min(s.ttl, 300)
	s.soa.Store(&miekg.SOA{
		Hdr: header(s.zone, miekg.TypeSOA, ttl),
		Ns:  "ns.dns." + s.zone, Mbox: "hostmaster." + s.zone,
		Serial:  uint32(s.now().Unix()),
		Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: s.ttl,
	})
}

// UpsertService adds svc, or replaces its records.
func (s *Store) UpsertService(svc *corev1.Service) {
	r := buildService(svc, s.zone, s.ttl)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.services[r.key]; old != nil {
		s.removePTRs(old.ptrs)
	} else {
		s.namespaces[r.namespace]++
	}
	s.services[r.key] = r
	s.addPTRs(r.ptrs, r.key, true, true)
	s.touch()
}

// DeleteService removes the Service namespace/name. Its slices stay
// until they are deleted too, but give no record without it.
func (s *Store) DeleteService(namespace, name string) {
	key := serviceKey(namespace, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.services[key]
	if old == nil {
		return
	}
	s.removePTRs(old.ptrs)
	delete(s.services, key)
	if s.namespaces[old.namespace]--; s.namespaces[old.namespace] <= 0 {
		delete(s.namespaces, old.namespace)
	}
	s.touch()
}

// UpsertSlice adds sl, or replaces its records.
func (s *Store) UpsertSlice(sl *discoveryv1.EndpointSlice) {
	r := buildSlice(sl, s.zone, s.ttl)
	id := sl.Namespace + "/" + sl.Name
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeSlice(id)
	if r == nil {
		return
	}
	s.sliceOwner[id] = r.service
	list := append(s.slices[r.service], r)
	sortSlices(list)
	s.slices[r.service] = list
	s.addPTRs(r.ready.ptrs, r.service, false, true)
	if r.unready != nil {
		s.addPTRs(r.unready.ptrs, r.service, false, false)
	}
	s.touch()
}

// DeleteSlice removes the EndpointSlice namespace/name.
func (s *Store) DeleteSlice(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removeSlice(namespace + "/" + name) {
		s.touch()
	}
}

// removeSlice drops the slice id ("NS/NAME") and its PTRs; s.mu is held.
func (s *Store) removeSlice(id string) bool {
	owner, ok := s.sliceOwner[id]
	if !ok {
		return false
	}
	delete(s.sliceOwner, id)
	name := id[strings.IndexByte(id, '/')+1:]
	list := s.slices[owner]
	for i, r := range list {
		if r.name == name {
			s.removePTRs(r.ready.ptrs)
			if r.unready != nil {
				s.removePTRs(r.unready.ptrs)
			}
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(s.slices, owner)
	} else {
		s.slices[owner] = list
	}
	return true
}

func (s *Store) addPTRs(ptrs []ptrRecord, service string, cluster, ready bool) {
	for _, p := range ptrs {
		s.ptrs[p.name] = append(s.ptrs[p.name], ptrRef{rr: p.rr, service: service, cluster: cluster, ready: ready})
	}
}

func (s *Store) removePTRs(ptrs []ptrRecord) {
	for _, p := range ptrs {
		refs := s.ptrs[p.name]
		kept := refs[:0:0]
		for _, ref := range refs {
			if ref.rr != p.rr {
				kept = append(kept, ref)
			}
		}
		if len(kept) == 0 {
			delete(s.ptrs, p.name)
		} else {
			s.ptrs[p.name] = kept
		}
	}
}

// Len returns the number of Services and EndpointSlices the store holds.
func (s *Store) Len() (services, slices int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.services), len(s.sliceOwner)
}
