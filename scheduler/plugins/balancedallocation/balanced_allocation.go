// Package balancedallocation prefers nodes whose cpu and memory would be
// used in similar shares once the pod is placed, so that no resource is
// stranded: score = (1 - standard deviation of the shares) * 100.
package balancedallocation

import (
	"math"

	corev1 "k8s.io/api/core/v1"

	"minik/scheduler/framework"
)

// Name is the plugin's name in the registry.
const Name = "NodeResourcesBalancedAllocation"

// BalancedAllocation is a score plugin.
type BalancedAllocation struct {
	resources []corev1.ResourceName
}

var (
	_ framework.PreScorePlugin = &BalancedAllocation{}
	_ framework.ScorePlugin    = &BalancedAllocation{}
)

// stateKey holds the pod's requests, computed in PreScore.
var stateKey = framework.NewStateKey("PreScore" + Name)

// PreScore keeps the pod's requests (with defaults for containers that
// request nothing) for Score: those of the cycle's PodInfo.
func (*BalancedAllocation) PreScore(state *framework.CycleState, pod *corev1.Pod, _ []*framework.NodeInfo, _ framework.SharedLister) *framework.Status {
	state.Write(stateKey, &state.PodInfoOf(pod).NonZeroRequests)
	return nil
}

// New returns the plugin, balancing cpu and memory.
func New() *BalancedAllocation {
	return &BalancedAllocation{resources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}}
}

// Name implements framework.Plugin.
func (*BalancedAllocation) Name() string { return Name }

// Score implements framework.ScorePlugin.
func (b *BalancedAllocation) Score(state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	req, err := framework.ReadAs[*framework.Resource](state, stateKey)
	if err != nil {
		r := framework.PodRequests(pod, true)
		req = &r
	}
	var buf [4]float64 // no allocation per node for the usual two resources
	shares := buf[:0]
	for _, r := range b.resources {
		alloc := ni.Allocatable.Get(r)
		if alloc == 0 {
			continue
		}
		shares = append(shares, min(float64(ni.NonZeroRequested.Get(r)+req.Get(r))/float64(alloc), 1))
	}
	return Score(shares), nil
}

// Score turns usage shares (0..1) into a score: 100 when they are equal,
// less as their standard deviation grows.
func Score(shares []float64) int64 {
	if len(shares) < 2 {
		return framework.MaxNodeScore
	}
	var mean float64
	for _, s := range shares {
		mean += s
	}
	mean /= float64(len(shares))
	var variance float64
	for _, s := range shares {
		variance += (s - mean) * (s - mean)
	}
	std := math.Sqrt(variance / float64(len(shares)))
	return int64((1 - std) * float64(framework.MaxNodeScore))
}

// NormalizeScore leaves the scores, which are already 0..100.
func (*BalancedAllocation) NormalizeScore(*framework.CycleState, *corev1.Pod, []framework.NodeScore) *framework.Status {
	return nil
}
