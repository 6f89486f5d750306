package framework

import (
	"strings"
	"unique"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Default requests that scoring assumes for a container that requests
// nothing, so that many such pods do not all pile onto one node. Filters
// use the real requests.
const (
	DefaultMilliCPURequest int64 = 100               // 0.1 core
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024 // 200 MiB
	// DefaultMaxPods is a node's pod capacity when its allocatable does
	// not say.
	DefaultMaxPods = 110
)

// Resource is an amount of each schedulable resource.
type Resource struct {
	MilliCPU         int64
	Memory           int64 // bytes
	EphemeralStorage int64 // bytes
	AllowedPodNumber int
	// Scalar holds extended resources such as nvidia.com/gpu.
	Scalar map[corev1.ResourceName]int64
}

// NewResource converts a ResourceList.
func NewResource(rl corev1.ResourceList) Resource {
	var r Resource
	r.Add(rl)
	return r
}

// Add adds every quantity of rl to r.
func (r *Resource) Add(rl corev1.ResourceList) {
	for name, q := range rl {
		switch name {
		case corev1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case corev1.ResourceMemory:
			r.Memory += q.Value()
		case corev1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case corev1.ResourcePods:
			r.AllowedPodNumber += int(q.Value())
		default:
			if IsScalarResourceName(name) {
				r.SetScalar(name, r.Scalar[name]+q.Value())
			}
		}
	}
}

// SetMax sets each resource of r to the larger of r's and rl's.
func (r *Resource) SetMax(rl corev1.ResourceList) {
	for name, q := range rl {
		switch name {
		case corev1.ResourceCPU:
			r.MilliCPU = max(r.MilliCPU, q.MilliValue())
		case corev1.ResourceMemory:
			r.Memory = max(r.Memory, q.Value())
		case corev1.ResourceEphemeralStorage:
			r.EphemeralStorage = max(r.EphemeralStorage, q.Value())
		default:
			if IsScalarResourceName(name) {
				r.SetScalar(name, max(r.Scalar[name], q.Value()))
			}
		}
	}
}

// SetScalar sets an extended resource.
func (r *Resource) SetScalar(name corev1.ResourceName, v int64) {
	if r.Scalar == nil {
		r.Scalar = map[corev1.ResourceName]int64{}
	}
	r.Scalar[name] = v
}

// AddResource adds o to r (sign -1 subtracts it).
func (r *Resource) AddResource(o Resource, sign int64) {
	r.MilliCPU += sign * o.MilliCPU
	r.Memory += sign * o.Memory
	r.EphemeralStorage += sign * o.EphemeralStorage
	r.AllowedPodNumber += int(sign) * o.AllowedPodNumber
	if len(o.Scalar) == 0 {
		return // ranging over an empty map is not free, and this runs per pod a dry run moves
	}
	for name, v := range o.Scalar {
		r.SetScalar(name, r.Scalar[name]+sign*v)
	}
}

// Clone returns a deep copy.
func (r Resource) Clone() Resource {
	c := r
	if r.Scalar != nil {
		c.Scalar = make(map[corev1.ResourceName]int64, len(r.Scalar))
		for k, v := range r.Scalar {
			c.Scalar[k] = v
		}
	}
	return c
}

// Get returns the amount of one resource by name.
func (r Resource) Get(name corev1.ResourceName) int64 {
	switch name {
	case corev1.ResourceCPU:
		return r.MilliCPU
	case corev1.ResourceMemory:
		return r.Memory
	case corev1.ResourceEphemeralStorage:
		return r.EphemeralStorage
	case corev1.ResourcePods:
		return int64(r.AllowedPodNumber)
	}
	return r.Scalar[name]
}

// IsScalarResourceName reports whether name is an extended resource
// (e.g. nvidia.com/gpu) or hugepages: anything with a domain that is not
// kubernetes.io, or a hugepages- prefix.
func IsScalarResourceName(name corev1.ResourceName) bool {
	s := string(name)
	if strings.HasPrefix(s, "hugepages-") {
		return true
	}
	domain, _, ok := strings.Cut(s, "/")
	return ok && domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io")
}

// PodRequests returns what a pod asks for, by the API's rule in
// k8s.io/component-helpers/resource (the one the kubelet's admission and
// the quota share): its containers and sidecars (restartable init
// containers) together, or what its largest init container needs with
// the sidecars started before it, whichever is larger; pod-level
// requests instead when set; plus spec.overhead. With nonZero, a
// container that names no cpu or memory request counts
// DefaultMilliCPURequest and DefaultMemoryRequest (for scoring).
func PodRequests(pod *corev1.Pod, nonZero bool) Resource {
	var opts resourcehelper.PodResourcesOptions
	if nonZero {
		opts.NonMissingContainerRequests = nonZeroRequests
	}
	r := NewResource(resourcehelper.PodRequests(pod, opts))
	r.AllowedPodNumber = 0
	return r
}

var nonZeroRequests = corev1.ResourceList{
	corev1.ResourceCPU:    *resource.NewMilliQuantity(DefaultMilliCPURequest, resource.DecimalSI),
	corev1.ResourceMemory: *resource.NewQuantity(DefaultMemoryRequest, resource.BinarySI),
}

// AffinityTerm is a pod (anti-)affinity term with its selectors parsed.
type AffinityTerm struct {
	// Namespaces the term selects by name. With a nil NamespaceSelector
	// and no names, the term selects the owning pod's namespace.
	Namespaces sets.Set[string]
	// NamespaceSelector selects namespaces by their labels; nil: none.
	NamespaceSelector labels.Selector
	Selector          labels.Selector
	TopologyKey       string
	// key names what Matches reads, for MatchMemo.
	key unique.Handle[string]
}

// Matches reports whether pod (in a namespace with labels nsLabels)
// is selected by the term.
func (t *AffinityTerm) Matches(pod *corev1.Pod, nsLabels labels.Set) bool {
	if !t.Namespaces.Has(pod.Namespace) && (t.NamespaceSelector == nil || !t.NamespaceSelector.Matches(nsLabels)) {
		return false
	}
	return t.Selector.Matches(labels.Set(pod.Labels))
}

// WeightedAffinityTerm is a preferred term with its weight (1-100).
type WeightedAffinityTerm struct {
	AffinityTerm
	Weight int32
}

// PodInfo is a pod with what the scheduler derives from it once: its
// requests and parsed affinity terms.
type PodInfo struct {
	Pod                        *corev1.Pod
	Requests                   Resource // real requests
	NonZeroRequests            Resource // requests with defaults, for scoring
	RequiredAffinityTerms      []AffinityTerm
	RequiredAntiAffinityTerms  []AffinityTerm
	PreferredAffinityTerms     []WeightedAffinityTerm
	PreferredAntiAffinityTerms []WeightedAffinityTerm
	// ParseError is set when a term's selector is invalid; such a pod
	// cannot be scheduled.
	ParseError error
	// ControllerUID is the UID of the pod's controller, "" if it has none.
	ControllerUID types.UID
	// labelsKey names the pod's namespace and labels, for MatchMemo.
	labelsKey unique.Handle[string]
}

// NewPodInfo computes a PodInfo.
func NewPodInfo(pod *corev1.Pod) *PodInfo {
	pi := &PodInfo{Pod: pod, Requests: PodRequests(pod, false), NonZeroRequests: PodRequests(pod, true),
		labelsKey: labelsKey(pod)}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		pi.ControllerUID = ref.UID
	}
	if a := pod.Spec.Affinity; a != nil {
		if pa := a.PodAffinity; pa != nil {
			pi.RequiredAffinityTerms = pi.terms(pa.RequiredDuringSchedulingIgnoredDuringExecution)
			pi.PreferredAffinityTerms = pi.weightedTerms(pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
		if paa := a.PodAntiAffinity; paa != nil {
			pi.RequiredAntiAffinityTerms = pi.terms(paa.RequiredDuringSchedulingIgnoredDuringExecution)
			pi.PreferredAntiAffinityTerms = pi.weightedTerms(paa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
	}
	return pi
}

func (pi *PodInfo) terms(in []corev1.PodAffinityTerm) []AffinityTerm {
	out := make([]AffinityTerm, 0, len(in))
	for i := range in {
		t, err := newAffinityTerm(pi.Pod, &in[i])
		if err != nil {
			pi.ParseError = err
			continue
		}
		out = append(out, t)
	}
	return out
}

func (pi *PodInfo) weightedTerms(in []corev1.WeightedPodAffinityTerm) []WeightedAffinityTerm {
	out := make([]WeightedAffinityTerm, 0, len(in))
	for i := range in {
		t, err := newAffinityTerm(pi.Pod, &in[i].PodAffinityTerm)
		if err != nil {
			pi.ParseError = err
			continue
		}
		out = append(out, WeightedAffinityTerm{AffinityTerm: t, Weight: in[i].Weight})
	}
	return out
}

func newAffinityTerm(pod *corev1.Pod, t *corev1.PodAffinityTerm) (AffinityTerm, error) {
	sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
	if err != nil {
		return AffinityTerm{}, err
	}
	// matchLabelKeys / mismatchLabelKeys add the incoming pod's values.
	for _, k := range t.MatchLabelKeys {
		if v, ok := pod.Labels[k]; ok {
			r, err := labels.NewRequirement(k, "in", []string{v})
			if err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	for _, k := range t.MismatchLabelKeys {
		if v, ok := pod.Labels[k]; ok {
			r, err := labels.NewRequirement(k, "notin", []string{v})
			if err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	at := AffinityTerm{Namespaces: sets.New(t.Namespaces...), Selector: sel, TopologyKey: t.TopologyKey}
	if t.NamespaceSelector != nil {
		ns, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector)
		if err != nil {
			return AffinityTerm{}, err
		}
		at.NamespaceSelector = ns
	}
	if len(t.Namespaces) == 0 && t.NamespaceSelector == nil {
		at.Namespaces.Insert(pod.Namespace)
	}
	at.key = termKey(&at, t.LabelSelector == nil)
	return at, nil
}

// ProtocolPort is a host port with its protocol.
type ProtocolPort struct {
	Protocol string
	Port     int32
}

// HostPortInfo is the host ports in use on a node: IP → protocol/port.
type HostPortInfo map[string]sets.Set[ProtocolPort]

const wildcardIP = "0.0.0.0"

func normalizePort(ip, protocol string) (string, string) {
	if ip == "" {
		ip = wildcardIP
	}
	if protocol == "" {
		protocol = string(corev1.ProtocolTCP)
	}
	return ip, protocol
}

// Add records a port as used.
func (h HostPortInfo) Add(ip, protocol string, port int32) {
	if port <= 0 {
		return
	}
	ip, protocol = normalizePort(ip, protocol)
	if h[ip] == nil {
		h[ip] = sets.New[ProtocolPort]()
	}
	h[ip].Insert(ProtocolPort{protocol, port})
}

// Remove forgets a used port.
func (h HostPortInfo) Remove(ip, protocol string, port int32) {
	if port <= 0 {
		return
	}
	ip, protocol = normalizePort(ip, protocol)
	if s := h[ip]; s != nil {
		s.Delete(ProtocolPort{protocol, port})
		if s.Len() == 0 {
			delete(h, ip)
		}
	}
}

// CheckConflict reports whether the port is taken: the same protocol and
// port on the same IP, or on any IP if either side is 0.0.0.0.
func (h HostPortInfo) CheckConflict(ip, protocol string, port int32) bool {
	if port <= 0 {
		return false
	}
	ip, protocol = normalizePort(ip, protocol)
	pp := ProtocolPort{protocol, port}
	if ip == wildcardIP {
		for _, s := range h {
			if s.Has(pp) {
				return true
			}
		}
		return false
	}
	return h[ip].Has(pp) || h[wildcardIP].Has(pp)
}

// clone is nil for no ports (most nodes): NodeInfo.update makes the map
// when a port comes.
func (h HostPortInfo) clone() HostPortInfo {
	if len(h) == 0 {
		return nil
	}
	c := make(HostPortInfo, len(h))
	for ip, s := range h {
		c[ip] = s.Clone()
	}
	return c
}

// ImageStateSummary is what ImageLocality needs about an image on a node.
type ImageStateSummary struct {
	Size     int64 // bytes
	NumNodes int   // nodes that have the image
}
