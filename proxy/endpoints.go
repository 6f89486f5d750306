package proxy

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// DefaultAffinityTimeoutSeconds is how long a ClientIP session sticks to
// its endpoint when sessionAffinityConfig gives no timeout (3 hours, as in
// Kubernetes).
const DefaultAffinityTimeoutSeconds = 10800

// servicePort is one port of a Service, with what the rules need of the
// Service itself: the unit kube-proxy programs ("ServicePortName").
type servicePort struct {
	namespace, name string
	portName        string // the port's name, or its number when unnamed
	protocol        string // "tcp", "udp" or "sctp"
	port            int
	nodePort        int

	clusterIP   netip.Addr
	externalIPs []netip.Addr // spec.externalIPs and LoadBalancer ingress IPs
	// loadBalancerIPs are the ingress IPs (also in externalIPs), and
	// sourceRanges the loadBalancerSourceRanges allowed to reach them.
	loadBalancerIPs []netip.Addr
	sourceRanges    []netip.Prefix

	externalPolicyLocal bool // externalTrafficPolicy: Local (only when externally accessible)
	internalPolicyLocal bool // internalTrafficPolicy: Local
	affinityTimeout     int  // seconds; 0: no session affinity
}

// String is the port's name as logs and comments show it: NS/NAME:PORT.
func (sp *servicePort) String() string {
	return sp.namespace + "/" + sp.name + ":" + sp.portName
}

// externallyAccessible says whether traffic from outside the cluster can
// reach the port: through a NodePort, an external IP or a load balancer.
func (sp *servicePort) externallyAccessible() bool {
	return sp.nodePort != 0 || len(sp.externalIPs) > 0
}

// usesClusterEndpoints is true when some traffic to the port may go to any
// endpoint in the cluster. Even with externalTrafficPolicy Local, traffic
// from the node and its pods is short-circuited to all endpoints.
func (sp *servicePort) usesClusterEndpoints() bool {
	return !sp.internalPolicyLocal || sp.externallyAccessible()
}

// usesLocalEndpoints is true when some traffic must stay on this node.
func (sp *servicePort) usesLocalEndpoints() bool {
	return sp.internalPolicyLocal || sp.externalPolicyLocal
}

// servicePorts returns the ports the proxy programs for svc: none for
// ExternalName and headless Services, nor for a Service without an IPv4
// cluster IP (this proxy is IPv4 only).
func servicePorts(svc *corev1.Service) []*servicePort {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil || !ip.Is4() {
		return nil // headless ("None"), not yet allocated, or IPv6
	}
	var external []netip.Addr
	for _, s := range svc.Spec.ExternalIPs {
		if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
			external = append(external, a)
		}
	}
	var lbIPs []netip.Addr
	var ranges []netip.Prefix
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			if a, err := netip.ParseAddr(ing.IP); err == nil && a.Is4() {
				external = append(external, a)
				lbIPs = append(lbIPs, a)
			}
		}
		for _, r := range svc.Spec.LoadBalancerSourceRanges {
			// Spaces are tolerated, as kube-proxy does (older apiservers
			// let them through validation).
			if p, err := netip.ParsePrefix(strings.TrimSpace(r)); err == nil && p.Addr().Is4() {
				ranges = append(ranges, p.Masked())
			}
		}
	}
	affinity := 0
	if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		affinity = DefaultAffinityTimeoutSeconds
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil && *c.ClientIP.TimeoutSeconds > 0 {
			affinity = int(*c.ClientIP.TimeoutSeconds)
		}
	}
	withNodePorts := svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
	var out []*servicePort
	for _, p := range svc.Spec.Ports {
		proto := strings.ToLower(string(p.Protocol))
		if proto == "" {
			proto = "tcp"
		}
		sp := &servicePort{
			namespace: svc.Namespace, name: svc.Name, portName: p.Name,
			protocol: proto, port: int(p.Port), clusterIP: ip, externalIPs: external,
			loadBalancerIPs: lbIPs, sourceRanges: ranges,
			internalPolicyLocal: svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal,
			affinityTimeout:     affinity,
		}
		if sp.portName == "" {
			sp.portName = strconv.Itoa(int(p.Port))
		}
		if withNodePorts {
			sp.nodePort = int(p.NodePort)
		}
		sp.externalPolicyLocal = sp.externallyAccessible() && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
		out = append(out, sp)
	}
	return out
}

// endpoint is one backend of a service port, with its conditions read as
// the EndpointSlice API defines them: a nil ready means ready, a nil
// serving means the same as ready, a nil terminating means not
// terminating.
type endpoint struct {
	ip          netip.Addr
	port        int
	ready       bool
	serving     bool
	terminating bool
	local       bool // on this node
}

func (e endpoint) String() string { return netip.AddrPortFrom(e.ip, uint16(e.port)).String() }

// endpointsFor collects the endpoints of sp from the Service's slices
// (IPv4 slices only), matched by port name and protocol, sorted by
// address and port. An address listed twice keeps its first appearance.
func endpointsFor(sp *servicePort, slicesOfService []*discoveryv1.EndpointSlice, isLocal func(node string) bool) []endpoint {
	var out []endpoint
	seen := map[netip.AddrPort]bool{}
	for _, s := range slicesOfService {
		if s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		port := 0
		for _, p := range s.Ports {
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			proto := "tcp"
			if p.Protocol != nil {
				proto = strings.ToLower(string(*p.Protocol))
			}
			if p.Port != nil && proto == sp.protocol && (name == sp.portName || name == "" && strconv.Itoa(sp.port) == sp.portName) {
				port = int(*p.Port)
				break
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			ip, err := netip.ParseAddr(e.Addresses[0])
			if err != nil || !ip.Is4() {
				continue
			}
			ap := netip.AddrPortFrom(ip, uint16(port))
			if seen[ap] {
				continue
			}
			seen[ap] = true
			c := e.Conditions
			ep := endpoint{ip: ip, port: port, ready: c.Ready == nil || *c.Ready}
			ep.serving = ep.ready
			if c.Serving != nil {
				ep.serving = *c.Serving
			}
			ep.terminating = c.Terminating != nil && *c.Terminating
			ep.local = e.NodeName != nil && isLocal(*e.NodeName)
			out = append(out, ep)
		}
	}
	slices.SortFunc(out, func(a, b endpoint) int {
		if c := a.ip.Compare(b.ip); c != 0 {
			return c
		}
		return a.port - b.port
	})
	return out
}

// categorized is which endpoints each kind of traffic may use, decided
// as kube-proxy's CategorizeEndpoints decides it.
type categorized struct {
	cluster []endpoint // for traffic policy Cluster
	local   []endpoint // for traffic policy Local
	all     []endpoint // cluster ∪ local: every endpoint that gets a chain
	// any is true when the port has a usable endpoint anywhere in the
	// cluster (so a packet is rejected only when it is false).
	any bool
}

// categorize picks the endpoints: ready ones, and only when there is no
// ready one, the serving-but-terminating ones, separately for the whole
// cluster and for this node.
func categorize(sp *servicePort, eps []endpoint) categorized {
	var c categorized
	if sp.usesClusterEndpoints() {
		c.cluster = filter(eps, func(e endpoint) bool { return e.ready })
		if len(c.cluster) == 0 {
			c.cluster = filter(eps, func(e endpoint) bool { return e.serving && e.terminating })
		}
		c.any = len(c.cluster) > 0
	}
	if !sp.usesLocalEndpoints() {
		c.all = c.cluster
		return c
	}
	localReady, localTerminating := false, false
	for _, e := range eps {
		switch {
		case e.ready:
			c.any = true
			localReady = localReady || e.local
		case e.serving && e.terminating:
			c.any = true
			localTerminating = localTerminating || e.local
		}
	}
	switch {
	case localReady:
		c.local = filter(eps, func(e endpoint) bool { return e.local && e.ready })
	case localTerminating:
		c.local = filter(eps, func(e endpoint) bool { return e.local && e.serving && e.terminating })
	}
	if !sp.usesClusterEndpoints() {
		c.all = c.local
		return c
	}
	// Both: the union, in address order.
	in := map[netip.AddrPort]bool{}
	for _, e := range c.cluster {
		in[netip.AddrPortFrom(e.ip, uint16(e.port))] = true
	}
	c.all = append([]endpoint(nil), c.cluster...)
	for _, e := range c.local {
		if !in[netip.AddrPortFrom(e.ip, uint16(e.port))] {
			c.all = append(c.all, e)
		}
	}
	slices.SortFunc(c.all, func(a, b endpoint) int {
		if x := a.ip.Compare(b.ip); x != 0 {
			return x
		}
		return a.port - b.port
	})
	return c
}

func filter(eps []endpoint, keep func(endpoint) bool) []endpoint {
	var out []endpoint
	for _, e := range eps {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}
