package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"

	"minik/apiserver/storage"
)

// The finalizers the garbage collector acts on.
const (
	finalizerOrphan     = metav1.FinalizerOrphanDependents   // "orphan"
	finalizerForeground = metav1.FinalizerDeleteDependents   // "foregroundDeletion"
	namespaceFinalizer  = string(corev1.FinalizerKubernetes) // "kubernetes"
)

// deleteOptions reads DeleteOptions from the body and the query.
func deleteOptions(r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	if r.Body != nil && r.ContentLength != 0 {
		data, _, err := readBody(r, "application/json", "application/yaml")
		if err != nil {
			return nil, err
		}
		if len(data) > 0 {
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, opts); err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid DeleteOptions: %v", err))
			}
		}
	}
	q := r.URL.Query()
	if g := q.Get("gracePeriodSeconds"); g != "" {
		n, err := strconv.ParseInt(g, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid gracePeriodSeconds %q", g))
		}
		opts.GracePeriodSeconds = &n
	}
	if p := q.Get("propagationPolicy"); p != "" {
		pp := metav1.DeletionPropagation(p)
		opts.PropagationPolicy = &pp
	}
	if o := q.Get("orphanDependents"); o != "" {
		b := o == "true"
		opts.OrphanDependents = &b
	}
	if q.Get("dryRun") == "All" {
		opts.DryRun = []string{"All"}
	}
	if err := validateDryRun(opts.DryRun, "DeleteOptions"); err != nil {
		return nil, err
	}
	if opts.PropagationPolicy != nil {
		switch *opts.PropagationPolicy {
		case metav1.DeletePropagationForeground, metav1.DeletePropagationBackground, metav1.DeletePropagationOrphan:
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("propagationPolicy: Unsupported value: %q: supported values: \"Foreground\", \"Background\", \"Orphan\"", *opts.PropagationPolicy))
		}
		if opts.OrphanDependents != nil {
			return nil, apierrors.NewBadRequest("orphanDependents and propagationPolicy cannot both be set")
		}
	}
	if opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds < 0 {
		zero := int64(0)
		opts.GracePeriodSeconds = &zero
	}
	return opts, nil
}

// delete answers DELETE on one object.
func (h *resourceHandler) delete(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	opts, err := deleteOptions(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	obj, deleted, err := h.deleteObject(r.Context(), ri.namespace, ri.name, opts)
	if err != nil {
		writeError(w, r, err)
		return
	}
	// As kube-apiserver: 200, and 202 only for an object that stays
	// while a cascade asked for with orphanDependents=false runs.
	code := http.StatusOK
	if !deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		code = http.StatusAccepted
	}
	h.srv.writeMaybeTable(w, r, h, code, obj)
}

// deleteObject deletes gracefully: it sets deletionTimestamp (and the GC
// finalizers the propagation policy asks for) and removes the object only
// once no finalizer and no grace period holds it. It reports whether the
// object is gone.
func (h *resourceHandler) deleteObject(ctx context.Context, namespace, name string, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	dryRun := len(opts.DryRun) > 0
	var preconditionErr error
	check := func(cur runtime.Object) error {
		m, _ := meta.Accessor(cur)
		if p := opts.Preconditions; p != nil {
			if p.UID != nil && *p.UID != m.GetUID() {
				return apierrors.NewConflict(h.res.GroupResource(), name,
					fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, m.GetUID()))
			}
			if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
				return apierrors.NewConflict(h.res.GroupResource(), name,
					fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, m.GetResourceVersion()))
			}
		}
		return nil
	}
	obj, deleted, err := h.store.GuaranteedUpdate(ctx, namespace, name, func(cur runtime.Object) (runtime.Object, error) {
		if preconditionErr = check(cur); preconditionErr != nil {
			return nil, preconditionErr
		}
		if err := h.srv.admitDelete(ctx, h, cur, opts); err != nil {
			return nil, err
		}
		m, _ := meta.Accessor(cur)
		grace := h.gracePeriod(cur, opts)
		changed := h.addGCFinalizers(m, opts)
		now := time.Now()
		if ts := m.GetDeletionTimestamp(); ts != nil {
			// Already terminating: a delete may only shorten the grace period.
			if g := m.GetDeletionGracePeriodSeconds(); g != nil && grace < *g {
				deadline := metav1.NewTime(now.Add(time.Duration(grace) * time.Second))
				if deadline.Before(ts) {
					m.SetDeletionTimestamp(&deadline)
				}
				m.SetDeletionGracePeriodSeconds(&grace)
				changed = true
			}
			if !changed {
				return nil, storage.ErrNoChange
			}
		} else {
			ts := metav1.NewTime(now.Add(time.Duration(grace) * time.Second))
			m.SetDeletionTimestamp(&ts)
			m.SetDeletionGracePeriodSeconds(&grace)
			// Being deleted is a new generation: its controllers (a pod's
			// kubelet) should act on it, as upstream bumps it.
			if g := m.GetGeneration(); g > 0 {
				m.SetGeneration(g + 1)
			}
			if ns, ok := cur.(*corev1.Namespace); ok {
				ns.Status.Phase = corev1.NamespaceTerminating
			}
		}
		if dryRun {
			return nil, storage.ErrNoChange
		}
		return cur, nil
	})
	if err != nil {
		return nil, false, err
	}
	out, err := h.out(obj)
	return out, deleted, err
}

// gracePeriod is the delete's grace period in seconds. Only pods have
// one: the request's, else the pod's terminationGracePeriodSeconds; a pod
// that never reached a node, or already finished, goes at once.
func (h *resourceHandler) gracePeriod(obj runtime.Object, opts *metav1.DeleteOptions) int64 {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return 0
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0
	}
	if opts.GracePeriodSeconds != nil {
		return *opts.GracePeriodSeconds
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return *g
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}

// addGCFinalizers applies the propagation policy: Orphan and Foreground
// are finalizers the garbage collector honours; Background needs none.
func (h *resourceHandler) addGCFinalizers(m metav1.Object, opts *metav1.DeleteOptions) bool {
	policy := h.defaultPropagation()
	if opts.OrphanDependents != nil {
		policy = metav1.DeletePropagationBackground
		if *opts.OrphanDependents {
			policy = metav1.DeletePropagationOrphan
		}
	}
	if opts.PropagationPolicy != nil {
		policy = *opts.PropagationPolicy
	}
	fin := m.GetFinalizers()
	var want string
	switch policy {
	case metav1.DeletePropagationOrphan:
		want = finalizerOrphan
	case metav1.DeletePropagationForeground:
		want = finalizerForeground
	}
	changed := false
	// The last policy asked for wins, as in Kubernetes.
	var kept []string
	for _, f := range fin {
		if (f == finalizerOrphan || f == finalizerForeground) && f != want && m.GetDeletionTimestamp() == nil {
			changed = true
			continue
		}
		kept = append(kept, f)
	}
	if want != "" && !contains(kept, want) && (m.GetDeletionTimestamp() == nil || want == finalizerOrphan) {
		kept = append(kept, want)
		changed = true
	}
	if changed {
		m.SetFinalizers(kept)
	}
	return changed
}

// defaultPropagation is the policy when the request names none. The
// batch/v1 Job keeps its historical default of orphaning its pods.
func (h *resourceHandler) defaultPropagation() metav1.DeletionPropagation {
	if h.res.Group == "batch" {
		return metav1.DeletePropagationOrphan
	}
	return metav1.DeletePropagationBackground
}

// deleteCollection answers DELETE on a collection: it deletes every
// selected object with the same options.
func (h *resourceHandler) deleteCollection(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	opts, err := deleteOptions(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	q := r.URL.Query()
	pred, err := newPredicate(h.res, ri.namespace, q.Get("labelSelector"), q.Get("fieldSelector"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	result, err := h.store.List(r.Context(), storage.ListOptions{Namespace: ri.namespace, Match: pred.Matches})
	if err != nil {
		writeError(w, r, err)
		return
	}
	for _, item := range result.Items {
		m, _ := meta.Accessor(item)
		if err := h.srv.authorizeObject(r, "delete", h, m.GetNamespace(), m.GetName()); err != nil {
			writeError(w, r, err)
			return
		}
		if _, _, err := h.deleteObject(r.Context(), m.GetNamespace(), m.GetName(), opts); err != nil && !apierrors.IsNotFound(err) {
			writeError(w, r, err)
			return
		}
	}
	writeObject(w, r, http.StatusOK, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusSuccess})
}
