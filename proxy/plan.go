package proxy

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TableName is the one nftables table (family ip) the proxy owns. It
// touches nothing else.
const TableName = "minik-proxy"

// masqueradeMark is the packet mark bit that asks nat-postrouting to
// masquerade (kube-proxy's default, --masquerade-bit 14).
const masqueradeMark = "0x00004000"

// Names of the fixed chains, sets and maps.
const (
	servicesChain       = "services"
	masqueradingChain   = "masquerading"
	markMasqChain       = "mark-for-masquerade"
	endpointsCheckChain = "endpoints-check"
	firewallCheckChain  = "firewall-check"
	clusterIPsCheck     = "cluster-ips-check"
	rejectChain         = "reject-chain"

	serviceIPsMap          = "service-ips"
	serviceNodePortsMap    = "service-nodeports"
	noEndpointServicesMap  = "no-endpoint-services"
	noEndpointNodePortsMap = "no-endpoint-nodeports"
	firewallIPsMap         = "firewall-ips"
	clusterIPsSet          = "cluster-ips"
	nodePortIPsSet         = "nodeport-ips"
	hairpinSet             = "hairpin-endpoints"
)

// Config is what the rule plan depends on besides the API objects.
type Config struct {
	// NodeName is this node's name: endpoints whose nodeName equals it are
	// local (for the Local traffic policies).
	NodeName string
	// OtherLocalNodes are further nodes whose pods share this host's
	// network (`minik up --nodes a,b` runs one proxy for both).
	OtherLocalNodes []string
	// NodeIPs, when set, are the only addresses that accept NodePort
	// traffic (kube-proxy's --nodeport-addresses). Empty: every local
	// address but 127.0.0.0/8 (`fib daddr type local`).
	NodeIPs []netip.Addr
	// ClusterCIDR is the pod range. Traffic to a ClusterIP from outside it
	// is masqueraded, and pods short-circuit externalTrafficPolicy Local.
	// Invalid (the zero value): neither.
	ClusterCIDR netip.Prefix
	// ServiceCIDR is the Service cluster IP range: traffic to an address
	// of it that no Service has is dropped, as kube-proxy does. Invalid
	// (the zero value): no such rule.
	ServiceCIDR netip.Prefix
}

// isLocal says whether an endpoint on node runs on this host.
func (c Config) isLocal(node string) bool {
	return node != "" && (node == c.NodeName || slices.Contains(c.OtherLocalNodes, node))
}

// Chain is one regular chain of a Service: its name and its rules, in
// order.
type Chain struct {
	Name  string
	Rules []Rule
}

// Rule is one nftables rule and its optional comment.
type Rule struct {
	Rule    string
	Comment string
}

// AffinitySet is a ClientIP session-affinity set: client addresses that
// stick to one endpoint, each forgotten Timeout seconds after its last use.
type AffinitySet struct {
	Name    string
	Timeout int // seconds
}

// Element is one element of a fixed set (Value empty) or verdict map.
type Element struct {
	Set     string // the set or map it belongs to
	Key     []string
	Value   string // a verdict, for maps
	Comment string
}

func (e Element) id() string { return e.Set + " " + strings.Join(e.Key, " . ") }

// UDPPort is what conntrack clean-up needs to know of a UDP service port:
// its destinations (cluster IP, external IPs, node port) and the endpoint
// addresses packets are DNATed to.
type UDPPort struct {
	Name      string
	IPs       []netip.Addr
	Port      int
	NodePort  int
	Endpoints []netip.Addr
}

// ServiceRules is everything the proxy programs for one Service.
type ServiceRules struct {
	Chains   []Chain       // sorted by name
	Sets     []AffinitySet // sorted by name
	Elements []Element     // sorted by set and key
	UDP      []UDPPort     // for conntrack clean-up; not nftables objects
}

// Ruleset is the whole desired state of the table: the fixed part, which
// depends only on Config (see addBase), and one ServiceRules per Service.
type Ruleset struct {
	Services map[types.NamespacedName]*ServiceRules
}

// ServiceNameLabel links an EndpointSlice to its Service.
const ServiceNameLabel = discoveryv1.LabelServiceName

// Plan is the proxy's policy, a pure function: from the Services and
// EndpointSlices of the cluster, this node's name and addresses, it
// returns the nftables objects the node must have.
func Plan(cfg Config, services []*corev1.Service, endpointSlices []*discoveryv1.EndpointSlice) *Ruleset {
	bySvc := map[types.NamespacedName][]*discoveryv1.EndpointSlice{}
	for _, s := range endpointSlices {
		if name := s.Labels[ServiceNameLabel]; name != "" {
			k := types.NamespacedName{Namespace: s.Namespace, Name: name}
			bySvc[k] = append(bySvc[k], s)
		}
	}
	rs := &Ruleset{Services: map[types.NamespacedName]*ServiceRules{}}
	for _, svc := range services {
		k := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
		if r := PlanService(cfg, svc, bySvc[k]); r != nil {
			rs.Services[k] = r
		}
	}
	return rs
}

// PlanService is Plan for one Service and its slices; nil when the
// Service gets no rules (ExternalName, headless, no ports).
func PlanService(cfg Config, svc *corev1.Service, slicesOfService []*discoveryv1.EndpointSlice) *ServiceRules {
	ports := servicePorts(svc)
	if len(ports) == 0 {
		return nil
	}
	b := &builder{cfg: cfg, chains: map[string]*Chain{}}
	for _, sp := range ports {
		b.port(sp, endpointsFor(sp, slicesOfService, cfg.isLocal))
	}
	b.elements = append(b.elements, Element{Set: clusterIPsSet, Key: []string{ports[0].clusterIP.String()}})
	return b.rules()
}

// builder accumulates one Service's objects.
type builder struct {
	cfg      Config
	chains   map[string]*Chain
	sets     []AffinitySet
	elements []Element
	udp      []UDPPort
}

func (b *builder) rule(chain string, comment string, parts ...any) {
	c := b.chains[chain]
	if c == nil {
		c = &Chain{Name: chain}
		b.chains[chain] = c
	}
	c.Rules = append(c.Rules, Rule{Rule: concat(parts...), Comment: comment})
}

func (b *builder) element(set, value, comment string, key ...string) {
	b.elements = append(b.elements, Element{Set: set, Key: key, Value: value, Comment: comment})
}

func (b *builder) rules() *ServiceRules {
	slices.SortFunc(b.elements, func(x, y Element) int { return strings.Compare(x.id(), y.id()) })
	// Ports sharing an endpoint address share its hairpin element.
	b.elements = slices.CompactFunc(b.elements, func(x, y Element) bool { return x.id() == y.id() })
	r := &ServiceRules{Sets: b.sets, Elements: b.elements, UDP: b.udp}
	for _, c := range b.chains {
		r.Chains = append(r.Chains, *c)
	}
	slices.SortFunc(r.Chains, func(a, b Chain) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(r.Sets, func(a, b AffinitySet) int { return strings.Compare(a.Name, b.Name) })
	return r
}

// Chain names. A name is PREFIX-HASH-NS/NAME/PROTO/PORT: the
// hash (of the rest) keeps near-identical names apart at a glance, and
// the "/" tells Service chains from the fixed ones.
func hashed(prefix, base string) string {
	sum := sha256.Sum256([]byte(base))
	return prefix + base32.StdEncoding.EncodeToString(sum[:])[:8] + "-" + base
}

func (sp *servicePort) base() string {
	return sp.namespace + "/" + sp.name + "/" + sp.protocol + "/" + sp.portName
}
func (sp *servicePort) clusterChain() string  { return hashed("service-", sp.base()) }
func (sp *servicePort) localChain() string    { return hashed("local-", sp.base()) }
func (sp *servicePort) externalChain() string { return hashed("external-", sp.base()) }
func (sp *servicePort) firewallChain() string { return hashed("firewall-", sp.base()) }

// affinitySet names the endpoint's affinity set. Its hash covers the
// timeout too: a set's timeout cannot change, so a new timeout makes a new
// set.
func (sp *servicePort) affinitySet(e endpoint) string {
	base := sp.base() + "__" + e.ip.String() + "/" + strconv.Itoa(e.port)
	sum := sha256.Sum256([]byte(base + "@" + strconv.Itoa(sp.affinityTimeout)))
	return "affinity-" + base32.StdEncoding.EncodeToString(sum[:])[:8] + "-" + base
}

// isServiceChain tells a Service's chain from a fixed one.
func isServiceChain(name string) bool { return strings.Contains(name, "/") }

// port plans one service port, as kube-proxy's nftables mode does.
func (b *builder) port(sp *servicePort, eps []endpoint) {
	cat := categorize(sp, eps)
	port := strconv.Itoa(sp.port)
	clusterChain, localChain := sp.clusterChain(), sp.localChain()
	usesCluster := len(cat.cluster) > 0 && sp.usesClusterEndpoints()
	usesLocal := len(cat.local) > 0 && sp.usesLocalEndpoints()

	internalChain, hasInternal := clusterChain, cat.any
	if sp.internalPolicyLocal {
		internalChain, hasInternal = localChain, len(cat.local) > 0
	}
	externalPolicyChain, hasExternal := clusterChain, cat.any
	if sp.externalPolicyLocal {
		externalPolicyChain, hasExternal = localChain, len(cat.local) > 0
	}
	externalChain := sp.externalChain()
	usesExternal := cat.any && sp.externallyAccessible()

	// Verdicts for packets that find no endpoint: reject when there is
	// none anywhere; drop when only the Local policy leaves none here.
	internalNoEndpoints, externalNoEndpoints := "goto "+rejectChain, "goto "+rejectChain
	if cat.any {
		internalNoEndpoints, externalNoEndpoints = "drop", "drop"
	}
	name := sp.String()

	// Cluster IP.
	if hasInternal {
		b.element(serviceIPsMap, "goto "+internalChain, "", sp.clusterIP.String(), sp.protocol, port)
	} else {
		b.element(noEndpointServicesMap, internalNoEndpoints, name, sp.clusterIP.String(), sp.protocol, port)
	}
	// External and load-balancer IPs.
	for _, ip := range sp.externalIPs {
		if cat.any {
			b.element(serviceIPsMap, "goto "+externalChain, "", ip.String(), sp.protocol, port)
		}
		if !hasExternal {
			b.element(noEndpointServicesMap, externalNoEndpoints, name, ip.String(), sp.protocol, port)
		}
	}
	// NodePort.
	if sp.nodePort != 0 {
		np := strconv.Itoa(sp.nodePort)
		if cat.any {
			b.element(serviceNodePortsMap, "goto "+externalChain, "", sp.protocol, np)
		}
		if !hasExternal {
			b.element(noEndpointNodePortsMap, externalNoEndpoints, name, sp.protocol, np)
		}
	}

	// loadBalancerSourceRanges: traffic to the load balancer's IPs from
	// anywhere else is dropped before DNAT (filter-prerouting-pre-dnat).
	if len(sp.loadBalancerIPs) > 0 && len(sp.sourceRanges) > 0 {
		fw := sp.firewallChain()
		allowed := make([]string, len(sp.sourceRanges))
		for i, r := range sp.sourceRanges {
			allowed[i] = r.String()
		}
		b.rule(fw, "", "ip saddr != {", strings.Join(allowed, ", "), "} drop")
		for _, ip := range sp.loadBalancerIPs {
			b.element(firewallIPsMap, "goto "+fw, "", ip.String(), sp.protocol, port)
		}
	}

	// Traffic to the cluster IP from outside the pod range (the node
	// itself, or a host routing the service range here) is masqueraded,
	// so that replies come back through this node.
	if hasInternal && b.cfg.ClusterCIDR.IsValid() {
		b.rule(internalChain, "", "ip daddr", sp.clusterIP, sp.protocol, "dport", port,
			"ip saddr !=", b.cfg.ClusterCIDR, "jump", markMasqChain)
	}

	if usesExternal {
		if !sp.externalPolicyLocal {
			// Endpoints may be on another node: masquerade, so that
			// replies come back through this one.
			b.rule(externalChain, "", "jump", markMasqChain)
		} else {
			if b.cfg.ClusterCIDR.IsValid() {
				b.rule(externalChain, "short-circuit pod traffic", "ip saddr", b.cfg.ClusterCIDR, "goto", clusterChain)
			}
			b.rule(externalChain, "masquerade local traffic", "fib saddr type local jump", markMasqChain)
			b.rule(externalChain, "short-circuit local traffic", "fib saddr type local goto", clusterChain)
		}
		if hasExternal {
			b.rule(externalChain, "", "goto", externalPolicyChain)
		}
	}

	if sp.affinityTimeout > 0 {
		for _, e := range cat.all {
			b.sets = append(b.sets, AffinitySet{Name: sp.affinitySet(e), Timeout: sp.affinityTimeout})
		}
	}
	if usesCluster {
		b.toEndpoints(sp, clusterChain, cat.cluster)
	}
	if usesLocal {
		b.toEndpoints(sp, localChain, cat.local)
	}
	// Hairpin: a pod reaching itself through its Service must see the
	// reply come from the Service, so nat-postrouting masquerades a DNATed
	// packet whose source is its destination (the set holds "IP . IP").
	for _, e := range cat.all {
		b.element(hairpinSet, "", "", e.ip.String(), e.ip.String())
	}

	if sp.protocol == "udp" {
		u := UDPPort{Name: name, IPs: append([]netip.Addr{sp.clusterIP}, sp.externalIPs...), Port: sp.port, NodePort: sp.nodePort}
		for _, e := range cat.all {
			u.Endpoints = append(u.Endpoints, e.ip)
		}
		b.udp = append(b.udp, u)
	}
}

// toEndpoints writes a service chain: sticky clients first (session
// affinity), then a random pick among the endpoints. The pick is a
// cascade, as kube-proxy's iptables mode draws it: rule i of n matches
// with probability 1/(n-i), so each endpoint gets 1/n. kube-proxy's
// nftables mode jumps to a chain per endpoint through an anonymous
// verdict map instead; here each endpoint is one rule, because `nft`
// reads every chain and set of the table before each transaction, and
// per-endpoint chains and maps made every sync 5× dearer (proxy README).
// The cascade runs only for a connection's first packet.
func (b *builder) toEndpoints(sp *servicePort, chain string, eps []endpoint) {
	proto := "meta l4proto " + sp.protocol
	if sp.affinityTimeout > 0 {
		for _, e := range eps {
			set := "@" + sp.affinitySet(e)
			b.rule(chain, "", proto, "ip saddr", set, "update", set, "{ ip saddr } dnat to", e)
		}
	}
	for i, e := range eps {
		parts := []any{proto}
		if left := len(eps) - i; left > 1 {
			parts = append(parts, "numgen random mod", left, 0)
		}
		if sp.affinityTimeout > 0 {
			parts = append(parts, "update @"+sp.affinitySet(e), "{ ip saddr }")
		}
		b.rule(chain, "", append(parts, "dnat to", e)...)
	}
}

// concat joins rule fragments with single spaces.
func concat(parts ...any) string {
	s := make([]string, 0, len(parts))
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			s = append(s, v)
		case int:
			s = append(s, strconv.Itoa(v))
		case fmt.Stringer:
			s = append(s, v.String())
		default:
			s = append(s, fmt.Sprint(v))
		}
	}
	return strings.Join(s, " ")
}
