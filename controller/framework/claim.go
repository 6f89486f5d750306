package framework

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"minik/client"
	"minik/client/informer"
)

// AdoptedRefs returns p's ownerReferences with ref added: the adopting
// controller's.
func AdoptedRefs(p *corev1.Pod, ref metav1.OwnerReference) []metav1.OwnerReference {
	return append(append([]metav1.OwnerReference(nil), p.OwnerReferences...), ref)
}

// ReleasedRefs returns p's ownerReferences without the one of owner uid.
func ReleasedRefs(p *corev1.Pod, uid types.UID) []metav1.OwnerReference {
	var refs []metav1.OwnerReference
	for _, r := range p.OwnerReferences {
		if r.UID != uid {
			refs = append(refs, r)
		}
	}
	return refs
}

// IgnoreNotFound is nil for a NotFound: the object a write aimed at is
// already gone, which is what a controller's next sync sees anyway.
func IgnoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// PatchOwnerRefs sets p's ownerReferences, guarded by its UID and
// resourceVersion so that a concurrent change (another controller's
// adoption, a new pod of the same name) makes it fail instead.
func PatchOwnerRefs(ctx context.Context, c *client.Client, p *corev1.Pod, refs []metav1.OwnerReference) error {
	patch := map[string]any{"metadata": map[string]any{
		"ownerReferences": refs, "uid": p.UID, "resourceVersion": p.ResourceVersion,
	}}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = c.Pods().Patch(ctx, p.Namespace, p.Name, types.MergePatchType, data, metav1.PatchOptions{})
	return err
}

// ClaimingPodHandler queues, for each pod that changes, the controller
// that owns it (ownerKey) and, for an orphan that appears or whose labels
// or owner change, every controller whose selector matches it (matching),
// which may adopt it; a pod that stops matching its owner is released by
// the owner's next sync. It tells the expectations about creations and
// deletions, as OwnedPodHandler does.
func ClaimingPodHandler(ownerKey func(*corev1.Pod) (string, bool), matching func(*corev1.Pod) []string, queue *Queue, expect *Expectations) informer.Handler[corev1.Pod] {
	queueMatching := func(p *corev1.Pod) {
		if metav1.GetControllerOfNoCopy(p) != nil {
			return
		}
		for _, key := range matching(p) {
			queue.Add(key)
		}
	}
	return informer.Handler[corev1.Pod]{
		OnAdd: func(p *corev1.Pod) {
			if key, ok := ownerKey(p); ok {
				expect.CreationObserved(key)
				queue.Add(key)
				return
			}
			queueMatching(p)
		},
		OnUpdate: func(old, p *corev1.Pod) {
			if p.DeletionTimestamp != nil && old.DeletionTimestamp == nil {
				if key, ok := ownerKey(p); ok {
					expect.DeletionObserved(key, p.UID)
				}
			}
			if key, ok := ownerKey(old); ok {
				queue.Add(key)
			}
			if key, ok := ownerKey(p); ok {
				queue.Add(key)
			} else if !labels.Equals(old.Labels, p.Labels) || metav1.GetControllerOfNoCopy(old) != nil {
				queueMatching(p)
			}
		},
		OnDelete: func(p *corev1.Pod) {
			if key, ok := ownerKey(p); ok {
				expect.DeletionObserved(key, p.UID)
				queue.Add(key)
			}
		},
	}
}

// MatchingKeys returns the keys of the objects of ns whose selector
// (from selectorOf; nil or empty never matches, as Kubernetes' controllers
// never adopt with an empty selector) matches p's labels.
func MatchingKeys[T any](inf *informer.Informer[T], p *corev1.Pod, selectorOf func(*T) labels.Selector) []string {
	var keys []string
	for _, o := range inf.Store().ByIndex(informer.NamespaceIndex, p.Namespace) {
		if sel := selectorOf(o); sel != nil && !sel.Empty() && sel.Matches(labels.Set(p.Labels)) {
			keys = append(keys, KeyOf(any(o).(metav1.Object)))
		}
	}
	return keys
}
