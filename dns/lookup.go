package dns

import (
	"net"
	"strings"

	miekg "github.com/miekg/dns"
)

// Answer is what the store says about one question. Its slices are
// reused from one question to the next (Reset), so that answering
// allocates little; the records in them are shared and must not be
// modified.
type Answer struct {
	// Rcode is miekg.RcodeSuccess, RcodeNameError (NXDOMAIN) or
	// RcodeServerFailure (a name not known before the store synced).
	Rcode  int
	Answer []miekg.RR
	Ns     []miekg.RR // the zone's SOA, for NXDOMAIN and NODATA
	Extra  []miekg.RR // addresses of SRV targets
	// Forward is set when the name is not the store's to answer: outside
	// the zone, or a reverse name of no Service or endpoint.
	Forward bool
	// Chase is the target of an ExternalName CNAME in Answer that the
	// caller should resolve (for A and AAAA questions), as CoreDNS does.
	Chase string

	qname string      // the question, owner of SRV answers
	srv   []miekg.SRV // backs the SRV records in Answer
}

// Reset empties a for the next question, keeping its memory.
func (a *Answer) Reset() {
	clear(a.Answer)
	clear(a.Extra)
	clear(a.srv)
	*a = Answer{Answer: a.Answer[:0], Ns: a.Ns[:0], Extra: a.Extra[:0], srv: a.srv[:0]}
}

// Lookup answers the question (name, qtype) into a. name must be fully
// qualified; names are compared without regard to case, and the records
// are in lower case.
func (s *Store) Lookup(name string, qtype uint16, a *Answer) {
	name = strings.ToLower(name) // no copy when it already is
	a.Rcode = miekg.RcodeSuccess
	a.qname = name
	var rel string
	switch {
	case name == s.zone:
		s.apex(qtype, a)
		return
	case strings.HasSuffix(name, s.dotZone):
		rel = name[:len(name)-len(s.dotZone)]
	case strings.HasSuffix(name, ".in-addr.arpa.") || strings.HasSuffix(name, ".ip6.arpa."):
		s.reverse(name, qtype, a)
		return
	default:
		a.Forward = true
		return
	}
	rest, last := cutLast(rel)
	switch {
	case last == "svc":
		s.mu.RLock()
		s.service(rest, qtype, a)
		s.mu.RUnlock()
	case last == "pod":
		s.pod(name, rest, qtype, a)
	case rel == "dns-version":
		s.answer(qtype, miekg.TypeTXT, s.version, a)
	case rel == "dns":
		s.nodata(a)
	case rel == "ns.dns":
		switch qtype {
		case miekg.TypeA:
			s.answer(qtype, qtype, s.nsA, a)
		case miekg.TypeAAAA:
			s.answer(qtype, qtype, s.nsAAAA, a)
		default:
			s.nodata(a)
		}
	default:
		s.nxdomain(a)
	}
}

// cutLast splits "a.b.c" into "a.b" and "c".
func cutLast(s string) (rest, last string) {
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		return s[:i], s[i+1:]
	}
	return "", s
}

func (s *Store) apex(qtype uint16, a *Answer) {
	switch qtype {
	case miekg.TypeSOA:
		a.Answer = append(a.Answer, s.soa.Load())
	case miekg.TypeNS:
		a.Answer = append(a.Answer, s.ns...)
		a.Extra = append(a.Extra, s.nsA...)
		a.Extra = append(a.Extra, s.nsAAAA...)
	default:
		s.nodata(a)
	}
}

// answer gives rrs if the question is of type want, else NODATA.
func (s *Store) answer(qtype, want uint16, rrs []miekg.RR, a *Answer) {
	if qtype != want || len(rrs) == 0 {
		s.nodata(a)
		return
	}
	a.Answer = append(a.Answer, rrs...)
}

// nodata is NOERROR without an answer: the name exists, not with this type.
func (s *Store) nodata(a *Answer) {
	a.Rcode = miekg.RcodeSuccess
	a.Ns = append(a.Ns, s.soa.Load())
}

// nxdomain says the name does not exist; before the store synced it
// may, so the answer is SERVFAIL then, as in CoreDNS.
func (s *Store) nxdomain(a *Answer) {
	if !s.synced.Load() {
		a.Rcode = miekg.RcodeServerFailure
		return
	}
	a.Rcode = miekg.RcodeNameError
	a.Ns = append(a.Ns, s.soa.Load())
}

// service answers names under svc.ZONE; rel is what precedes ".svc".
// s.mu is read-locked.
func (s *Store) service(rel string, qtype uint16, a *Answer) {
	if rel == "" { // svc.ZONE
		s.nodata(a)
		return
	}
	rest, ns := cutLast(rel)
	if rest == "" { // NS.svc.ZONE exists while a Service does in NS
		if s.namespaces[ns] > 0 {
			s.nodata(a)
		} else {
			s.nxdomain(a)
		}
		return
	}
	first, svcLabel := cutLast(rest)
	// The key "SVC.NS" is a substring of the name: no allocation.
	key := rel[len(rel)-len(svcLabel)-1-len(ns):]
	svc := s.services[key]
	if svc == nil {
		s.nxdomain(a)
		return
	}
	switch {
	case first == "":
		s.serviceName(svc, qtype, a)
	case strings.IndexByte(first, '.') < 0:
		s.endpointName(svc, first, qtype, a)
	default:
		portLabel, protoLabel := cutLast(first)
		if strings.IndexByte(portLabel, '.') >= 0 || len(portLabel) < 2 || len(protoLabel) < 2 ||
			portLabel[0] != '_' || protoLabel[0] != '_' {
			s.nxdomain(a)
			return
		}
		s.portName(svc, portLabel[1:], protoLabel[1:], qtype, a)
	}
}

// serviceName answers SVC.NS.svc.ZONE.
func (s *Store) serviceName(svc *serviceRecords, qtype uint16, a *Answer) {
	if svc.externalName {
		s.externalName(svc, qtype, a)
		return
	}
	if !svc.headless {
		switch qtype {
		case miekg.TypeA:
			s.answer(qtype, qtype, svc.a, a)
		case miekg.TypeAAAA:
			s.answer(qtype, qtype, svc.aaaa, a)
		case miekg.TypeSRV:
			s.clusterSRV(svc, "", "", a)
		default:
			s.nodata(a)
		}
		return
	}
	// Headless: one record per ready endpoint; NXDOMAIN if there is none
	// (Kubernetes DNS specification 2.4.1).
	published := false
	for _, sl := range s.slices[svc.key] {
		for _, set := range sl.sets(svc) {
			if set == nil {
				continue
			}
			published = published || len(set.a)+len(set.aaaa) > 0
			switch qtype {
			case miekg.TypeA:
				a.Answer = append(a.Answer, set.a...)
			case miekg.TypeAAAA:
				a.Answer = append(a.Answer, set.aaaa...)
			}
		}
	}
	if !published {
		s.nxdomain(a)
		return
	}
	if qtype == miekg.TypeSRV {
		s.endpointSRV(svc, "", "", a)
		return
	}
	if len(a.Answer) == 0 {
		s.nodata(a)
	}
}

// sets returns the endpoint sets of sl that svc publishes: the ready
// ones, and the others too with publishNotReadyAddresses.
// The second is nil when there is none (an array, so that no answer
// allocates for it).
func (sl *sliceRecords) sets(svc *serviceRecords) [2]*endpointRecords {
	if svc.publishNotReady {
		return [2]*endpointRecords{&sl.ready, sl.unready}
	}
	return [2]*endpointRecords{&sl.ready, nil}
}

func (s *Store) externalName(svc *serviceRecords, qtype uint16, a *Answer) {
	if len(svc.cname) == 0 {
		s.nxdomain(a)
		return
	}
	switch qtype {
	case miekg.TypeA, miekg.TypeAAAA:
		a.Answer = append(a.Answer, svc.cname...)
		a.Chase = svc.cname[0].(*miekg.CNAME).Target
	case miekg.TypeCNAME:
		a.Answer = append(a.Answer, svc.cname...)
	default:
		s.nodata(a)
	}
}

// endpointName answers HOSTNAME.SVC.NS.svc.ZONE.
func (s *Store) endpointName(svc *serviceRecords, label string, qtype uint16, a *Answer) {
	found := false
	if !svc.externalName {
		for _, sl := range s.slices[svc.key] {
			for _, set := range sl.sets(svc) {
				if set == nil {
					continue
				}
				h := set.host(label)
				if h == nil {
					continue
				}
				found = true
				switch qtype {
				case miekg.TypeA:
					a.Answer = append(a.Answer, h.a...)
				case miekg.TypeAAAA:
					a.Answer = append(a.Answer, h.aaaa...)
				}
			}
		}
	}
	if !found {
		s.nxdomain(a)
	} else if len(a.Answer) == 0 {
		s.nodata(a)
	}
}

// portName answers _PORT._PROTO.SVC.NS.svc.ZONE.
func (s *Store) portName(svc *serviceRecords, port, proto string, qtype uint16, a *Answer) {
	if svc.externalName {
		s.nxdomain(a)
		return
	}
	var n int
	if svc.headless {
		n = s.endpointSRV(svc, port, proto, a)
	} else {
		n = s.clusterSRV(svc, port, proto, a)
	}
	if n == 0 {
		a.Answer, a.Extra = a.Answer[:0], a.Extra[:0]
		s.nxdomain(a)
		return
	}
	if qtype != miekg.TypeSRV {
		a.Answer, a.Extra = a.Answer[:0], a.Extra[:0]
		s.nodata(a)
	}
}

func portMatches(p portRecord, name, proto string) bool {
	return (name == "" || p.name == name) && (proto == "" || p.proto == proto)
}

// clusterSRV adds an SRV record per port of a ClusterIP Service matching
// name and proto ("" matches any), with the Service's addresses as extra
// records, and returns how many. Only named ports have a record of their
// own; a query for the Service name lists every port, as in CoreDNS.
func (s *Store) clusterSRV(svc *serviceRecords, name, proto string, a *Answer) int {
	start := len(a.srv)
	for _, p := range svc.ports {
		if portMatches(p, name, proto) {
			a.srv = append(a.srv, miekg.SRV{Port: p.port, Target: svc.fqdn})
		}
	}
	n := len(a.srv) - start
	if n > 0 {
		s.appendSRV(a, start)
		a.Extra = append(a.Extra, svc.a...)
		a.Extra = append(a.Extra, svc.aaaa...)
	} else if name == "" {
		s.nodata(a)
	}
	return n
}

// endpointSRV adds an SRV record per published endpoint name and matching
// port of a headless Service, with the endpoints' addresses as extra
// records, and returns how many.
func (s *Store) endpointSRV(svc *serviceRecords, name, proto string, a *Answer) int {
	start := len(a.srv)
	for _, sl := range s.slices[svc.key] {
		for _, set := range sl.sets(svc) {
			if set == nil {
				continue
			}
			for _, h := range set.hosts {
				matched := false
				for _, p := range sl.ports {
					if portMatches(p, name, proto) {
						a.srv = append(a.srv, miekg.SRV{Port: p.port, Target: h.fqdn})
						matched = true
					}
				}
				if matched {
					a.Extra = append(a.Extra, h.a...)
					a.Extra = append(a.Extra, h.aaaa...)
				}
			}
		}
	}
	n := len(a.srv) - start
	if n > 0 {
		s.appendSRV(a, start)
	} else if name == "" {
		s.nodata(a)
	}
	return n
}

// appendSRV fills in the headers of a.srv[start:] and adds them to the
// answer. All have priority 0 and an equal share of weight 100, as in
// CoreDNS.
func (s *Store) appendSRV(a *Answer, start int) {
	recs := a.srv[start:]
	weight := uint16(max(100/len(recs), 1))
	for i := range recs {
		recs[i].Hdr = header(a.qname, miekg.TypeSRV, s.ttl)
		recs[i].Weight = weight
		a.Answer = append(a.Answer, &recs[i])
	}
}

// pod answers IP.NS.pod.ZONE (CoreDNS's "pods insecure", which kubeadm
// configures): the address written with dashes is the answer.
func (s *Store) pod(name, rel string, qtype uint16, a *Answer) {
	if rel == "" || strings.IndexByte(rel, '.') < 0 { // pod.ZONE, NS.pod.ZONE
		s.nodata(a)
		return
	}
	label, _ := cutLast(rel)
	if strings.IndexByte(label, '.') >= 0 {
		s.nxdomain(a)
		return
	}
	var ip net.IP
	if strings.Count(label, "-") == 3 && !strings.Contains(label, "--") {
		ip = net.ParseIP(strings.ReplaceAll(label, "-", ".")).To4()
	} else {
		ip = net.ParseIP(strings.ReplaceAll(label, "-", ":"))
	}
	if ip == nil {
		s.nxdomain(a)
		return
	}
	rr, v6 := addressRR(name, ip, s.ttl)
	if (qtype == miekg.TypeA && !v6) || (qtype == miekg.TypeAAAA && v6) {
		a.Answer = append(a.Answer, rr)
		return
	}
	s.nodata(a)
}

// reverse answers PTR questions for ClusterIPs and endpoint addresses; a
// ClusterIP's name wins over endpoints', as in CoreDNS. Anything else goes
// upstream.
func (s *Store) reverse(name string, qtype uint16, a *Answer) {
	if qtype != miekg.TypePTR {
		a.Forward = true
		return
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	refs := s.ptrs[name]
	for _, cluster := range []bool{true, false} {
		for _, ref := range refs {
			if ref.cluster != cluster {
				continue
			}
			svc := s.services[ref.service]
			if svc == nil || (!ref.ready && !svc.publishNotReady) {
				continue
			}
			a.Answer = append(a.Answer, ref.rr)
		}
		if len(a.Answer) > 0 {
			return
		}
	}
	a.Forward = true
}
