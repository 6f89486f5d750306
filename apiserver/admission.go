package apiserver

import (
	"context"
	"fmt"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik/apiserver/defaults"
	"minik/apiserver/validation"
	"minik/internal/quota"
)

// Admission runs after decoding and before storage, in Kubernetes' order:
// NamespaceLifecycle, ServiceAccount, NodeRestriction, RBAC escalation,
// mutating plugins (defaulting, the default storage and ingress classes,
// LimitRanger, priority, default tolerations, then the mutating
// webhooks), validation, then PodSecurity, the validating webhooks and
// ResourceQuota. Everything here is a pure check except
// the reads of namespaces, priority classes, service accounts, storage
// and ingress classes, limit ranges and quotas.

// admitCreate admits a new object, reading namespaces and priority
// classes through reads.
func (s *Server) admitCreate(ctx context.Context, h *resourceHandler, obj runtime.Object, reads *admissionReads) error {
	m, _ := meta.Accessor(obj)
	if h.res.Namespaced {
		if err := s.namespaceAcceptsCreate(ctx, m.GetNamespace(), reads); err != nil {
			return err
		}
	}
	if pod, ok := obj.(*corev1.Pod); ok && !s.disabledAdmission[ServiceAccountPlugin] {
		if err := s.admitServiceAccount(ctx, pod, reads); err != nil {
			return err
		}
	}
	if err := s.admitNodeRestriction(ctx, h, "create", "", obj, nil); err != nil {
		return err
	}
	if err := s.admitRBAC(ctx, h, obj); err != nil {
		return err
	}
	defaults.Object(obj)
	defaults.OnCreate(obj) // needs the uid: the Job selector
	defaults.DeviceTaintTimes(obj, nil, time.Now())
	if err := s.admitStorageCreate(ctx, obj); err != nil {
		return err
	}
	if c, ok := obj.(*apiextv1.CustomResourceDefinition); ok {
		if err := admitCRD(c, nil); err != nil {
			return err
		}
	}
	if h.res.Custom != nil {
		// A custom object's schema is checked in admitCustomObject: on
		// what the webhooks made of it, as upstream validates after them.
		if _, err := s.mutatingWebhooks(ctx, h, admissionv1.Create, "", obj, nil); err != nil {
			return err
		}
	}
	if err := h.admitCustomObject(obj, nil, ""); err != nil {
		return err
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		if err := s.admitLimitRanger(ctx, o, reads); err != nil { // on the defaulted pod, as upstream
			return err
		}
		o.Status = corev1.PodStatus{}
		defaults.PodStatus(o) // Pending, with its QoS class
		markSchedulingGated(o)
		if err := s.admitPriority(ctx, o, reads); err != nil {
			return err
		}
	case *corev1.Namespace:
		o.Status.Phase = corev1.NamespaceActive
	case *schedulingv1.PriorityClass:
		if err := s.admitPriorityClass(ctx, o); err != nil {
			return err
		}
	case *corev1.Service:
		o.Status = corev1.ServiceStatus{}
		if err := s.admitService(ctx, o, nil); err != nil {
			return err
		}
	case *networkingv1.Ingress:
		if err := admitDefaultIngressClass(ctx, o, s.ingressClasses); err != nil {
			return err
		}
	}
	if h.res.Custom == nil { // MutatingAdmissionWebhook is the last mutating plugin
		if _, err := s.mutatingWebhooks(ctx, h, admissionv1.Create, "", obj, nil); err != nil {
			return err
		}
	}
	if h.res.HasStatus && !keepsStatusOnCreate(obj) {
		if st, err := fieldOf(obj, "Status"); err == nil {
			st.Set(reflectZero(st))
		}
	}
	if errs := validation.Create(obj, h.res.Namespaced); len(errs) > 0 {
		return apierrors.NewInvalid(h.res.GroupVersion().WithKind(h.res.Kind).GroupKind(), m.GetName(), errs)
	}
	for _, w := range writeWarnings(obj, nil) {
		addWarning(ctx, w)
	}
	// Validating admission runs on the validated object, as upstream's
	// (ResourceQuota last of all).
	if err := s.admitPodSecurity(ctx, h, obj, nil, reads); err != nil {
		return err
	}
	if err := s.validatingWebhooks(ctx, h, admissionv1.Create, "", obj, nil, nil); err != nil {
		return err
	}
	return s.admitResourceQuota(ctx, h, obj, nil, reads)
}

// schedulingGatedMessage is upstream's message for a gated pod.
const schedulingGatedMessage = "Scheduling is blocked due to non-empty scheduling gates"

// markSchedulingGated gives a pod created with scheduling gates the
// PodScheduled=False condition with reason SchedulingGated, as
// kube-apiserver's pod strategy does: kubectl then shows the pod as
// SchedulingGated, and no scheduler has to touch it while it waits.
func markSchedulingGated(pod *corev1.Pod) {
	if len(pod.Spec.SchedulingGates) == 0 {
		return
	}
	setPodCondition(&pod.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonSchedulingGated, Message: schedulingGatedMessage})
}

// keepsStatusOnCreate lists the kinds whose creator sets the first
// status: a kubelet registering its Node, the defaults just set for pods
// and namespaces, and events (no status).
func keepsStatusOnCreate(obj runtime.Object) bool {
	switch obj.(type) {
	case *corev1.Node, *corev1.Pod, *corev1.Namespace, *corev1.PersistentVolume, *corev1.PersistentVolumeClaim:
		return true
	}
	return false
}

// admitUpdate admits a changed object (sub is "" or a subresource); the
// quotas it charges are in reads.guards.
func (s *Server) admitUpdate(ctx context.Context, h *resourceHandler, sub string, obj, old runtime.Object, reads *admissionReads) error {
	if err := s.admitNodeRestriction(ctx, h, "update", sub, obj, old); err != nil {
		return err
	}
	if sub == "" {
		if err := s.admitRBAC(ctx, h, obj); err != nil {
			return err
		}
	}
	if h.res.Custom != nil {
		if err := s.updateWebhooksMutate(ctx, h, sub, obj, old); err != nil {
			return err
		}
	}
	if err := h.admitCustomObject(obj, old, sub); err != nil {
		return err
	}
	m, _ := meta.Accessor(obj)
	gk := h.res.GroupVersion().WithKind(h.res.Kind).GroupKind()
	if sub == "status" {
		if svc, ok := obj.(*corev1.Service); ok {
			defaults.ServiceStatus(svc)
		}
		volumePhaseTransition(obj, old)
		if h.res.Custom == nil { // custom objects' were called above
			if err := s.updateWebhooksMutate(ctx, h, sub, obj, old); err != nil {
				return err
			}
		}
		if errs := validation.StatusUpdate(obj, old); len(errs) > 0 {
			return apierrors.NewInvalid(gk, m.GetName(), errs)
		}
		return s.validatingWebhooks(ctx, h, admissionv1.Update, sub, obj, old, nil)
	}
	defaults.Object(obj)
	defaults.DeviceTaintTimes(obj, old, time.Now())
	if sub == "ephemeralcontainers" {
		if err := s.updateWebhooksMutate(ctx, h, sub, obj, old); err != nil {
			return err
		}
		if errs := validation.EphemeralContainersUpdate(obj, old); len(errs) > 0 {
			return apierrors.NewInvalid(gk, m.GetName(), errs)
		}
		// Upstream's PodSecurity checks this subresource: a debug
		// container may not exceed the namespace's level.
		if err := s.admitPodSecurity(ctx, h, obj, old, reads); err != nil {
			return err
		}
		return s.validatingWebhooks(ctx, h, admissionv1.Update, sub, obj, old, nil)
	}
	if c, ok := obj.(*apiextv1.CustomResourceDefinition); ok {
		if err := admitCRD(c, old.(*apiextv1.CustomResourceDefinition)); err != nil {
			return err
		}
	}
	if svc, ok := obj.(*corev1.Service); ok {
		if err := s.admitService(ctx, svc, old.(*corev1.Service)); err != nil {
			return err
		}
	}
	if pc, ok := obj.(*schedulingv1.PriorityClass); ok && pc.GlobalDefault && !old.(*schedulingv1.PriorityClass).GlobalDefault {
		if err := s.admitPriorityClass(ctx, pc); err != nil {
			return err
		}
	}
	if h.res.Custom == nil {
		if err := s.updateWebhooksMutate(ctx, h, sub, obj, old); err != nil {
			return err
		}
	}
	if errs := validation.Update(obj, old, h.res.Namespaced); len(errs) > 0 {
		return apierrors.NewInvalid(gk, m.GetName(), errs)
	}
	if sub != "" { // scale, finalize: upstream's PodSecurity and ResourceQuota skip subresources
		return s.validatingWebhooks(ctx, h, admissionv1.Update, sub, obj, old, nil)
	}
	for _, w := range writeWarnings(obj, old) {
		addWarning(ctx, w)
	}
	// Validating admission, in upstream's order.
	if pvc, ok := obj.(*corev1.PersistentVolumeClaim); ok {
		if err := s.admitClaimResize(ctx, h, pvc, old.(*corev1.PersistentVolumeClaim)); err != nil {
			return err
		}
	}
	if err := s.admitPodSecurity(ctx, h, obj, old, reads); err != nil {
		return err
	}
	if err := s.validatingWebhooks(ctx, h, admissionv1.Update, sub, obj, old, nil); err != nil {
		return err
	}
	if !quota.ChargesOnUpdate(h.res.Resource, h.res.Group) {
		return nil
	}
	return s.admitResourceQuota(ctx, h, obj, old, reads)
}

// admitDelete refuses to delete the namespaces the system needs, keeps
// kubelets to their own pods, and asks the webhooks.
func (s *Server) admitDelete(ctx context.Context, h *resourceHandler, obj runtime.Object, opts *metav1.DeleteOptions) error {
	if err := s.admitNodeRestriction(ctx, h, "delete", "", obj, nil); err != nil {
		return err
	}
	if ns, ok := obj.(*corev1.Namespace); ok {
		switch ns.Name {
		case "default", "kube-system", "kube-public":
			return apierrors.NewForbidden(h.res.GroupResource(), ns.Name, fmt.Errorf("this namespace may not be deleted"))
		}
	}
	return s.deleteWebhooks(ctx, h, obj, opts)
}

// updateWebhooksMutate runs the mutating webhooks on an update; what they
// changed goes through carryOver again, as upstream's update strategy
// runs after mutating admission: system fields and the status split hold.
func (s *Server) updateWebhooksMutate(ctx context.Context, h *resourceHandler, sub string, obj, old runtime.Object) error {
	changed, err := s.mutatingWebhooks(ctx, h, admissionv1.Update, sub, obj, old)
	if err != nil || !changed || sub == "scale" {
		return err
	}
	return h.carryOver(sub, obj, old)
}

// namespaceAcceptsCreate is the NamespaceLifecycle plugin: no creates in
// a namespace that is missing or being terminated.
func (s *Server) namespaceAcceptsCreate(ctx context.Context, name string, reads *admissionReads) error {
	obj, err := reads.namespace(ctx, name)
	if err != nil {
		return err
	}
	if ns := obj.(*corev1.Namespace); ns.Status.Phase == corev1.NamespaceTerminating || ns.DeletionTimestamp != nil {
		err := apierrors.NewForbidden(corev1.Resource("namespaces"), name,
			fmt.Errorf("unable to create new content in namespace %s because it is being terminated", name))
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metaCause("NamespaceTerminating", name))
		return err
	}
	return nil
}

// admitPriority is the Priority plugin: it resolves priorityClassName (or
// the global default class) into spec.priority and preemptionPolicy.
func (s *Server) admitPriority(ctx context.Context, pod *corev1.Pod, reads *admissionReads) error {
	var value int32
	policy := corev1.PreemptLowerPriority
	if pod.Spec.PriorityClassName == "" {
		if pc, err := reads.globalDefaultPriorityClass(ctx); err != nil {
			return err
		} else if pc != nil {
			pod.Spec.PriorityClassName = pc.Name
		}
	}
	if name := pod.Spec.PriorityClassName; name != "" {
		obj, err := reads.priorityClass(ctx, name)
		if apierrors.IsNotFound(err) {
			return apierrors.NewForbidden(corev1.Resource("pods"), pod.Name, fmt.Errorf("no PriorityClass with name %s was found", name))
		}
		if err != nil {
			return err
		}
		pc := obj.(*schedulingv1.PriorityClass)
		value = pc.Value
		if pc.PreemptionPolicy != nil {
			policy = *pc.PreemptionPolicy
		}
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != value {
		return apierrors.NewForbidden(corev1.Resource("pods"), pod.Name,
			fmt.Errorf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, value))
	}
	pod.Spec.Priority = &value
	if pod.Spec.PreemptionPolicy == nil {
		pod.Spec.PreemptionPolicy = &policy
	}
	return nil
}

func (s *Server) globalDefaultPriorityClass(ctx context.Context) (*schedulingv1.PriorityClass, error) {
	list, err := s.priorityClasses.List(ctx, storageListAll())
	if err != nil {
		return nil, err
	}
	return globalDefault(list.Items), nil
}

// globalDefault picks the default class: the lowest-valued one marked
// globalDefault (there is normally at most one).
func globalDefault(items []runtime.Object) *schedulingv1.PriorityClass {
	var best *schedulingv1.PriorityClass
	for _, o := range items {
		pc := o.(*schedulingv1.PriorityClass)
		if pc.GlobalDefault && (best == nil || pc.Value < best.Value || pc.Value == best.Value && pc.Name < best.Name) {
			best = pc
		}
	}
	return best
}

// newestDefault picks, among the items of type T that isDefault accepts,
// the one created last, and of those created in the same second the first
// by name; the zero T (nil) when none is accepted. It is how upstream's
// DefaultStorageClass and DefaultIngressClass plugins choose when more
// than one class is marked default (they no longer refuse the create).
func newestDefault[T metav1.Object](items []runtime.Object, isDefault func(T) bool) T {
	var best T
	found := false
	for _, o := range items {
		c, ok := o.(T)
		if !ok || !isDefault(c) {
			continue
		}
		if !found || newerClass(c, best) {
			best, found = c, true
		}
	}
	return best
}

// newerClass: a was created after b, or in the same second and sorts
// first by name.
func newerClass(a, b metav1.Object) bool {
	at, bt := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	return at.After(bt.Time) || at.Equal(&bt) && a.GetName() < b.GetName()
}

// admitPriorityClass allows a single globalDefault class.
func (s *Server) admitPriorityClass(ctx context.Context, pc *schedulingv1.PriorityClass) error {
	if !pc.GlobalDefault {
		return nil
	}
	existing, err := s.globalDefaultPriorityClass(ctx)
	if err != nil {
		return err
	}
	if existing != nil && existing.Name != pc.Name {
		return apierrors.NewForbidden(schedulingv1.Resource("priorityclasses"), pc.Name,
			fmt.Errorf("PriorityClass %v is already marked as default. Only one default can exist", existing.Name))
	}
	return nil
}
