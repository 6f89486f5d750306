package dns

import (
	"net"
	"slices"
	"strings"

	miekg "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// The records of one Service and of one EndpointSlice, built once when the
// object changes and shared by every answer afterwards. They are immutable
// once built: an update builds new ones and swaps them in.

// serviceRecords are the records a Service itself gives:
// SVC.NS.svc.ZONE for its ClusterIPs, its CNAME if it is an ExternalName
// Service, the ports its SRV records name, and the PTRs of its ClusterIPs.
type serviceRecords struct {
	key             string // "SVC.NS", the labels before .svc.ZONE
	namespace       string
	fqdn            string // "SVC.NS.svc.ZONE."
	headless        bool
	externalName    bool
	publishNotReady bool
	a, aaaa         []miekg.RR // ClusterIPs; empty for headless Services
	cname           []miekg.RR // ExternalName; empty when the name is an IP
	ports           []portRecord
	ptrs            []ptrRecord
}

// portRecord is one port of a Service or an EndpointSlice. Name and
// protocol are in lower case, as a query's `_name._proto` labels are
// compared after lowering them.
type portRecord struct {
	name, proto string
	port        uint16
}

// ptrRecord is a PTR record and the reverse name it answers.
type ptrRecord struct {
	name string // e.g. "10.0.96.10.in-addr.arpa."
	rr   miekg.RR
}

// sliceRecords are the records one EndpointSlice gives its Service: the
// Service name's addresses (headless), HOSTNAME.SVC.NS.svc.ZONE per
// endpoint, the SRV targets, and the PTRs of the endpoint addresses.
// Endpoints that are not ready are kept apart, for Services that publish
// them (spec.publishNotReadyAddresses).
type sliceRecords struct {
	name    string // the slice's name
	service string // owner Service key, "SVC.NS"
	ports   []portRecord
	ready   endpointRecords
	unready *endpointRecords // nil while every endpoint is ready
}

// endpointRecords are the records of a set of endpoints.
type endpointRecords struct {
	a, aaaa []miekg.RR // owner: the Service name
	hosts   []*hostRecords
	ptrs    []ptrRecord
}

// hostRecords are the records of one endpoint name,
// HOSTNAME.SVC.NS.svc.ZONE (HOSTNAME is the endpoint's hostname, or its
// address with dashes as CoreDNS names it).
type hostRecords struct {
	label   string // HOSTNAME, lower case
	fqdn    string
	a, aaaa []miekg.RR
}

func (e *endpointRecords) host(label string) *hostRecords {
	for _, h := range e.hosts {
		if h.label == label {
			return h
		}
	}
	return nil
}

// serviceKey is the key under which the store keeps a Service: the two
// labels that precede .svc.ZONE in its name.
func serviceKey(namespace, name string) string {
	return strings.ToLower(name + "." + namespace)
}

func header(name string, rrtype uint16, ttl uint32) miekg.RR_Header {
	return miekg.RR_Header{Name: name, Rrtype: rrtype, Class: miekg.ClassINET, Ttl: ttl}
}

// addressRR returns an A or AAAA record of name for ip, and whether ip is
// IPv6; nil if ip is not an address.
func addressRR(name string, ip net.IP, ttl uint32) (rr miekg.RR, v6 bool) {
	if ip == nil {
		return nil, false
	}
	if v4 := ip.To4(); v4 != nil {
		return &miekg.A{Hdr: header(name, miekg.TypeA, ttl), A: v4}, false
	}
	return &miekg.AAAA{Hdr: header(name, miekg.TypeAAAA, ttl), AAAA: ip}, true
}

func ptrRR(ip net.IP, target string, ttl uint32) (ptrRecord, bool) {
	name, err := miekg.ReverseAddr(ip.String())
	if err != nil {
		return ptrRecord{}, false
	}
	return ptrRecord{name: name, rr: &miekg.PTR{Hdr: header(name, miekg.TypePTR, ttl), Ptr: target}}, true
}

// buildService returns the records of svc in zone ("cluster.local.").
func buildService(svc *corev1.Service, zone string, ttl uint32) *serviceRecords {
	key := serviceKey(svc.Namespace, svc.Name)
	r := &serviceRecords{
		key:             key,
		namespace:       strings.ToLower(svc.Namespace),
		fqdn:            strings.ToLower(svc.Name+"."+svc.Namespace) + ".svc." + zone,
		headless:        svc.Spec.ClusterIP == corev1.ClusterIPNone,
		externalName:    svc.Spec.Type == corev1.ServiceTypeExternalName,
		publishNotReady: svc.Spec.PublishNotReadyAddresses,
	}
	if r.externalName {
		// An ExternalName that is an IP address gives no record, as in
		// CoreDNS: a CNAME must name a host.
		if target := svc.Spec.ExternalName; target != "" && net.ParseIP(target) == nil {
			target = miekg.Fqdn(strings.ToLower(target))
			r.cname = []miekg.RR{&miekg.CNAME{Hdr: header(r.fqdn, miekg.TypeCNAME, ttl), Target: target}}
		}
		return r
	}
	for _, p := range svc.Spec.Ports {
		r.ports = append(r.ports, portRecord{name: strings.ToLower(p.Name), proto: protoLabel(string(p.Protocol)), port: uint16(p.Port)})
	}
	if r.headless {
		return r
	}
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	for _, s := range ips {
		ip := net.ParseIP(s)
		rr, v6 := addressRR(r.fqdn, ip, ttl)
		if rr == nil {
			continue
		}
		if v6 {
			r.aaaa = append(r.aaaa, rr)
		} else {
			r.a = append(r.a, rr)
		}
		if p, ok := ptrRR(ip, r.fqdn, ttl); ok {
			r.ptrs = append(r.ptrs, p)
		}
	}
	return r
}

func protoLabel(p string) string {
	if p == "" {
		return "tcp"
	}
	return strings.ToLower(p)
}

// sliceService returns the key of the Service a slice belongs to, from
// its kubernetes.io/service-name label; "" if it has none.
func sliceService(sl *discoveryv1.EndpointSlice) string {
	name := sl.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return ""
	}
	return serviceKey(sl.Namespace, name)
}

// buildSlice returns the records of sl in zone, or nil if it gives none
// (no service-name label, or FQDN addresses).
func buildSlice(sl *discoveryv1.EndpointSlice, zone string, ttl uint32) *sliceRecords {
	owner := sliceService(sl)
	if owner == "" || sl.AddressType == discoveryv1.AddressTypeFQDN {
		return nil
	}
	svcFQDN := owner + ".svc." + zone
	r := &sliceRecords{name: sl.Name, service: owner}
	for _, p := range sl.Ports {
		if p.Port == nil {
			continue
		}
		pr := portRecord{port: uint16(*p.Port), proto: "tcp"}
		if p.Name != nil {
			pr.name = strings.ToLower(*p.Name)
		}
		if p.Protocol != nil {
			pr.proto = protoLabel(string(*p.Protocol))
		}
		r.ports = append(r.ports, pr)
	}
	for _, ep := range sl.Endpoints {
		// A nil ready condition means unknown, which consumers treat as
		// ready (discovery/v1 API documentation).
		set := &r.ready
		if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
			if r.unready == nil {
				r.unready = &endpointRecords{}
			}
			set = r.unready
		}
		for _, addr := range ep.Addresses {
			ip := net.ParseIP(addr)
			if ip == nil {
				continue
			}
			label := endpointLabel(ep.Hostname, ip)
			h := set.host(label)
			if h == nil {
				h = &hostRecords{label: label, fqdn: label + "." + svcFQDN}
				set.hosts = append(set.hosts, h)
			}
			svcRR, v6 := addressRR(svcFQDN, ip, ttl)
			hostRR, _ := addressRR(h.fqdn, ip, ttl)
			if v6 {
				set.aaaa = append(set.aaaa, svcRR)
				h.aaaa = append(h.aaaa, hostRR)
			} else {
				set.a = append(set.a, svcRR)
				h.a = append(h.a, hostRR)
			}
			if p, ok := ptrRR(ip, h.fqdn, ttl); ok {
				set.ptrs = append(set.ptrs, p)
			}
		}
	}
	return r
}

// endpointLabel is the first label of an endpoint's own name: its
// hostname if it has one, else its address with dashes (10-244-1-5, and
// for IPv6 fd00--5, with a trailing 0 when the address ends in ::), as in
// CoreDNS.
func endpointLabel(hostname *string, ip net.IP) string {
	if hostname != nil && *hostname != "" {
		return strings.ToLower(*hostname)
	}
	if v4 := ip.To4(); v4 != nil {
		return strings.ReplaceAll(v4.String(), ".", "-")
	}
	s := strings.ReplaceAll(ip.String(), ":", "-")
	if strings.HasSuffix(s, "-") {
		s += "0"
	}
	return s
}

// sortSlices keeps a Service's slices in name order, so that answers are
// in a stable order.
func sortSlices(s []*sliceRecords) {
	slices.SortFunc(s, func(a, b *sliceRecords) int { return strings.Compare(a.name, b.name) })
}
