package quota

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"

	"minik/internal/volumeutil"
)

// legacyCounts are the object counts quotas name without "count/"
// (core resources only).
var legacyCounts = sets.New("pods", "services", "configmaps", "secrets", "replicationcontrollers",
	"resourcequotas", "persistentvolumeclaims")

// CountName is the object-count resource of a resource: count/pods,
// count/deployments.apps.
func CountName(resource, group string) corev1.ResourceName {
	if group == "" {
		return corev1.ResourceName("count/" + resource)
	}
	return corev1.ResourceName("count/" + resource + "." + group)
}

// ParseCountName splits count/<resource>[.<group>] or a legacy count
// name; ok is false for other names.
func ParseCountName(name corev1.ResourceName) (resource, group string, ok bool) {
	s := string(name)
	if legacyCounts.Has(s) {
		return s, "", true
	}
	rest, found := strings.CutPrefix(s, "count/")
	if !found || rest == "" {
		return "", "", false
	}
	resource, group, _ = strings.Cut(rest, ".")
	return resource, group, true
}

// Usage is what one stored object of resource.group counts against
// quotas at now: its object count (count/<resource>, and the legacy name
// of core kinds); for a pod that has not ended, pods and its compute
// requests and limits (upstream's pod evaluator); for a Service, its load
// balancers and node ports; for a claim, its storage (claimUsage). Of
// every other kind only the count: CountsOnly.
func Usage(res, group string, obj runtime.Object, now time.Time) corev1.ResourceList {
	out := corev1.ResourceList{CountName(res, group): one.DeepCopy()}
	if group == "" && legacyCounts.Has(res) && res != "pods" {
		out[corev1.ResourceName(res)] = one.DeepCopy()
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		if PodCounts(o, now) {
			Add(out, podComputeUsage(PodRequests(o), PodLimits(o)))
		}
	case *corev1.Service:
		if o.Spec.Type == corev1.ServiceTypeLoadBalancer {
			out[corev1.ResourceServicesLoadBalancers] = one.DeepCopy()
		}
		if o.Spec.Type == corev1.ServiceTypeLoadBalancer || o.Spec.Type == corev1.ServiceTypeNodePort {
			ports := len(o.Spec.Ports)
			if o.Spec.Type == corev1.ServiceTypeLoadBalancer && o.Spec.AllocateLoadBalancerNodePorts != nil && !*o.Spec.AllocateLoadBalancerNodePorts {
				ports = 0 // only the node ports asked for by number
				for _, p := range o.Spec.Ports {
					if p.NodePort != 0 {
						ports++
					}
				}
			}
			out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(int64(ports), resource.DecimalSI)
		}
	case *corev1.PersistentVolumeClaim:
		Add(out, claimUsage(o))
	}
	return out
}

// CountsOnly reports whether an object of resource.group uses nothing
// but its object count, so that its metadata is all Usage needs: every
// kind but pods, Services and claims.
func CountsOnly(resource, group string) bool {
	return group != "" || resource != "pods" && resource != "services" && resource != "persistentvolumeclaims"
}

// storageClassSuffix qualifies a claim's names by storage class:
// gold.storageclass.storage.k8s.io/requests.storage.
const storageClassSuffix = ".storageclass.storage.k8s.io/"

// storageClassResource is name (persistentvolumeclaims or
// requests.storage) counted for the claims of one storage class only.
func storageClassResource(class string, name corev1.ResourceName) corev1.ResourceName {
	return corev1.ResourceName(class + storageClassSuffix + string(name))
}

// claimUsage is upstream's PVC evaluator: requests.storage, and both it
// and the claim count again under the claim's storage class. The storage
// is the request, or the allocation when that is larger (a resize that
// failed may be lowered; the volume keeps what was allocated), in whole
// bytes.
func claimUsage(pvc *corev1.PersistentVolumeClaim) corev1.ResourceList {
	out := corev1.ResourceList{}
	class := volumeutil.ClaimClass(pvc)
	if class != "" {
		out[storageClassResource(class, corev1.ResourcePersistentVolumeClaims)] = one.DeepCopy()
	}
	request, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return out
	}
	storage := request.DeepCopy()
	if allocated, ok := pvc.Status.AllocatedResources[corev1.ResourceStorage]; ok && allocated.Cmp(storage) > 0 {
		storage = allocated.DeepCopy()
	}
	storage.RoundUp(0)
	out[corev1.ResourceRequestsStorage] = storage
	if class != "" {
		out[storageClassResource(class, corev1.ResourceRequestsStorage)] = storage.DeepCopy()
	}
	return out
}

// isClaimResource reports whether the claim evaluator answers for name
// (besides the object counts).
func isClaimResource(name corev1.ResourceName) bool {
	if name == corev1.ResourceRequestsStorage {
		return true
	}
	s := string(name)
	return strings.HasSuffix(s, storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims)) ||
		strings.HasSuffix(s, storageClassSuffix+string(corev1.ResourceRequestsStorage))
}

// PodCounts reports whether a pod's compute resources count: not once it
// has ended, nor once its deletion's grace period has passed (a pod stuck
// terminating on a lost node must not block its replacement).
func PodCounts(pod *corev1.Pod, now time.Time) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		end := pod.DeletionTimestamp.Add(time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second)
		if now.After(end) {
			return false
		}
	}
	return true
}

func podComputeUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: one.DeepCopy()}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if q, ok := requests[r]; ok {
			out[r] = q.DeepCopy()
			out[corev1.DefaultResourceRequestsPrefix+r] = q.DeepCopy()
		}
		if q, ok := limits[r]; ok {
			out[corev1.ResourceName("limits.")+r] = q.DeepCopy()
		}
	}
	for r, q := range requests {
		switch {
		case strings.HasPrefix(string(r), corev1.ResourceHugePagesPrefix):
			out[r] = q.DeepCopy()
			out[corev1.DefaultResourceRequestsPrefix+r] = q.DeepCopy()
		case strings.Contains(string(r), "/") && !strings.Contains(string(r), "kubernetes.io/"):
			out[corev1.DefaultResourceRequestsPrefix+r] = q.DeepCopy()
		}
	}
	return out
}

// isPodResource reports whether the pod evaluator answers for name
// (besides the object counts): the compute names, hugepages, and the
// requests of extended resources (requests.example.com/gpu; a name
// without a domain, such as requests.storage, is not one).
func isPodResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourcePods, corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
		corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
		corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage:
		return true
	}
	s := string(name)
	if strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(s, corev1.ResourceRequestsHugePagesPrefix) {
		return true
	}
	return strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) && strings.Contains(s, "/") && !strings.Contains(s, "kubernetes.io/")
}

// CountedBy returns the resource whose objects count toward the quota
// name, as each of upstream's evaluators claims its names: an object
// count (count/deployments.apps, or a legacy one such as configmaps) its
// own resource; the compute names, pods; services.loadbalancers and
// services.nodeports, services; requests.storage and the names of one
// storage class, persistentvolumeclaims. ok is false for a name no
// object counts toward.
func CountedBy(name corev1.ResourceName) (resource, group string, ok bool) {
	if r, g, isCount := ParseCountName(name); isCount {
		return r, g, true
	}
	switch {
	case isPodResource(name):
		return "pods", "", true
	case name == corev1.ResourceServicesLoadBalancers || name == corev1.ResourceServicesNodePorts:
		return "services", "", true
	case isClaimResource(name):
		return "persistentvolumeclaims", "", true
	}
	return "", "", false
}

// Matching returns the names of hard that an object of resource.group
// can count against: those CountedBy gives to resource.group.
func Matching(resource, group string, hard []corev1.ResourceName) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, name := range hard {
		if r, g, ok := CountedBy(name); ok && r == resource && g == group {
			out = append(out, name)
		}
	}
	return out
}

// MatchesScopes reports whether a quota covers obj: a quota with scopes
// (or a scope selector) covers only pods that match every one.
func MatchesScopes(q *corev1.ResourceQuota, obj runtime.Object) bool {
	scopes := q.Spec.Scopes
	var exprs []corev1.ScopedResourceSelectorRequirement
	if q.Spec.ScopeSelector != nil {
		exprs = q.Spec.ScopeSelector.MatchExpressions
	}
	if len(scopes) == 0 && len(exprs) == 0 {
		return true
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return false
	}
	for _, s := range scopes {
		if !podMatchesScope(pod, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists}) {
			return false
		}
	}
	for _, e := range exprs {
		if !podMatchesScope(pod, e) {
			return false
		}
	}
	return true
}

func podMatchesScope(pod *corev1.Pod, e corev1.ScopedResourceSelectorRequirement) bool {
	terminating := pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
	bestEffort := isBestEffort(pod)
	switch e.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return terminating
	case corev1.ResourceQuotaScopeNotTerminating:
		return !terminating
	case corev1.ResourceQuotaScopeBestEffort:
		return bestEffort
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !bestEffort
	case corev1.ResourceQuotaScopePriorityClass:
		has := sets.New(e.Values...).Has(pod.Spec.PriorityClassName)
		switch e.Operator {
		case corev1.ScopeSelectorOpIn:
			return has
		case corev1.ScopeSelectorOpNotIn:
			return !has
		case corev1.ScopeSelectorOpExists:
			return true
		case corev1.ScopeSelectorOpDoesNotExist:
			return false
		}
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return usesCrossNamespaceAffinity(pod)
	}
	return false
}

func isBestEffort(pod *corev1.Pod) bool {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, l := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				for name := range l {
					if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
						return false
					}
				}
			}
		}
	}
	return true
}

func usesCrossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	var terms []corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	for _, t := range terms {
		if len(t.Namespaces) > 0 || t.NamespaceSelector != nil {
			return true
		}
	}
	return false
}

// containerRequired are the names for which a quota requires every
// container to say how much it needs.
var containerRequired = sets.New[corev1.ResourceName](corev1.ResourceCPU, corev1.ResourceMemory,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory)

// podConstraints is upstream's rule that a quota on cpu or memory needs
// every container to name them: "must specify limits.cpu for: app".
func podConstraints(pod *corev1.Pod, restricted []corev1.ResourceName) error {
	required := sets.New(restricted...).Intersection(containerRequired)
	if required.Len() == 0 {
		return nil
	}
	missing := map[corev1.ResourceName]sets.Set[string]{}
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range list {
			have := podComputeUsage(c.Resources.Requests, c.Resources.Limits)
			for r := range required {
				if _, ok := have[r]; !ok {
					if missing[r] == nil {
						missing[r] = sets.New[string]()
					}
					missing[r].Insert(c.Name)
				}
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var parts []string
	for _, r := range sortedKeys(missing) {
		parts = append(parts, fmt.Sprintf("%s for: %s", r, strings.Join(sets.List(missing[r]), ",")))
	}
	return fmt.Errorf("must specify %s", strings.Join(parts, "; "))
}

func sortedKeys[V any](m map[corev1.ResourceName]V) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Names returns the names of a list, sorted.
func Names(list corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(list))
	for k := range list {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// String prints a list as upstream's quota messages do: "pods=1,requests.cpu=500m".
func String(list corev1.ResourceList) string {
	parts := make([]string, 0, len(list))
	for _, k := range Names(list) {
		q := list[k]
		parts = append(parts, string(k)+"="+q.String())
	}
	return strings.Join(parts, ",")
}
