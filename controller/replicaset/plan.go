// Package replicaset keeps spec.replicas pods of a ReplicaSet or a
// ReplicationController running:
//
//	rs/pod event ─▶ queue(rs key) ─▶ expectations met?
//	   ─▶ Plan(workload, its pods and the namespace's orphans, now) ─▶ actions:
//	      AdoptPod / ReleasePod, CreatePods N or DeletePods (ranked), UpdateStatus
//	   ─▶ framework.ExecuteAll(apiSink): patch ownerReferences, create in slow-start
//	      batches, delete, then the status: replicas, fullyLabeled, ready, available,
//	      observedGeneration, condition ReplicaFailure (FailedCreate/FailedDelete)
//	      while creates or deletes fail
package replicaset

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"minik/controller/framework"
)

// BurstReplicas caps the pods created or deleted in one sync, as in
// Kubernetes.
const BurstReplicas = 500

// Workload is what the step needs from a ReplicaSet or a
// ReplicationController.
type Workload struct {
	Meta            metav1.Object
	Replicas        int32
	Selector        labels.Selector
	TemplateLabels  map[string]string
	MinReadySeconds int32
	Generation      int64
	// ReplicaFailure is the object's ReplicaFailure condition, if True.
	ReplicaFailure *ReplicaFailure
}

// ReplicaFailure is the condition ReplicaFailure=True both kinds share:
// pods could not be created or deleted.
type ReplicaFailure struct {
	// Reason is FailedCreate or FailedDelete.
	Reason, Message    string
	LastTransitionTime metav1.Time
}

// Condition reasons of ReplicaFailure, as in Kubernetes.
const (
	ReasonFailedCreate = "FailedCreate"
	ReasonFailedDelete = "FailedDelete"
)

// ReplicaFailureAfter returns the ReplicaFailure condition after a sync
// whose pod creations or deletions failed with manageErr (nil when they
// succeeded or none were needed), diff being the active pods minus
// spec.replicas before it. As in Kubernetes, the first failure sets the
// condition with the error's message, and it stays as it was through
// more failures; a sync without failure clears it.
func ReplicaFailureAfter(current *ReplicaFailure, manageErr error, diff int, now time.Time) *ReplicaFailure {
	switch {
	case manageErr == nil:
		return nil
	case current != nil:
		return current
	}
	reason := ""
	if diff < 0 {
		reason = ReasonFailedCreate
	} else if diff > 0 {
		reason = ReasonFailedDelete
	}
	return &ReplicaFailure{Reason: reason, Message: manageErr.Error(), LastTransitionTime: metav1.NewTime(now)}
}

// Status is the status the step computes (the fields both kinds share).
type Status struct {
	Replicas             int32
	FullyLabeledReplicas int32
	ReadyReplicas        int32
	AvailableReplicas    int32
	ObservedGeneration   int64
	// ReplicaFailure is the ReplicaFailure condition, nil when absent.
	ReplicaFailure *ReplicaFailure
}

// ActionType says what an Action does.
type ActionType string

const (
	// AdoptPod makes the workload Pod's controller.
	AdoptPod ActionType = "AdoptPod"
	// ReleasePod removes the workload from Pod's owners.
	ReleasePod ActionType = "ReleasePod"
	// CreatePods creates Count pods, in slow-start batches.
	CreatePods ActionType = "CreatePods"
	// DeletePods deletes Pods.
	DeletePods ActionType = "DeletePods"
	// UpdateStatus writes Status, with the ReplicaFailure condition this
	// sync's creates or deletes leave (ReplicaFailureAfter), if that
	// changes the object's status.
	UpdateStatus ActionType = "UpdateStatus"
)

// Action is one write of a sync.
type Action struct {
	Type ActionType
	// Pod is the pod to adopt or release.
	Pod *corev1.Pod
	// Count is the number of pods to create.
	Count int
	// Pods are the pods to delete, best candidates first.
	Pods []*corev1.Pod
	// Status is the status to write; its ReplicaFailure is the object's
	// before the sync.
	Status Status
	// Diff is the active pods minus spec.replicas before the sync: the
	// reason of a ReplicaFailure this sync sets.
	Diff int
}

// String names the action by its type and target, for errors and tests.
func (a Action) String() string {
	switch a.Type {
	case AdoptPod, ReleasePod:
		return fmt.Sprintf("%s %s", a.Type, a.Pod.Name)
	case CreatePods:
		return fmt.Sprintf("%s %d", a.Type, a.Count)
	case DeletePods:
		names := make([]string, len(a.Pods))
		for i, p := range a.Pods {
			names[i] = p.Name
		}
		return fmt.Sprintf("%s %s", a.Type, strings.Join(names, ","))
	}
	return fmt.Sprintf("%s replicas=%d ready=%d", a.Type, a.Status.Replicas, a.Status.ReadyReplicas)
}

// Output is the plan of one sync: adoptions and releases, then creates
// or deletes, then the status; RequeueAfter is when a ready pod becomes
// available (minReadySeconds).
type Output = framework.Output[Action]

// Plan compares w with pods (its own pods and the orphans of its
// namespace, which it may adopt) at now.
// With unsatisfied expectations it only claims pods and computes status:
// its pod count may be stale, so it must not create or delete. The
// status is always planned: whether it changes depends on the outcome of
// the creates or deletes.
func Plan(w Workload, pods []*corev1.Pod, expectationsSatisfied bool, now time.Time) Output {
	claim := framework.ClaimPods(w.Meta, w.Selector, pods)
	var active []*corev1.Pod
	for _, p := range claim.Owned {
		if framework.IsPodActive(p) {
			active = append(active, p)
		}
	}
	var out Output
	for _, p := range claim.Adopt {
		out.Actions = append(out.Actions, Action{Type: AdoptPod, Pod: p})
	}
	for _, p := range claim.Release {
		out.Actions = append(out.Actions, Action{Type: ReleasePod, Pod: p})
	}
	diff := len(active) - int(w.Replicas)
	if expectationsSatisfied && w.Meta.GetDeletionTimestamp() == nil {
		switch {
		case diff < 0:
			out.Actions = append(out.Actions, Action{Type: CreatePods, Count: min(-diff, BurstReplicas)})
		case diff > 0:
			out.Actions = append(out.Actions, Action{Type: DeletePods, Pods: podsToDelete(active, pods, min(diff, BurstReplicas))})
		}
	}
	out.Actions = append(out.Actions, Action{Type: UpdateStatus, Status: status(w, active, now), Diff: diff})
	out.RequeueAfter = framework.NextAvailableIn(active, w.MinReadySeconds, now)
	return out
}

// podsToDelete ranks active by DeletionLess, where a pod's rank is the
// number of active pods in related (Plan's pods: its own and the
// orphans) on the same node.
func podsToDelete(active, related []*corev1.Pod, n int) []*corev1.Pod {
	onNode := map[string]int{}
	for _, p := range related {
		if framework.IsPodActive(p) {
			onNode[p.Spec.NodeName]++
		}
	}
	sorted := append([]*corev1.Pod(nil), active...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		return framework.DeletionLess(a, b, onNode[a.Spec.NodeName], onNode[b.Spec.NodeName])
	})
	return sorted[:n]
}

func status(w Workload, active []*corev1.Pod, now time.Time) Status {
	st := Status{Replicas: int32(len(active)), ObservedGeneration: w.Generation, ReplicaFailure: w.ReplicaFailure}
	tmpl := labels.SelectorFromSet(w.TemplateLabels)
	for _, p := range active {
		if tmpl.Matches(labels.Set(p.Labels)) {
			st.FullyLabeledReplicas++
		}
		if framework.IsPodReady(p) {
			st.ReadyReplicas++
			if framework.IsPodAvailable(p, w.MinReadySeconds, now) {
				st.AvailableReplicas++
			}
		}
	}
	return st
}

// SlowStartBatches splits n creations into batches of first, 2·first,
// 4·first, ...: a failing create (quota, admission) then fails once, not n
// times. Kubernetes always starts at 1; the driver starts where the last
// fully successful sync of the same object left off, so that a large
// scale-up is not throttled by round trips once creates are known to work.
func SlowStartBatches(n, first int) []int {
	var out []int
	for size := max(first, 1); n > 0; size *= 2 {
		b := min(size, n)
		out = append(out, b)
		n -= b
	}
	return out
}
