package proxy

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/knftables"
)

// This file turns plans into nftables transactions. It is pure too: it
// only fills a knftables.Transaction, which the driver runs.

func ptr[T any](v T) *T { return &v }

// baseChain is a chain hooked into the kernel's packet path.
type baseChain struct {
	name     string
	kind     knftables.BaseChainType
	hook     knftables.BaseChainHook
	priority knftables.BaseChainPriority
	jumps    []string // rules jumping to fixed chains
}

// baseChains are the table's entry points. Filtering runs before DNAT
// (priority dstnat-10) so that it sees the Service's address, except the
// check for unknown ports of a cluster IP, which must run after it.
var baseChains = []baseChain{
	{"filter-prerouting-pre-dnat", knftables.FilterType, knftables.PreroutingHook, knftables.DNATPriority + "-10",
		[]string{"ct state new jump " + firewallCheckChain}},
	{"filter-input", knftables.FilterType, knftables.InputHook, knftables.DNATPriority + "-10",
		[]string{"ct state new jump " + endpointsCheckChain}},
	{"filter-forward", knftables.FilterType, knftables.ForwardHook, knftables.DNATPriority + "-10",
		[]string{"ct state new jump " + endpointsCheckChain, "ct state new jump " + clusterIPsCheck}},
	{"filter-output", knftables.FilterType, knftables.OutputHook, knftables.DNATPriority + "-10",
		[]string{"ct state new jump " + endpointsCheckChain, "ct state new jump " + firewallCheckChain}},
	{"filter-output-post-dnat", knftables.FilterType, knftables.OutputHook, knftables.DNATPriority + "+10",
		[]string{"ct state new jump " + clusterIPsCheck}},
	{"nat-prerouting", knftables.NATType, knftables.PreroutingHook, knftables.DNATPriority,
		[]string{"jump " + servicesChain}},
	{"nat-output", knftables.NATType, knftables.OutputHook, knftables.DNATPriority,
		[]string{"jump " + servicesChain}},
	{"nat-postrouting", knftables.NATType, knftables.PostroutingHook, knftables.SNATPriority,
		[]string{"jump " + masqueradingChain}},
}

// addBase writes the fixed part of the table: base chains, the dispatch
// maps and the helper chains. It depends only on cfg.
func addBase(tx *knftables.Transaction, cfg Config) {
	tx.Add(&knftables.Table{Comment: ptr("rules for minik proxy (Services)")})
	for _, name := range []string{servicesChain, masqueradingChain, markMasqChain, endpointsCheckChain, firewallCheckChain, clusterIPsCheck, rejectChain} {
		tx.Add(&knftables.Chain{Name: name})
	}
	for _, bc := range baseChains {
		tx.Add(&knftables.Chain{Name: bc.name, Type: ptr(bc.kind), Hook: ptr(bc.hook), Priority: ptr(bc.priority)})
		for _, j := range bc.jumps {
			tx.Add(&knftables.Rule{Chain: bc.name, Rule: j})
		}
	}

	tx.Add(&knftables.Rule{Chain: markMasqChain, Rule: "mark set mark or " + masqueradeMark})
	tx.Add(&knftables.Set{Name: hairpinSet, Type: "ipv4_addr . ipv4_addr", Comment: ptr("each endpoint address twice (source . destination)")})
	tx.Add(&knftables.Rule{Chain: masqueradingChain, Rule: "ct status dnat ip saddr . ip daddr @" + hairpinSet + " jump " + markMasqChain,
		Comment: ptr("hairpin: an endpoint reaching itself through its Service")})
	tx.Add(&knftables.Rule{Chain: masqueradingChain, Rule: "mark and " + masqueradeMark + " == 0 return"})
	tx.Add(&knftables.Rule{Chain: masqueradingChain, Rule: "mark set mark xor " + masqueradeMark})
	tx.Add(&knftables.Rule{Chain: masqueradingChain, Rule: "masquerade fully-random"})
	// TCP gets a reset rather than kube-proxy's ICMP port-unreachable: the
	// kernel rate-limits ICMP errors per peer (and a redirect sent for the
	// same packet uses up the allowance), so a quick retry would wait for
	// a SYN retransmission instead of being refused at once.
	tx.Add(&knftables.Rule{Chain: rejectChain, Rule: "meta l4proto tcp reject with tcp reset"})
	tx.Add(&knftables.Rule{Chain: rejectChain, Rule: "reject"})

	tx.Add(&knftables.Map{Name: serviceIPsMap, Type: "ipv4_addr . inet_proto . inet_service : verdict",
		Comment: ptr("ClusterIP, ExternalIP and LoadBalancer IP traffic")})
	tx.Add(&knftables.Map{Name: serviceNodePortsMap, Type: "inet_proto . inet_service : verdict",
		Comment: ptr("NodePort traffic")})
	tx.Add(&knftables.Map{Name: noEndpointServicesMap, Type: "ipv4_addr . inet_proto . inet_service : verdict",
		Comment: ptr("vmap to drop or reject packets to services with no endpoints")})
	tx.Add(&knftables.Map{Name: noEndpointNodePortsMap, Type: "inet_proto . inet_service : verdict",
		Comment: ptr("vmap to drop or reject packets to service nodeports with no endpoints")})
	tx.Add(&knftables.Map{Name: firewallIPsMap, Type: "ipv4_addr . inet_proto . inet_service : verdict",
		Comment: ptr("destinations that are subject to LoadBalancerSourceRanges")})
	tx.Add(&knftables.Set{Name: clusterIPsSet, Type: "ipv4_addr", Comment: ptr("Active ClusterIPs")})

	nodePorts := "fib daddr type local ip daddr != 127.0.0.0/8"
	if len(cfg.NodeIPs) > 0 {
		tx.Add(&knftables.Set{Name: nodePortIPsSet, Type: "ipv4_addr", Comment: ptr("IPs that accept NodePort traffic")})
		for _, ip := range cfg.NodeIPs {
			tx.Add(&knftables.Element{Set: nodePortIPsSet, Key: []string{ip.String()}})
		}
		nodePorts = "ip daddr @" + nodePortIPsSet
	}
	tx.Add(&knftables.Rule{Chain: servicesChain, Rule: "ip daddr . meta l4proto . th dport vmap @" + serviceIPsMap})
	tx.Add(&knftables.Rule{Chain: servicesChain, Rule: nodePorts + " meta l4proto . th dport vmap @" + serviceNodePortsMap})
	tx.Add(&knftables.Rule{Chain: endpointsCheckChain, Rule: "ip daddr . meta l4proto . th dport vmap @" + noEndpointServicesMap})
	tx.Add(&knftables.Rule{Chain: endpointsCheckChain, Rule: nodePorts + " meta l4proto . th dport vmap @" + noEndpointNodePortsMap})
	tx.Add(&knftables.Rule{Chain: firewallCheckChain, Rule: "ip daddr . meta l4proto . th dport vmap @" + firewallIPsMap})
	tx.Add(&knftables.Rule{Chain: clusterIPsCheck, Rule: "ip daddr @" + clusterIPsSet + " goto " + rejectChain,
		Comment: ptr("Reject traffic to invalid ports of ClusterIPs")})
	if cfg.ServiceCIDR.IsValid() {
		tx.Add(&knftables.Rule{Chain: clusterIPsCheck, Rule: "ip daddr " + cfg.ServiceCIDR.String() + " drop",
			Comment: ptr("Drop traffic to unallocated ClusterIPs")})
	}
}

// writeFull replaces the whole table in one transaction: the table is
// deleted (if it exists) and written again, so whatever an earlier run
// left is gone, and since a transaction is atomic no packet sees the table
// missing. Connections already set up keep their NAT in conntrack.
func writeFull(tx *knftables.Transaction, cfg Config, rs *Ruleset) {
	tx.Add(&knftables.Table{})
	tx.Delete(&knftables.Table{})
	addBase(tx, cfg)
	shared := sharedElements{}
	keys := sortedKeys(rs.Services)
	for _, k := range keys {
		r := rs.Services[k]
		for _, s := range r.Sets {
			tx.Add(affinitySet(s))
		}
		for _, c := range r.Chains {
			tx.Add(&knftables.Chain{Name: c.Name})
		}
	}
	for _, k := range keys {
		r := rs.Services[k]
		for _, c := range r.Chains {
			addRules(tx, c)
		}
		for _, e := range r.Elements {
			if !isShared(e) || shared.add(e.id()) {
				tx.Add(element(e, true))
			}
		}
	}
}

// sharedElements counts, for each element of a set several Services may
// hold (the hairpin set: two Services can select one pod), how many
// Services hold it: the element is written with the first and deleted
// with the last.
type sharedElements map[string]int

func isShared(e Element) bool { return e.Set == hairpinSet }

// add counts one more holder of id and says whether it is the first.
func (s sharedElements) add(id string) bool {
	s[id]++
	return s[id] == 1
}

// apply adds delta (holders gained or lost per element) to s.
func (s sharedElements) apply(delta map[string]int) {
	for id, d := range delta {
		if s[id] += d; s[id] <= 0 {
			delete(s, id)
		}
	}
}

// sharedDelta is how many holders each shared element gains or loses
// through changes.
func sharedDelta(changes map[types.NamespacedName]change) map[string]int {
	delta := map[string]int{}
	for _, ch := range changes {
		for _, e := range elementsOf(ch.old) {
			if isShared(e) {
				delta[e.id()]--
			}
		}
		for _, e := range elementsOf(ch.new) {
			if isShared(e) {
				delta[e.id()]++
			}
		}
	}
	return delta
}

// change is one Service's old and new rules (either may be nil).
type change struct {
	old, new *ServiceRules
}

// writeDiff adds to tx only what differs between the old and new rules of
// the changed Services: new and rewritten chains, added and removed map
// elements, removed chains and sets. Unchanged chains and elements are not
// touched. Removals of elements come before additions, so that an
// address or node port moving from one Service to another in the same
// sync works. Chains no longer wanted are flushed, and deleted too when
// deleteChains; it returns their names. An element of a shared set is
// written when its first holder comes and deleted when its last goes
// (shared counts the holders before the changes).
func writeDiff(tx *knftables.Transaction, changes map[types.NamespacedName]change, shared sharedElements, deleteChains bool) (gone []string) {
	keys := sortedKeys(changes)
	// 1. New sets and chains (empty), so that anything may refer to them.
	for _, k := range keys {
		ch := changes[k]
		oldSets, oldChains := indexSets(ch.old), indexChains(ch.old)
		if ch.new == nil {
			continue
		}
		for _, s := range ch.new.Sets {
			if _, ok := oldSets[s.Name]; !ok {
				tx.Add(affinitySet(s))
			}
		}
		for _, c := range ch.new.Chains {
			if _, ok := oldChains[c.Name]; !ok {
				tx.Add(&knftables.Chain{Name: c.Name})
			}
		}
	}
	// 2. Rules of new chains; changed chains are flushed and rewritten.
	for _, k := range keys {
		ch := changes[k]
		oldChains := indexChains(ch.old)
		if ch.new == nil {
			continue
		}
		for _, c := range ch.new.Chains {
			old, existed := oldChains[c.Name]
			if existed && slices.Equal(old.Rules, c.Rules) {
				continue
			}
			if existed {
				tx.Flush(&knftables.Chain{Name: c.Name})
			}
			addRules(tx, c)
		}
	}
	// 3. Elements: removed or changed ones out, then new or changed in.
	delta := sharedDelta(changes)
	sharedDone := map[string]bool{}
	for _, k := range keys {
		ch := changes[k]
		newEls := indexElements(ch.new)
		for _, e := range elementsOf(ch.old) {
			if isShared(e) {
				if id := e.id(); !sharedDone[id] && shared[id] > 0 && shared[id]+delta[id] <= 0 {
					sharedDone[id] = true
					tx.Delete(element(e, false))
				}
			} else if n, ok := newEls[e.id()]; !ok || !sameElement(n, e) {
				tx.Delete(element(e, false))
			}
		}
	}
	for _, k := range keys {
		ch := changes[k]
		oldEls := indexElements(ch.old)
		for _, e := range elementsOf(ch.new) {
			if isShared(e) {
				if id := e.id(); !sharedDone[id] && shared[id] <= 0 && shared[id]+delta[id] > 0 {
					sharedDone[id] = true
					tx.Add(element(e, true))
				}
			} else if o, ok := oldEls[e.id()]; !ok || !sameElement(o, e) {
				tx.Add(element(e, true))
			}
		}
	}
	// 4. Chains and sets no longer wanted. A chain may be deleted only
	// once nothing refers to it, so all are flushed first.
	for _, k := range keys {
		ch := changes[k]
		newChains := indexChains(ch.new)
		for _, c := range chainsOf(ch.old) {
			if _, ok := newChains[c.Name]; !ok {
				gone = append(gone, c.Name)
				tx.Flush(&knftables.Chain{Name: c.Name})
			}
		}
	}
	if deleteChains {
		for _, name := range gone {
			tx.Delete(&knftables.Chain{Name: name})
		}
	}
	for _, k := range keys {
		ch := changes[k]
		newSets := indexSets(ch.new)
		for _, s := range setsOf(ch.old) {
			if _, ok := newSets[s.Name]; !ok {
				tx.Delete(&knftables.Set{Name: s.Name})
			}
		}
	}
	return gone
}

func addRules(tx *knftables.Transaction, c Chain) {
	for _, r := range c.Rules {
		rule := &knftables.Rule{Chain: c.Name, Rule: r.Rule}
		if r.Comment != "" {
			rule.Comment = ptr(r.Comment)
		}
		tx.Add(rule)
	}
}

func affinitySet(s AffinitySet) *knftables.Set {
	return &knftables.Set{Name: s.Name, Type: "ipv4_addr",
		Flags:   []knftables.SetFlag{knftables.DynamicFlag, knftables.TimeoutFlag},
		Timeout: ptr(time.Duration(s.Timeout) * time.Second)}
}

// element converts e; a deleted element needs only its key.
func element(e Element, withValue bool) *knftables.Element {
	el := &knftables.Element{Key: e.Key}
	if e.Set == clusterIPsSet || e.Set == nodePortIPsSet || e.Set == hairpinSet {
		el.Set = e.Set
	} else {
		el.Map = e.Set
		if withValue {
			el.Value = []string{e.Value}
		}
	}
	if withValue && e.Comment != "" {
		el.Comment = ptr(e.Comment)
	}
	return el
}

func chainsOf(r *ServiceRules) []Chain {
	if r == nil {
		return nil
	}
	return r.Chains
}

func setsOf(r *ServiceRules) []AffinitySet {
	if r == nil {
		return nil
	}
	return r.Sets
}

func elementsOf(r *ServiceRules) []Element {
	if r == nil {
		return nil
	}
	return r.Elements
}

func indexChains(r *ServiceRules) map[string]Chain {
	m := map[string]Chain{}
	for _, c := range chainsOf(r) {
		m[c.Name] = c
	}
	return m
}

func indexSets(r *ServiceRules) map[string]AffinitySet {
	m := map[string]AffinitySet{}
	for _, s := range setsOf(r) {
		m[s.Name] = s
	}
	return m
}

func indexElements(r *ServiceRules) map[string]Element {
	m := map[string]Element{}
	for _, e := range elementsOf(r) {
		m[e.id()] = e
	}
	return m
}

func sameElement(a, b Element) bool {
	return a.id() == b.id() && a.Value == b.Value && a.Comment == b.Comment
}

func sortedKeys[V any](m map[types.NamespacedName]V) []types.NamespacedName {
	keys := make([]types.NamespacedName, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int {
		if a.Namespace != b.Namespace {
			return strings.Compare(a.Namespace, b.Namespace)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return keys
}
