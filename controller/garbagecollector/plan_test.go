package garbagecollector

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/controller/internal/testutil"
)

func owned(name string, block bool, owners ...types.UID) *corev1.Pod {
	p := testutil.Pod(name).Obj()
	for _, u := range owners {
		b := block
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: string(u), UID: u, BlockOwnerDeletion: &b})
	}
	return p
}

func deleting(p *corev1.Pod, finalizers ...string) *corev1.Pod {
	t := metav1.NewTime(testutil.T0)
	p.DeletionTimestamp = &t
	p.Finalizers = finalizers
	return p
}

func summary(actions []Action) []string {
	var out []string
	for _, a := range actions {
		s := string(a.Type) + " " + a.Target.GetName()
		if a.Policy != "" {
			s += " " + string(a.Policy)
		}
		if a.Finalizer != "" {
			s += " " + a.Finalizer
		}
		for _, u := range a.OwnerUIDs {
			s += " " + string(u)
		}
		out = append(out, s)
	}
	return out
}

func TestPlan(t *testing.T) {
	cases := []struct {
		name string
		item Item
		want []string
	}{
		{"an object whose owners all exist is left alone",
			Item{Object: owned("p", true, "a"), Owners: map[types.UID]OwnerState{"a": OwnerSolid}}, nil},
		{"an object whose only owner is gone is deleted in the background",
			Item{Object: owned("p", true, "a"), Owners: map[types.UID]OwnerState{"a": OwnerDangling}}, []string{"Delete p Background"}},
		{"an object with one owner left only loses the reference to the gone one",
			Item{Object: owned("p", true, "a", "b"), Owners: map[types.UID]OwnerState{"a": OwnerDangling, "b": OwnerSolid}}, []string{"RemoveOwnerRefs p a"}},
		{"a leaf whose owner deletes in the foreground is deleted in the background",
			Item{Object: owned("p", true, "a"), Owners: map[types.UID]OwnerState{"a": OwnerWaiting}}, []string{"Delete p Background"}},
		{"a dependent with dependents of its own, whose owner waits, deletes in the foreground and keeps blocking the owner",
			Item{Object: owned("rs", true, "d"), Owners: map[types.UID]OwnerState{"d": OwnerWaiting}, Dependents: []metav1.Object{owned("p", true, "uid-rs")}},
			[]string{"Delete rs Foreground"}},
		{"a dependent whose own dependent also waits for its dependents unblocks its owner (a possible cycle) and deletes in the foreground",
			Item{Object: owned("rs", true, "d"), Owners: map[types.UID]OwnerState{"d": OwnerWaiting},
				Dependents: []metav1.Object{deleting(owned("p", true, "uid-rs"), metav1.FinalizerDeleteDependents)}},
			[]string{"UnblockOwnerRefs rs d", "Delete rs Foreground"}},
		{"an owner deleted with orphan frees its dependents, then drops the finalizer",
			Item{Object: deleting(testutil.Pod("rs").Obj(), metav1.FinalizerOrphanDependents), Dependents: []metav1.Object{owned("p1", true, "uid-rs"), owned("p2", true, "uid-rs")}},
			[]string{"RemoveOwnerRefs p1 uid-rs", "RemoveOwnerRefs p2 uid-rs", "RemoveFinalizer rs orphan"}},
		{"a foreground owner with blocking dependents queues them and keeps its finalizer",
			Item{Object: deleting(testutil.Pod("rs").Obj(), metav1.FinalizerDeleteDependents), Dependents: []metav1.Object{owned("p1", true, "uid-rs")}},
			[]string{"Enqueue p1"}},
		{"a foreground owner whose dependents do not block drops its finalizer",
			Item{Object: deleting(testutil.Pod("rs").Obj(), metav1.FinalizerDeleteDependents), Dependents: []metav1.Object{owned("p1", false, "uid-rs")}},
			[]string{"Enqueue p1", "RemoveFinalizer rs foregroundDeletion"}},
		{"a foreground owner with no dependents left drops its finalizer",
			Item{Object: deleting(testutil.Pod("rs").Obj(), metav1.FinalizerDeleteDependents)}, []string{"RemoveFinalizer rs foregroundDeletion"}},
		{"an object being deleted without GC finalizers is left alone",
			Item{Object: deleting(owned("p", true, "a")), Owners: map[types.UID]OwnerState{"a": OwnerDangling}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := summary(Plan(tc.item).Actions)
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %q, want %q", got, tc.want)
				}
			}
		})
	}
}
