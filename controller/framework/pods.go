package framework

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"minik/client/informer"
)

// PodDeletionCostAnnotation lets users say which pods of a ReplicaSet go
// first on scale-down: lower cost first.
const PodDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// IsPodActive reports whether pod still counts towards its controller's
// replicas: not finished and not being deleted.
func IsPodActive(pod *corev1.Pod) bool {
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed && pod.DeletionTimestamp == nil
}

// IsPodTerminal reports whether pod has finished.
func IsPodTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// PodReadyCondition returns pod's Ready condition, or nil.
func PodReadyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// IsPodReady reports whether pod's Ready condition is True.
func IsPodReady(pod *corev1.Pod) bool {
	c := PodReadyCondition(pod)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsPodAvailable reports whether pod has been ready for at least
// minReadySeconds at now.
func IsPodAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := PodReadyCondition(pod)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	return !c.LastTransitionTime.IsZero() && c.LastTransitionTime.Add(time.Duration(minReadySeconds)*time.Second).Before(now)
}

// NextAvailableIn returns how long until a ready but not yet available pod
// becomes available; 0 if none is waiting.
func NextAvailableIn(pods []*corev1.Pod, minReadySeconds int32, now time.Time) time.Duration {
	if minReadySeconds == 0 {
		return 0
	}
	var next time.Duration
	for _, p := range pods {
		c := PodReadyCondition(p)
		if c == nil || c.Status != corev1.ConditionTrue || IsPodAvailable(p, minReadySeconds, now) {
			continue
		}
		d := c.LastTransitionTime.Add(time.Duration(minReadySeconds)*time.Second).Sub(now) + time.Second
		if next == 0 || d < next {
			next = d
		}
	}
	return next
}

// Claim is the outcome of ClaimPods.
type Claim struct {
	// Owned are the pods the controller now owns (including adopted ones).
	Owned []*corev1.Pod
	// Adopt are orphans to give an ownerReference to the controller.
	Adopt []*corev1.Pod
	// Release are owned pods whose labels no longer match.
	Release []*corev1.Pod
}

// ClaimPods decides, as Kubernetes' ControllerRefManager does, which of
// pods (all in the owner's namespace) owner controls: its own pods that
// still match sel; orphans that match (adopted, unless owner is being
// deleted or the pod is); its own pods that stopped matching are released.
func ClaimPods(owner metav1.Object, sel labels.Selector, pods []*corev1.Pod) Claim {
	owned, adopt, release := ClaimObjects(owner, sel, pods)
	return Claim{Owned: owned, Adopt: adopt, Release: release}
}

// ClaimObjects is ClaimPods for any kind of dependent.
func ClaimObjects[T any, PT interface {
	*T
	metav1.Object
}](owner metav1.Object, sel labels.Selector, objs []PT) (owned, adopt, release []PT) {
	deleting := owner.GetDeletionTimestamp() != nil
	for _, o := range objs {
		matches := sel.Matches(labels.Set(o.GetLabels()))
		ref := metav1.GetControllerOfNoCopy(o)
		switch {
		case ref != nil && ref.UID != owner.GetUID():
			// Someone else's.
		case ref != nil && matches:
			owned = append(owned, o)
		case ref != nil:
			if !deleting && o.GetDeletionTimestamp() == nil {
				release = append(release, o)
			}
		case matches && !deleting && o.GetDeletionTimestamp() == nil:
			adopt = append(adopt, o)
			owned = append(owned, o)
		}
	}
	return owned, adopt, release
}

// podPhaseOrdinal orders phases for deletion: pending pods go first.
var podPhaseOrdinal = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

func deletionCost(p *corev1.Pod) int64 {
	v, err := strconv.ParseInt(p.Annotations[PodDeletionCostAnnotation], 10, 32)
	if err != nil {
		return 0
	}
	return v
}

func restarts(p *corev1.Pod) int32 {
	var max int32
	for _, cs := range p.Status.ContainerStatuses {
		if cs.RestartCount > max {
			max = cs.RestartCount
		}
	}
	return max
}

// DeletionLess reports whether pod a should be deleted before pod b on
// scale-down, as Kubernetes ranks them: unscheduled before scheduled;
// Pending before Unknown before Running; not ready before ready; lower
// pod-deletion-cost first; more sibling pods on the same node first
// (rankA, rankB); ready for less time first; more restarts first; newer
// first; then by UID.
func DeletionLess(a, b *corev1.Pod, rankA, rankB int) bool {
	if a.Spec.NodeName != b.Spec.NodeName && (a.Spec.NodeName == "" || b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if pa, pb := podPhaseOrdinal[a.Status.Phase], podPhaseOrdinal[b.Status.Phase]; pa != pb {
		return pa < pb
	}
	if ra, rb := IsPodReady(a), IsPodReady(b); ra != rb {
		return !ra
	}
	if ca, cb := deletionCost(a), deletionCost(b); ca != cb {
		return ca < cb
	}
	if rankA != rankB {
		return rankA > rankB
	}
	if IsPodReady(a) && IsPodReady(b) {
		ta, tb := PodReadyCondition(a).LastTransitionTime, PodReadyCondition(b).LastTransitionTime
		if !ta.Equal(&tb) {
			return tb.Before(&ta) // later transition = ready for less time
		}
	}
	if ra, rb := restarts(a), restarts(b); ra != rb {
		return ra > rb
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.UID < b.UID
}

// ControllerRef returns an ownerReference making owner the controller.
func ControllerRef(owner metav1.Object, apiVersion, kind string) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: owner.GetName(), UID: owner.GetUID(),
		Controller: &t, BlockOwnerDeletion: &t}
}

// OwnerKey returns the key of the controller that owns p, if that
// controller is of the given kind.
func OwnerKey(p *corev1.Pod, kind string) (string, bool) {
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil || ref.Kind != kind {
		return "", false
	}
	return informer.Key(p.Namespace, ref.Name), true
}

// OwnedPodHandler queues the owner (of the given kind) of every pod that
// changes, and tells the expectations about creations and deletions, so a
// controller waits for its own writes before acting again. It is
// ClaimingPodHandler for a controller that never adopts.
func OwnedPodHandler(kind string, queue *Queue, expect *Expectations) informer.Handler[corev1.Pod] {
	return ClaimingPodHandler(func(p *corev1.Pod) (string, bool) { return OwnerKey(p, kind) },
		func(*corev1.Pod) []string { return nil }, queue, expect)
}
