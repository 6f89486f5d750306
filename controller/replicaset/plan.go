// Package replicaset keeps spec.replicas pods of a ReplicaSet or a
// ReplicationController running:
//
//	rs/pod event ─▶ queue(rs key) ─▶ expectations met?
//	   ─▶ Plan(workload, pods in namespace, now): adopt, release, create N, delete ranked
//	   ─▶ driver: patch ownerReferences, create in slow-start batches, delete
//	   ─▶ status: replicas, fullyLabeled, ready, available, observedGeneration,
//	      condition ReplicaFailure (FailedCreate/FailedDelete) while creates or deletes fail
package replicaset

import (
	"sort"
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

// Output is what one sync should do.
type Output struct {
	Adopt, Release []*corev1.Pod
	// Create is the number of pods to create.
	Create int
	// Delete are the pods to delete, best candidates first.
	Delete []*corev1.Pod
	Status Status
	// RequeueAfter is when a ready pod becomes available (minReadySeconds).
	RequeueAfter time.Duration
	// Diff is the active pods minus spec.replicas, before the plan.
	Diff int
}

// Plan compares w with pods (every pod of its namespace) at now.
// With unsatisfied expectations it only claims pods and computes status:
// its pod count may be stale, so it must not create or delete.
func Plan(w Workload, pods []*corev1.Pod, expectationsSatisfied bool, now time.Time) Output {
	claim := framework.ClaimPods(w.Meta, w.Selector, pods)
	var active []*corev1.Pod
	for _, p := range claim.Owned {
		if framework.IsPodActive(p) {
			active = append(active, p)
		}
	}
	plan := Output{Adopt: claim.Adopt, Release: claim.Release, Diff: len(active) - int(w.Replicas)}
	if expectationsSatisfied && w.Meta.GetDeletionTimestamp() == nil {
		diff := len(active) - int(w.Replicas)
		switch {
		case diff < 0:
			plan.Create = min(-diff, BurstReplicas)
		case diff > 0:
			plan.Delete = podsToDelete(active, pods, min(diff, BurstReplicas))
		}
	}
	plan.Status = status(w, active, now)
	plan.RequeueAfter = framework.NextAvailableIn(active, w.MinReadySeconds, now)
	return plan
}

// podsToDelete ranks active by DeletionLess, where a pod's rank is the
// number of active pods in related (the namespace) on the same node.
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
