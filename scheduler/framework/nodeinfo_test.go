package framework

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestNodeInfoCountsEachControllersLivePods(t *testing.T) {
	owned := func(name, owner string, deleting bool) *corev1.Pod {
		yes := true
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name),
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: owner, UID: types.UID(owner), Controller: &yes}}}}
		if deleting {
			now := metav1.Now()
			p.DeletionTimestamp = &now
		}
		return p
	}
	ni := NewNodeInfo(owned("a1", "a", false), owned("a2", "a", false), owned("b1", "b", false), owned("a3", "a", true),
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", UID: "bare"}})
	if got := ni.ControllerPods("a"); got != 2 {
		t.Fatalf("controller a: %d pods, want 2 (a3 is being deleted)", got)
	}
	clone := ni.Clone()
	ni.RemovePod(owned("a1", "a", false))
	ni.RemovePod(owned("a3", "a", true))
	if got := ni.ControllerPods("a"); got != 1 {
		t.Fatalf("after removing a1 and a3: %d pods of a, want 1", got)
	}
	if got := clone.ControllerPods("a"); got != 2 {
		t.Fatalf("the clone changed with the original: %d pods of a, want 2", got)
	}
	if got := ni.ControllerPods("b"); got != 1 {
		t.Fatalf("controller b: %d pods, want 1", got)
	}
}
