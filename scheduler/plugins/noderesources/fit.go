// Package noderesources is the NodeResourcesFit plugin. Its filter rejects
// nodes without room for the pod's requests (cpu, memory,
// ephemeral-storage, extended resources such as nvidia.com/gpu, and the
// pod count); its score is LeastAllocated: the more cpu and memory a node
// has left after placing the pod, the better.
//
// A pod's request is the larger of its largest init container and the sum
// of its containers, plus its overhead (framework.PodRequests).
package noderesources

import (
	corev1 "k8s.io/api/core/v1"

	"minik/scheduler/framework"
)

const (
	// Name is the plugin's name in the registry.
	Name = "NodeResourcesFit"

	// ErrReasonTooManyPods is the rejection when the node's pod capacity is used up.
	ErrReasonTooManyPods = "Too many pods"
	// ErrReasonInsufficientPrefix is followed by the resource name, e.g.
	// "Insufficient cpu".
	ErrReasonInsufficientPrefix = "Insufficient "
)

// Keys of this plugin's cycle state.
var (
	stateKey = framework.NewStateKey("PreFilter" + Name)
)

// ResourceWeight is a resource LeastAllocated looks at, with its weight.
type ResourceWeight struct {
	Name   corev1.ResourceName
	Weight int64
}

// DefaultScoringResources are cpu and memory, weight 1 each.
var DefaultScoringResources = []ResourceWeight{{corev1.ResourceCPU, 1}, {corev1.ResourceMemory, 1}}

// Fit is a filter and score plugin.
type Fit struct {
	resources []ResourceWeight
}

var (
	_ framework.PreFilterPlugin = &Fit{}
	_ framework.FilterPlugin    = &Fit{}
	_ framework.ScorePlugin     = &Fit{}
)

// New returns the plugin with the LeastAllocated strategy on cpu and memory.
func New() *Fit { return &Fit{resources: DefaultScoringResources} }

// Name implements framework.Plugin.
func (*Fit) Name() string { return Name }

type preFilterState struct {
	requests, nonZero framework.Resource
}

// PreFilter keeps the pod's requests for Filter and Score: those of the
// cycle's PodInfo, which the queue computed when the pod arrived.
func (*Fit) PreFilter(state *framework.CycleState, pod *corev1.Pod, _ framework.SharedLister) *framework.Status {
	pi := state.PodInfoOf(pod)
	state.Write(stateKey, &preFilterState{pi.Requests, pi.NonZeroRequests})
	return nil
}

func getState(state *framework.CycleState, pod *corev1.Pod) *preFilterState {
	if s, err := framework.ReadAs[*preFilterState](state, stateKey); err == nil {
		return s
	}
	return &preFilterState{framework.PodRequests(pod, false), framework.PodRequests(pod, true)}
}

// InsufficientResource is one resource a node lacks for a pod.
type InsufficientResource struct {
	Name                         corev1.ResourceName
	Reason                       string
	Requested, Used, Allocatable int64
}

// Unresolvable reports whether the pod asks for more than the node has
// at all: removing pods (preemption) cannot help.
func (r InsufficientResource) Unresolvable() bool {
	return r.Name != corev1.ResourcePods && r.Requested > r.Allocatable
}

// Fits returns what the node lacks for a pod requesting req; empty if it
// fits.
func Fits(req framework.Resource, ni *framework.NodeInfo) []InsufficientResource {
	return FitsBeside(req, nil, ni)
}

// FitsBeside is Fits with the pods of beside (those nominated to the
// node) counted as if they ran there, without a copy of the node.
func FitsBeside(req framework.Resource, beside []*framework.PodInfo, ni *framework.NodeInfo) []InsufficientResource {
	used, pods := ni.Requested, len(ni.Pods)
	if len(beside) > 0 {
		used = used.Clone()
		for _, p := range beside {
			used.AddResource(p.Requests, 1)
		}
		pods += len(beside)
	}
	var out []InsufficientResource
	if pods+1 > ni.Allocatable.AllowedPodNumber {
		out = append(out, InsufficientResource{corev1.ResourcePods, ErrReasonTooManyPods, 1, int64(pods), int64(ni.Allocatable.AllowedPodNumber)})
	}
	check := func(name corev1.ResourceName, want, used, alloc int64) {
		if want > 0 && want > alloc-used {
			out = append(out, InsufficientResource{name, ErrReasonInsufficientPrefix + string(name), want, used, alloc})
		}
	}
	check(corev1.ResourceCPU, req.MilliCPU, used.MilliCPU, ni.Allocatable.MilliCPU)
	check(corev1.ResourceMemory, req.Memory, used.Memory, ni.Allocatable.Memory)
	check(corev1.ResourceEphemeralStorage, req.EphemeralStorage, used.EphemeralStorage, ni.Allocatable.EphemeralStorage)
	if len(req.Scalar) > 0 {
		for name, want := range req.Scalar {
			check(name, want, used.Scalar[name], ni.Allocatable.Scalar[name])
		}
	}
	return out
}

// Filter implements framework.FilterPlugin.
func (*Fit) Filter(state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	lacks := Fits(getState(state, pod).requests, ni)
	if len(lacks) == 0 {
		return nil
	}
	code := framework.Unschedulable
	reasons := make([]string, len(lacks))
	for i, l := range lacks {
		reasons[i] = l.Reason
		if l.Unresolvable() {
			code = framework.UnschedulableAndUnresolvable
		}
	}
	return framework.NewStatus(code, reasons...)
}

// Score is LeastAllocated: for each resource, the share of allocatable
// left free once the pod is placed, times 100, averaged by weight. Pods
// that request nothing count with default requests here.
func (f *Fit) Score(state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	req := getState(state, pod).nonZero
	var score, weights int64
	for _, r := range f.resources {
		alloc := ni.Allocatable.Get(r.Name)
		used := ni.NonZeroRequested.Get(r.Name) + req.Get(r.Name)
		score += LeastAllocated(used, alloc) * r.Weight
		weights += r.Weight
	}
	if weights == 0 {
		return 0, nil
	}
	return score / weights, nil
}

// LeastAllocated scores one resource: (allocatable - requested) * 100 /
// allocatable, and 0 if it does not fit or the node has none.
func LeastAllocated(requested, allocatable int64) int64 {
	if allocatable == 0 || requested > allocatable {
		return 0
	}
	return (allocatable - requested) * framework.MaxNodeScore / allocatable
}

// NormalizeScore leaves the scores, which are already 0..100.
func (*Fit) NormalizeScore(*framework.CycleState, *corev1.Pod, []framework.NodeScore) *framework.Status {
	return nil
}
