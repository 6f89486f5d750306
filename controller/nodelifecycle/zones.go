package nodelifecycle

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// ZoneState is how healthy a zone is, named as in Kubernetes.
type ZoneState string

// Zone states. A zone is fully disrupted when none of its nodes is
// Ready, partially disrupted when more than two and at least
// UnhealthyZoneThreshold of them are not Ready.
const (
	StateInitial           ZoneState = "Initial"
	StateNormal            ZoneState = "Normal"
	StatePartialDisruption ZoneState = "PartialDisruption"
	StateFullDisruption    ZoneState = "FullDisruption"
)

// LabelExcludeDisruption keeps a node out of its zone's health, as in
// Kubernetes.
const LabelExcludeDisruption = "node.kubernetes.io/exclude-disruption"

// EvictionConfig is the policy for how fast not-ready nodes get their
// NoExecute taint (which evicts their pods), per zone. Every field is
// taken as it is, zero too: a rate of 0 taints no node.
// DefaultEvictionConfig has Kubernetes' defaults.
type EvictionConfig struct {
	// Rate is how many nodes per second get the taint in a zone that is
	// not partially disrupted (--node-eviction-rate).
	Rate float64
	// SecondaryRate replaces Rate in a partially disrupted zone of more
	// than LargeClusterSizeThreshold nodes (--secondary-node-eviction-rate).
	SecondaryRate float64
	// UnhealthyZoneThreshold is the fraction of not-ready nodes (when more
	// than two) that makes a zone partially disrupted
	// (--unhealthy-zone-threshold).
	UnhealthyZoneThreshold float64
	// LargeClusterSizeThreshold is the zone size up to which a partially
	// disrupted zone gets no taints at all (--large-cluster-size-threshold).
	LargeClusterSizeThreshold int
}

// DefaultEvictionConfig returns Kubernetes' defaults: a rate of 0.1 nodes
// per second, 0.01 in a large partially disrupted zone, zones partially
// disrupted from 55% of their nodes not ready, large beyond 50 nodes.
func DefaultEvictionConfig() EvictionConfig {
	return EvictionConfig{Rate: 0.1, SecondaryRate: 0.01, UnhealthyZoneThreshold: 0.55, LargeClusterSizeThreshold: 50}
}

// ZoneKey returns the zone of node: its topology.kubernetes.io/region and
// zone labels (or their deprecated failure-domain.beta forms), "" when it
// has neither, as Kubernetes keys zones.
func ZoneKey(node *corev1.Node) string {
	label := func(key, beta string) string {
		if v, ok := node.Labels[key]; ok {
			return v
		}
		return node.Labels[beta]
	}
	region := label(corev1.LabelTopologyRegion, corev1.LabelFailureDomainBetaRegion)
	zone := label(corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaZone)
	if region == "" && zone == "" {
		return ""
	}
	// The separator cannot appear in a label value.
	return region + ":\x00:" + zone
}

// ComputeZoneState judges a zone from the Ready conditions of its nodes
// (nil for a node that has none, which counts as not ready).
func ComputeZoneState(ready []*corev1.NodeCondition, unhealthyThreshold float64) ZoneState {
	readyNodes, notReady := 0, 0
	for _, c := range ready {
		if c != nil && c.Status == corev1.ConditionTrue {
			readyNodes++
		} else {
			notReady++
		}
	}
	switch {
	case readyNodes == 0 && notReady > 0:
		return StateFullDisruption
	case notReady > 2 && float64(notReady)/float64(notReady+readyNodes) >= unhealthyThreshold:
		return StatePartialDisruption
	default:
		return StateNormal
	}
}

// Disruption is the verdict on every zone of the cluster.
type Disruption struct {
	// States holds the state of every zone that has nodes.
	States map[string]ZoneState
	// Rates are the new tainting rates (nodes per second) of the zones
	// whose rate must be reset: those that changed state.
	Rates map[string]float64
	// AllFullyDisrupted says no node in the cluster is Ready: the control
	// plane, not the nodes, is probably cut off, so nothing is tainted.
	AllFullyDisrupted bool
	// EnteredFullDisruption says the cluster just became all fully
	// disrupted: the NoExecute taints already put on nodes come off.
	EnteredFullDisruption bool
	// LeftFullDisruption says it just stopped being: every node's
	// heartbeat clock starts again, so none is judged by the outage.
	LeftFullDisruption bool
}

// JudgeZones judges the zones of nodes, given their previous states, as
// Kubernetes' node lifecycle controller does: a zone that is partially
// disrupted is tainted at SecondaryRate if it is large, not at all if it
// is small; any other zone at Rate; and when every zone is fully
// disrupted, no zone at all.
func JudgeZones(nodes []*corev1.Node, prev map[string]ZoneState, cfg EvictionConfig) Disruption {
	conds := map[string][]*corev1.NodeCondition{}
	for _, n := range nodes {
		if _, excluded := n.Labels[LabelExcludeDisruption]; excluded {
			continue
		}
		zone := ZoneKey(n)
		conds[zone] = append(conds[zone], condition(n, corev1.NodeReady))
	}
	// With no node at all, nothing is tainted either way.
	d := Disruption{States: map[string]ZoneState{}, Rates: map[string]float64{}, AllFullyDisrupted: true}
	for zone, c := range conds {
		d.States[zone] = ComputeZoneState(c, cfg.UnhealthyZoneThreshold)
		if d.States[zone] != StateFullDisruption {
			d.AllFullyDisrupted = false
		}
	}
	// Zones without nodes are forgotten; a zone not seen before was in
	// the Initial state.
	wasAllFullyDisrupted := true
	for zone, st := range prev {
		if _, ok := conds[zone]; ok && st != StateFullDisruption {
			wasAllFullyDisrupted = false
		}
	}
	for zone := range conds {
		if _, ok := prev[zone]; !ok {
			wasAllFullyDisrupted = false
		}
	}
	zones := slices.Sorted(maps.Keys(conds))
	switch {
	case d.AllFullyDisrupted && wasAllFullyDisrupted:
		// Still cut off: the rates are already 0.
	case d.AllFullyDisrupted:
		d.EnteredFullDisruption = true
		for _, zone := range zones {
			d.Rates[zone] = 0
		}
	default:
		d.LeftFullDisruption = wasAllFullyDisrupted
		for _, zone := range zones {
			if d.LeftFullDisruption || prev[zone] != d.States[zone] {
				d.Rates[zone] = zoneRate(cfg, d.States[zone], len(conds[zone]))
			}
		}
	}
	return d
}

// zoneRate is the tainting rate of a zone of size nodes in state st. As
// in Kubernetes, the size that decides whether a partially disrupted
// zone is large is the zone's, and a fully disrupted zone (while others
// are not) is tainted at the normal rate, so its workloads move to the
// healthy zones.
func zoneRate(cfg EvictionConfig, st ZoneState, size int) float64 {
	if st != StatePartialDisruption {
		return cfg.Rate
	}
	if size > cfg.LargeClusterSizeThreshold {
		return cfg.SecondaryRate
	}
	return 0
}
