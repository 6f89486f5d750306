// Package garbagecollector deletes objects whose owners are gone, and
// carries out the propagation policy of a delete:
//
//	background  owner deleted at once ─▶ its dependents are dangling ─▶ deleted
//	foreground  owner keeps finalizer foregroundDeletion ─▶ dependents deleted
//	            ─▶ once no dependent with blockOwnerDeletion is left ─▶ finalizer removed
//	orphan      owner keeps finalizer orphan ─▶ ownerReferences to it removed
//	            from its dependents ─▶ finalizer removed
//
// Each object is judged by Plan, a pure function of the object, the state
// of each of its owners and its dependents; the controller performs the
// actions through a framework.Sink (apiSink: the API calls), in order.
package garbagecollector

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/controller/framework"
)

// OwnerState is what the collector knows of one owner of an object.
type OwnerState int

const (
	// OwnerSolid exists and is not waiting for its dependents.
	OwnerSolid OwnerState = iota
	// OwnerDangling no longer exists (or a different object has its name).
	OwnerDangling
	// OwnerWaiting is being deleted in the foreground.
	OwnerWaiting
)

// ActionType says what an Action does.
type ActionType string

const (
	// RemoveOwnerRefs removes ownerReferences (by owner UID) from Target.
	RemoveOwnerRefs ActionType = "RemoveOwnerRefs"
	// UnblockOwnerRefs sets blockOwnerDeletion=false on the references to
	// the given owners, so that an owner waiting in the foreground is not
	// blocked by a dependent that itself waits for its own dependents.
	UnblockOwnerRefs ActionType = "UnblockOwnerRefs"
	// RemoveFinalizer removes Finalizer from Target.
	RemoveFinalizer ActionType = "RemoveFinalizer"
	// Delete deletes Target with Policy (and its UID as precondition).
	Delete ActionType = "Delete"
	// Enqueue asks for Target to be looked at (dependents of a
	// foreground deletion).
	Enqueue ActionType = "Enqueue"
)

// Action is one step for the driver.
type Action struct {
	Type      ActionType
	Target    metav1.Object
	OwnerUIDs []types.UID
	Finalizer string
	Policy    metav1.DeletionPropagation
}

// String names the action and its target, as "Delete default/web-1".
func (a Action) String() string {
	return string(a.Type) + " " + a.Target.GetNamespace() + "/" + a.Target.GetName()
}

// Output is what to do about one object.
type Output = framework.Output[Action]

// Item is an object with what the collector found about it.
type Item struct {
	Object metav1.Object
	// Owners has the state of each ownerReference of Object, by UID.
	Owners map[types.UID]OwnerState
	// Dependents are the objects naming Object as an owner.
	Dependents []metav1.Object
}

// Plan returns what to do about item, in order. It never asks to look
// again later: the informers' events bring every change.
func Plan(item Item) Output {
	return Output{Actions: plan(item)}
}

func plan(item Item) []Action {
	obj := item.Object
	if obj.GetDeletionTimestamp() != nil {
		return planDeleting(item)
	}
	refs := obj.GetOwnerReferences()
	if len(refs) == 0 {
		return nil
	}
	var solid, dangling, waiting []types.UID
	for _, r := range refs {
		switch item.Owners[r.UID] {
		case OwnerSolid:
			solid = append(solid, r.UID)
		case OwnerDangling:
			dangling = append(dangling, r.UID)
		case OwnerWaiting:
			waiting = append(waiting, r.UID)
		}
	}
	switch {
	case len(dangling) == 0 && len(waiting) == 0:
		return nil
	case len(solid) > 0:
		// Still owned: just forget the owners that are going.
		return []Action{{Type: RemoveOwnerRefs, Target: obj, OwnerUIDs: append(dangling, waiting...)}}
	}
	policy := metav1.DeletePropagationBackground
	switch {
	case slices.Contains(obj.GetFinalizers(), metav1.FinalizerOrphanDependents):
		policy = metav1.DeletePropagationOrphan
	case slices.Contains(obj.GetFinalizers(), metav1.FinalizerDeleteDependents):
		policy = metav1.DeletePropagationForeground
	}
	var out []Action
	if len(waiting) > 0 && len(item.Dependents) > 0 {
		// An owner waits for us, and we have dependents of our own: delete
		// in the foreground too, so the owner waits for the whole subtree.
		// Only if one of our dependents itself waits for its dependents
		// (maybe a cycle back to our owner) do we stop blocking the owner,
		// as Kubernetes does.
		if slices.ContainsFunc(item.Dependents, deletingDependents) {
			var blocked []types.UID
			for _, r := range refs {
				if item.Owners[r.UID] == OwnerWaiting && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
					blocked = append(blocked, r.UID)
				}
			}
			if len(blocked) > 0 {
				out = append(out, Action{Type: UnblockOwnerRefs, Target: obj, OwnerUIDs: blocked})
			}
		}
		policy = metav1.DeletePropagationForeground
	}
	return append(out, Action{Type: Delete, Target: obj, Policy: policy})
}

// planDeleting handles an object that is being deleted with a GC finalizer.
func planDeleting(item Item) []Action {
	obj := item.Object
	fins := obj.GetFinalizers()
	var out []Action
	switch {
	case slices.Contains(fins, metav1.FinalizerOrphanDependents):
		for _, d := range item.Dependents {
			out = append(out, Action{Type: RemoveOwnerRefs, Target: d, OwnerUIDs: []types.UID{obj.GetUID()}})
		}
		out = append(out, Action{Type: RemoveFinalizer, Target: obj, Finalizer: metav1.FinalizerOrphanDependents})
	case slices.Contains(fins, metav1.FinalizerDeleteDependents):
		blocking := 0
		for _, d := range item.Dependents {
			if d.GetDeletionTimestamp() == nil {
				out = append(out, Action{Type: Enqueue, Target: d})
			}
			if blocks(d, obj.GetUID()) {
				blocking++
			}
		}
		if blocking == 0 {
			out = append(out, Action{Type: RemoveFinalizer, Target: obj, Finalizer: metav1.FinalizerDeleteDependents})
		}
	}
	return out
}

// deletingDependents reports whether obj is being deleted in the foreground.
func deletingDependents(obj metav1.Object) bool {
	return obj.GetDeletionTimestamp() != nil && slices.Contains(obj.GetFinalizers(), metav1.FinalizerDeleteDependents)
}

// blocks reports whether dep's reference to owner has blockOwnerDeletion.
func blocks(dep metav1.Object, owner types.UID) bool {
	for _, r := range dep.GetOwnerReferences() {
		if r.UID == owner {
			return r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion
		}
	}
	return false
}
