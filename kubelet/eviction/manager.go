package eviction

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Reason is the pod status reason (and event reason) of an eviction and
// of a rejection under node pressure.
const Reason = "Evicted"

// The kubelet's message fragments (pkg/kubelet/eviction/helpers.go),
// trailing spaces included.
const (
	nodeLowMessageFmt      = "The node was low on resource: %v. "
	thresholdMetMessageFmt = "Threshold quantity: %v, available: %v. "
	containerMessageFmt    = "Container %s was using %s, request is %s, has larger consumption of %v. "
)

// DefaultPressureTransitionPeriod is how long a pressure condition stays
// True after its threshold was last met (the kubelet's
// --eviction-pressure-transition-period default), so that it does not
// flap as pods come and go.
const DefaultPressureTransitionPeriod = 5 * time.Minute

// systemCriticalPriority is the priority of system-cluster-critical; pods
// at or above it are never evicted or rejected.
const systemCriticalPriority = 2000000000

// Annotations the kubelet sets on static pods and their mirrors.
const (
	annotationConfigSource = "kubernetes.io/config.source"
	annotationConfigMirror = "kubernetes.io/config.mirror"
)

// Manager is the eviction policy's memory: when each pressure condition
// was last observed. It does no IO; the kubelet feeds it a Summary every
// monitoring interval and carries out its Decision. It is safe for
// concurrent use (admission reads the conditions while it synchronizes).
type Manager struct {
	thresholds []Threshold
	transition time.Duration

	mu sync.Mutex
	// lastObserved is when each condition's threshold was last met.
	lastObserved map[corev1.NodeConditionType]time.Time
	conditions   []corev1.NodeConditionType
}

// NewManager returns a manager for hard thresholds; transition is the
// pressure transition period (0: DefaultPressureTransitionPeriod).
func NewManager(thresholds []Threshold, transition time.Duration) *Manager {
	if transition == 0 {
		transition = DefaultPressureTransitionPeriod
	}
	return &Manager{thresholds: thresholds, transition: transition, lastObserved: map[corev1.NodeConditionType]time.Time{}}
}

// Decision is what one synchronize found.
type Decision struct {
	// Conditions are the node conditions under pressure, sorted.
	Conditions []corev1.NodeConditionType
	// Reclaim is the resource a met threshold asks to reclaim by evicting
	// a pod; "" when no threshold is met.
	Reclaim corev1.ResourceName
	// Candidates are the pods that may be evicted, first one first.
	// Critical pods (static, mirror, priority ≥ system-cluster-critical)
	// are never among them.
	Candidates []*corev1.Pod

	threshold Threshold
	obs       map[Signal]observation
	stats     statsFunc
}

// Synchronize compares the summary with the thresholds at time now: the
// pressure conditions to report, and when a threshold is met, which
// resource to reclaim and the active pods ranked for eviction.
func (m *Manager) Synchronize(now time.Time, s *Summary, active []*corev1.Pod) *Decision {
	obs := observe(s.Node)
	met := m.met(obs)
	m.mu.Lock()
	for _, t := range met {
		m.lastObserved[signalCondition[t.Signal]] = now
	}
	var conds []corev1.NodeConditionType
	for c, at := range m.lastObserved {
		if now.Sub(at) < m.transition {
			conds = append(conds, c)
		} else {
			delete(m.lastObserved, c)
		}
	}
	sort.Slice(conds, func(i, j int) bool { return conds[i] < conds[j] })
	m.conditions = conds
	m.mu.Unlock()

	d := &Decision{Conditions: conds, obs: obs, stats: func(p *corev1.Pod) (PodStats, bool) {
		st, ok := s.Pods[p.UID]
		return st, ok
	}}
	if len(met) == 0 {
		return d
	}
	// Memory is reclaimed first; other signals in the order given.
	sort.SliceStable(met, func(i, j int) bool {
		return met[i].Signal == SignalMemoryAvailable && met[j].Signal != SignalMemoryAvailable
	})
	d.threshold = met[0]
	d.Reclaim = signalResource[d.threshold.Signal]
	for _, p := range active {
		if !IsCritical(p) {
			d.Candidates = append(d.Candidates, p)
		}
	}
	rankFor(d.threshold.Signal, d.stats)(d.Candidates)
	return d
}

// Met reports whether the node's signals meet a threshold, so that the
// pods' usage is needed to rank them.
func (m *Manager) Met(node NodeStats) bool {
	return len(m.met(observe(node))) > 0
}

// met returns the thresholds the observed signals meet.
func (m *Manager) met(obs map[Signal]observation) []Threshold {
	var met []Threshold
	for _, t := range m.thresholds {
		o, ok := obs[t.Signal]
		if ok && t.Amount(o.capacity).Cmp(o.available) > 0 {
			met = append(met, t)
		}
	}
	return met
}

// Message is the kubelet's eviction message for pod: the resource, the
// threshold and what is left, and the containers using more than they
// requested.
func (d *Decision) Message(pod *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, nodeLowMessageFmt, d.Reclaim)
	if o, ok := d.obs[d.threshold.Signal]; ok {
		fmt.Fprintf(&b, thresholdMetMessageFmt, d.threshold.Amount(o.capacity), &o.available)
	}
	st, ok := d.stats(pod)
	if !ok || (d.Reclaim != corev1.ResourceMemory && d.Reclaim != corev1.ResourceEphemeralStorage) {
		return b.String()
	}
	for _, cs := range st.Containers {
		for _, c := range pod.Spec.Containers {
			if c.Name != cs.Name {
				continue
			}
			req := c.Resources.Requests[d.Reclaim]
			used := resource.NewQuantity(cs.MemoryWorkingSetBytes, resource.BinarySI)
			if d.Reclaim == corev1.ResourceEphemeralStorage {
				used = resource.NewQuantity(cs.RootfsBytes+cs.LogsBytes, resource.BinarySI)
			}
			if used.Cmp(req) > 0 {
				fmt.Fprintf(&b, containerMessageFmt, c.Name, used.String(), req.String(), d.Reclaim)
			}
		}
	}
	return b.String()
}

// Conditions are the pressure conditions of the last synchronize.
func (m *Manager) Conditions() []corev1.NodeConditionType {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.conditions)
}

// IsCritical reports whether the kubelet must never evict or reject pod:
// a static pod, a mirror pod, or one at system-cluster-critical priority
// or above (Kubernetes' IsCriticalPod).
func IsCritical(pod *corev1.Pod) bool {
	if src, ok := pod.Annotations[annotationConfigSource]; ok && src != "api" {
		return true
	}
	if _, ok := pod.Annotations[annotationConfigMirror]; ok {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority
}
