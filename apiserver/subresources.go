package apiserver

import (
	"context"
	"fmt"
	"maps"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"

	"minik/apiserver/storage"
)

// serveSubresource dispatches /status, /ephemeralcontainers, /scale, /binding, /eviction, /log,
// /exec, /attach, /portforward and /finalize.
func (h *resourceHandler) serveSubresource(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	switch {
	case (ri.subresource == "status" || ri.subresource == "ephemeralcontainers") && ri.verb == "get":
		h.get(w, r, ri)
	case (ri.subresource == "status" || ri.subresource == "ephemeralcontainers") && ri.verb == "update":
		h.update(w, r, ri)
	case (ri.subresource == "status" || ri.subresource == "ephemeralcontainers") && ri.verb == "patch":
		h.patch(w, r, ri)
	case ri.subresource == "scale":
		h.scale(w, r, ri)
	case ri.subresource == "binding" && ri.verb == "create":
		h.bind(w, r, ri)
	case ri.subresource == "eviction" && ri.verb == "create":
		h.evict(w, r, ri)
	case ri.subresource == "log" && ri.verb == "get":
		h.log(w, r, ri)
	case ri.subresource == "exec" && (ri.verb == "get" || ri.verb == "create"):
		h.exec(w, r, ri)
	case ri.subresource == "attach" && (ri.verb == "get" || ri.verb == "create"):
		h.attach(w, r, ri)
	case ri.subresource == "portforward" && (ri.verb == "get" || ri.verb == "create"):
		h.portForward(w, r, ri)
	case ri.subresource == "finalize" && ri.verb == "update":
		h.finalize(w, r, ri)
	case ri.subresource == "token" && ri.verb == "create":
		h.createToken(w, r, ri)
	case ri.subresource == "proxy":
		h.proxy(w, r, ri)
	default:
		writeError(w, r, methodNotAllowed(r))
	}
}

// decodeBody reads a JSON or protobuf body into v (strictly: subresource
// bodies are small fixed types).
func decodeBody(r *http.Request, v any) error {
	data, mediaType, err := readBody(r, bodyTypes...)
	if err != nil {
		return err
	}
	if mediaType == protobufMediaType {
		unknown, err := decodeProtobufEnvelope(data)
		if err != nil {
			return err
		}
		return unmarshalProtobuf(unknown.Raw, v)
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, v); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized or malformed: %v", err))
	}
	return nil
}

// bind assigns a pod to a node, once: a second binding answers 409. As
// kube-apiserver's binding storage: the Binding's annotations are copied
// to the pod, and status.nominatedNodeName, a preemptor's promise that is
// kept or moot now, is cleared (ClearingNominatedNodeNameAfterBinding, on
// by default since 1.35).
func (h *resourceHandler) bind(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	var b corev1.Binding
	if err := decodeBody(r, &b); err != nil {
		writeError(w, r, err)
		return
	}
	admitted, err := h.srv.objectWebhooks(r.Context(), h, admissionv1.Create, corev1.SchemeGroupVersion.WithKind("Binding"), &b)
	if err != nil {
		writeError(w, r, err)
		return
	}
	b = *admitted.(*corev1.Binding)
	if b.Name != "" && b.Name != ri.name {
		writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("the name of the binding (%s) does not match the pod (%s)", b.Name, ri.name)))
		return
	}
	if b.Target.Name == "" {
		writeError(w, r, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Binding").GroupKind(), ri.name,
			fieldRequired("target.name")))
		return
	}
	_, _, err = h.store.GuaranteedUpdate(r.Context(), ri.namespace, ri.name, func(cur runtime.Object) (runtime.Object, error) {
		pod := cur.(*corev1.Pod)
		if b.UID != "" && b.UID != pod.UID {
			return nil, apierrors.NewConflict(h.res.GroupResource(), pod.Name, fmt.Errorf("the UID in the binding does not match the pod"))
		}
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(h.res.GroupResource(), pod.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(h.res.GroupResource(), pod.Name, fmt.Errorf("pod %s is already assigned to node %q", pod.Name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = b.Target.Name
		pod.Status.NominatedNodeName = ""
		if len(b.Annotations) > 0 && pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		maps.Copy(pod.Annotations, b.Annotations)
		setPodCondition(&pod.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
		return pod, nil
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeObject(w, r, http.StatusCreated, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusSuccess, Code: http.StatusCreated})
}

// setPodCondition adds or replaces a condition, keeping the transition
// time when the status did not change.
func setPodCondition(st *corev1.PodStatus, c corev1.PodCondition) {
	now := metav1.Now()
	for i := range st.Conditions {
		if st.Conditions[i].Type == c.Type {
			if st.Conditions[i].Status == c.Status {
				c.LastTransitionTime = st.Conditions[i].LastTransitionTime
			} else {
				c.LastTransitionTime = now
			}
			c.LastProbeTime = st.Conditions[i].LastProbeTime
			st.Conditions[i] = c
			return
		}
	}
	c.LastTransitionTime = now
	st.Conditions = append(st.Conditions, c)
}

// evict deletes a pod gracefully if its PodDisruptionBudget allows it,
// and answers 429 when the eviction would break the budget.
func (h *resourceHandler) evict(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	// A policy/v1beta1 Eviction has the same fields; webhooks get policy/v1,
	// the kind upstream's eviction storage declares whatever the body's.
	var ev policyv1.Eviction
	if err := decodeBody(r, &ev); err != nil {
		writeError(w, r, err)
		return
	}
	admitted, err := h.srv.objectWebhooks(r.Context(), h, admissionv1.Create, policyv1.SchemeGroupVersion.WithKind("Eviction"), &ev)
	if err != nil {
		writeError(w, r, err)
		return
	}
	ev = *admitted.(*policyv1.Eviction)
	if ev.Name != "" && ev.Name != ri.name {
		writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("name in URL does not match name in Eviction object")))
		return
	}
	opts := ev.DeleteOptions
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	ctx := r.Context()
	obj, err := h.store.Get(ctx, ri.namespace, ri.name)
	if err != nil {
		writeError(w, r, err)
		return
	}
	pod := obj.(*corev1.Pod)
	if !canIgnorePDB(pod) {
		if err := h.srv.takeDisruption(ctx, pod); err != nil {
			writeError(w, r, err)
			return
		}
	}
	if _, _, err := h.deleteObject(ctx, ri.namespace, ri.name, opts); err != nil {
		writeError(w, r, err)
		return
	}
	writeObject(w, r, http.StatusCreated, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusSuccess, Code: http.StatusCreated})
}

// canIgnorePDB: pods that are finished, not yet running or already going
// away do not count against a budget.
func canIgnorePDB(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded ||
		pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodPending
}

// takeDisruption finds the pod's budget and, if it allows a disruption,
// records the pod in status.disruptedPods and lowers disruptionsAllowed.
func (s *Server) takeDisruption(ctx context.Context, pod *corev1.Pod) error {
	list, err := s.pdbs.List(ctx, storage.ListOptions{Namespace: pod.Namespace})
	if err != nil {
		return err
	}
	var matching []*policyv1.PodDisruptionBudget
	for _, o := range list.Items {
		pdb := o.(*policyv1.PodDisruptionBudget)
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		if sel.Matches(labels.Set(pod.Labels)) {
			matching = append(matching, pdb)
		}
	}
	switch len(matching) {
	case 0:
		return nil
	case 1:
	default:
		return apierrors.NewInternalError(fmt.Errorf("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."))
	}
	name := matching[0].Name
	_, _, err = s.pdbs.GuaranteedUpdate(ctx, pod.Namespace, name, func(cur runtime.Object) (runtime.Object, error) {
		pdb := cur.(*policyv1.PodDisruptionBudget)
		if pdb.Status.ObservedGeneration < pdb.Generation || pdb.Status.DisruptionsAllowed <= 0 {
			return nil, tooManyRequests(pdb)
		}
		pdb.Status.DisruptionsAllowed--
		if pdb.Status.DisruptedPods == nil {
			pdb.Status.DisruptedPods = map[string]metav1.Time{}
		}
		pdb.Status.DisruptedPods[pod.Name] = metav1.Now()
		return pdb, nil
	})
	return err
}

func tooManyRequests(pdb *policyv1.PodDisruptionBudget) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: "DisruptionBudget",
		Message: fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently",
			pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy),
	})
	return err
}

// scale serves the autoscaling/v1 Scale view of a workload's replicas.
func (h *resourceHandler) scale(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	ctx := r.Context()
	switch ri.verb {
	case "get":
		obj, err := h.store.Get(ctx, ri.namespace, ri.name)
		if err != nil {
			writeError(w, r, err)
			return
		}
		sc, err := h.scaleOf(obj)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeObject(w, r, http.StatusOK, sc)
	case "update", "patch":
		var body []byte
		var patchType string
		var err error
		if ri.verb == "update" {
			body, _, err = readBody(r, "application/json", "application/yaml")
		} else {
			body, patchType, err = readBody(r, patchTypes...)
		}
		if err == nil {
			err = writeOptions(r, ri, patchType)
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		updated, err := h.updateObject(ctx, ri, isDryRun(r), func(cur runtime.Object) (runtime.Object, error) {
			sc, err := h.scaleOf(cur)
			if err != nil {
				return nil, err
			}
			data := body
			if ri.verb == "patch" {
				if data, err = applyPatch(patchType, sc, body); err != nil {
					return nil, err
				}
			}
			var want autoscalingv1.Scale
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &want); err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid Scale: %v", err))
			}
			if want.ResourceVersion != "" && want.ResourceVersion != sc.ResourceVersion {
				return nil, apierrors.NewConflict(h.res.GroupResource(), ri.name,
					fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
			}
			if want.Spec.Replicas < 0 {
				return nil, apierrors.NewInvalid(autoscalingv1.SchemeGroupVersion.WithKind("Scale").GroupKind(), ri.name,
					fieldInvalid("spec.replicas", want.Spec.Replicas, "must be greater than or equal to 0"))
			}
			h.setReplicas(cur, want.Spec.Replicas)
			return cur, nil
		})
		if err != nil {
			writeError(w, r, err)
			return
		}
		sc, err := h.scaleOf(updated)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeObject(w, r, http.StatusOK, sc)
	default:
		writeError(w, r, methodNotAllowed(r))
	}
}

// scaleOf is the Scale view of obj: from the CRD's scale paths for a
// custom object.
func (h *resourceHandler) scaleOf(obj runtime.Object) (*autoscalingv1.Scale, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || h.res.Custom == nil {
		return scaleOf(obj)
	}
	view, err := h.out(obj)
	if err != nil {
		return nil, err
	}
	u = view.(*unstructured.Unstructured)
	sc := &autoscalingv1.Scale{TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
			ResourceVersion: u.GetResourceVersion(), CreationTimestamp: u.GetCreationTimestamp()}}
	sc.Spec.Replicas, sc.Status.Replicas, sc.Status.Selector = h.res.Custom.Replicas(u.Object)
	return sc, nil
}

func (h *resourceHandler) setReplicas(obj runtime.Object, n int32) {
	if u, ok := obj.(*unstructured.Unstructured); ok && h.res.Custom != nil {
		h.res.Custom.SetReplicas(u.Object, n)
		return
	}
	setReplicas(obj, n)
}

func scaleOf(obj runtime.Object) (*autoscalingv1.Scale, error) {
	sc := &autoscalingv1.Scale{TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"}}
	m := metaOf(obj)
	sc.ObjectMeta = metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
		ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp()}
	var sel *metav1.LabelSelector
	switch o := obj.(type) {
	case *appsv1.Deployment:
		sc.Spec.Replicas, sc.Status.Replicas, sel = deref(o.Spec.Replicas), o.Status.Replicas, o.Spec.Selector
	case *appsv1.ReplicaSet:
		sc.Spec.Replicas, sc.Status.Replicas, sel = deref(o.Spec.Replicas), o.Status.Replicas, o.Spec.Selector
	case *appsv1.StatefulSet:
		sc.Spec.Replicas, sc.Status.Replicas, sel = deref(o.Spec.Replicas), o.Status.Replicas, o.Spec.Selector
	case *corev1.ReplicationController:
		sc.Spec.Replicas, sc.Status.Replicas = deref(o.Spec.Replicas), o.Status.Replicas
		sc.Status.Selector = labels.SelectorFromSet(o.Spec.Selector).String()
		return sc, nil
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%T has no scale subresource", obj))
	}
	if s, err := metav1.LabelSelectorAsSelector(sel); err == nil {
		sc.Status.Selector = s.String()
	}
	return sc, nil
}

func setReplicas(obj runtime.Object, n int32) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		o.Spec.Replicas = &n
	case *appsv1.ReplicaSet:
		o.Spec.Replicas = &n
	case *appsv1.StatefulSet:
		o.Spec.Replicas = &n
	case *corev1.ReplicationController:
		o.Spec.Replicas = &n
	}
}

func deref(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// finalize updates a namespace's spec.finalizers; the namespace goes
// away once it is terminating and none remain.
func (h *resourceHandler) finalize(w http.ResponseWriter, r *http.Request, ri *requestInfo) {
	var ns corev1.Namespace
	if err := decodeBody(r, &ns); err != nil {
		writeError(w, r, err)
		return
	}
	updated, _, err := h.store.GuaranteedUpdate(r.Context(), "", ri.name, func(cur runtime.Object) (runtime.Object, error) {
		c := cur.(*corev1.Namespace)
		if ns.ResourceVersion != "" && ns.ResourceVersion != c.ResourceVersion {
			return nil, apierrors.NewConflict(h.res.GroupResource(), ri.name,
				fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
		}
		c.Spec.Finalizers = ns.Spec.Finalizers
		return c, nil
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeObject(w, r, http.StatusOK, updated)
}
