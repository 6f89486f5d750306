package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"minik/apiserver/storage"
)

// PodSecurity admission, as kube-apiserver's built-in plugin with its
// default configuration (every level privileged unless a namespace says
// otherwise, no exemptions). The checks are k8s.io/pod-security-admission's
// policy package; this file decides when they run and what they answer:
//
//	pod create (or an update that changes an image) ─▶ enforce: 403 "violates PodSecurity ..."; warn: Warning header
//	workload create/update (Deployment, ReplicaSet, RC, DaemonSet, Job) ─▶ warn only
//	namespace create/update ─▶ invalid pod-security.kubernetes.io labels: 422;
//	                           a stricter enforce level: a warning per kind of violation among its pods

// podSecurityEvaluator runs the baseline and restricted checks.
var podSecurityEvaluator = sync.OnceValues(func() (policy.Evaluator, error) {
	return policy.NewEvaluator(policy.DefaultChecks(), nil)
})

// podSecurityDefaults is the policy of a namespace without labels.
var podSecurityDefaults = psapi.Policy{
	Enforce: psapi.LevelVersion{Level: psapi.LevelPrivileged, Version: psapi.LatestVersion()},
	Audit:   psapi.LevelVersion{Level: psapi.LevelPrivileged, Version: psapi.LatestVersion()},
	Warn:    psapi.LevelVersion{Level: psapi.LevelPrivileged, Version: psapi.LatestVersion()},
}

// podSecurity decides one pod (or pod template) under the labels of its
// namespace: a violation of the enforce level (only when enforce is set,
// as for pods; workloads are only warned about), or else the warning of
// the warn level. Labels that do not parse count as restricted, as
// upstream.
func podSecurity(ev policy.Evaluator, nsLabels map[string]string, meta *metav1.ObjectMeta, spec *corev1.PodSpec, enforce bool) (violation error, warning string) {
	p, _ := psapi.PolicyToEvaluate(nsLabels, podSecurityDefaults)
	if p.FullyPrivileged() {
		return nil, ""
	}
	results := map[psapi.LevelVersion]policy.AggregateCheckResult{}
	eval := func(lv psapi.LevelVersion) policy.AggregateCheckResult {
		if r, ok := results[lv]; ok {
			return r
		}
		r := policy.AggregateCheckResults(ev.EvaluatePod(lv, meta, spec))
		results[lv] = r
		return r
	}
	if enforce {
		if r := eval(p.Enforce); !r.Allowed {
			return fmt.Errorf("violates PodSecurity %q: %s", p.Enforce.String(), r.ForbiddenDetail()), ""
		}
	}
	if r := eval(p.Warn); !r.Allowed {
		return nil, fmt.Sprintf("would violate PodSecurity %q: %s", p.Warn.String(), r.ForbiddenDetail())
	}
	return nil, ""
}

// podTemplateOf returns the pod metadata and spec a workload makes.
func podTemplateOf(obj runtime.Object) (*metav1.ObjectMeta, *corev1.PodSpec, bool) {
	var t *corev1.PodTemplateSpec
	switch o := obj.(type) {
	case *corev1.ReplicationController:
		t = o.Spec.Template
	case *appsv1.ReplicaSet:
		t = &o.Spec.Template
	case *appsv1.Deployment:
		t = &o.Spec.Template
	case *appsv1.DaemonSet:
		t = &o.Spec.Template
	case *appsv1.StatefulSet:
		t = &o.Spec.Template
	case *batchv1.Job:
		t = &o.Spec.Template
	case *batchv1.CronJob:
		t = &o.Spec.JobTemplate.Spec.Template
	case *corev1.PodTemplate:
		t = &o.Template
	}
	if t == nil {
		return nil, nil, false
	}
	return &t.ObjectMeta, &t.Spec, true
}

// admitPodSecurity runs the plugin on a create or on an update (old set)
// of the main resource.
func (s *Server) admitPodSecurity(ctx context.Context, h *resourceHandler, obj, old runtime.Object, reads *admissionReads) error {
	if ns, ok := obj.(*corev1.Namespace); ok {
		return s.admitNamespacePodSecurity(ctx, h, ns, old)
	}
	var meta *metav1.ObjectMeta
	var spec *corev1.PodSpec
	pod, isPod := obj.(*corev1.Pod)
	if isPod {
		if old != nil && !significantPodUpdate(pod, old.(*corev1.Pod)) {
			return nil
		}
		meta, spec = &pod.ObjectMeta, &pod.Spec
	} else {
		var ok bool
		if meta, spec, ok = podTemplateOf(obj); !ok {
			return nil
		}
	}
	m := metaOf(obj)
	nsObj, err := reads.namespace(ctx, m.GetNamespace())
	if err != nil {
		return err
	}
	ev, err := podSecurityEvaluator()
	if err != nil {
		return err
	}
	violation, warning := podSecurity(ev, nsObj.(*corev1.Namespace).Labels, meta, spec, isPod)
	if violation != nil {
		return apierrors.NewForbidden(h.res.GroupResource(), m.GetName(), violation)
	}
	addWarning(ctx, warning)
	return nil
}

// admitNamespacePodSecurity refuses invalid pod-security labels (on an
// update only if they changed) and warns, when the enforce level gets
// stricter, about the namespace's pods that would not be admitted now.
func (s *Server) admitNamespacePodSecurity(ctx context.Context, h *resourceHandler, ns *corev1.Namespace, old runtime.Object) error {
	p, errs := psapi.PolicyToEvaluate(ns.Labels, podSecurityDefaults)
	if old == nil {
		if len(errs) > 0 {
			return apierrors.NewInvalid(h.res.GroupVersion().WithKind(h.res.Kind).GroupKind(), ns.Name, errs)
		}
		return nil
	}
	oldP, oldErrs := psapi.PolicyToEvaluate(old.(*corev1.Namespace).Labels, podSecurityDefaults)
	if len(errs) > 0 && (len(oldErrs) == 0 || fmt.Sprint(errs) != fmt.Sprint(oldErrs)) {
		return apierrors.NewInvalid(h.res.GroupVersion().WithKind(h.res.Kind).GroupKind(), ns.Name, errs)
	}
	if p.Enforce == oldP.Enforce || p.Enforce.Level == psapi.LevelPrivileged ||
		p.Enforce.Version == oldP.Enforce.Version && psapi.CompareLevels(p.Enforce.Level, oldP.Enforce.Level) < 1 {
		return nil
	}
	list, err := s.pods.List(ctx, storage.ListOptions{Namespace: ns.Name})
	if err != nil {
		return err
	}
	ev, err := podSecurityEvaluator()
	if err != nil {
		return err
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i, o := range list.Items {
		pods[i] = o.(*corev1.Pod)
	}
	for _, w := range existingPodWarnings(ev, ns.Name, p.Enforce, pods) {
		addWarning(ctx, w)
	}
	return nil
}

// maxPodsToCheck bounds the pods checked when a namespace's enforce level
// changes (upstream's default).
const maxPodsToCheck = 3000

// existingPodWarnings are upstream's warnings for pods that violate a
// namespace's new enforce level: one line saying so, then one per kind of
// violation, named after the first such pod ("a (and 2 other pods): ...").
func existingPodWarnings(ev policy.Evaluator, namespace string, enforce psapi.LevelVersion, pods []*corev1.Pod) []string {
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	var out []string
	if len(pods) > maxPodsToCheck {
		out = append(out, fmt.Sprintf("new PodSecurity enforce level only checked against the first %d of %d existing pods", maxPodsToCheck, len(pods)))
		pods = pods[:maxPodsToCheck]
	}
	type seen struct {
		first string
		count int
	}
	byReason := map[string]*seen{}
	var reasons []string
	for _, pod := range pods {
		r := policy.AggregateCheckResults(ev.EvaluatePod(enforce, &pod.ObjectMeta, &pod.Spec))
		if r.Allowed {
			continue
		}
		reason := r.ForbiddenReason()
		if byReason[reason] == nil {
			byReason[reason] = &seen{first: pod.Name}
			reasons = append(reasons, reason)
		}
		byReason[reason].count++
	}
	if len(reasons) == 0 {
		return out
	}
	out = append(out, fmt.Sprintf("existing pods in namespace %q violate the new PodSecurity enforce level %q", namespace, enforce.String()))
	var lines []string
	for _, reason := range reasons {
		c := byReason[reason]
		switch c.count {
		case 1:
			lines = append(lines, fmt.Sprintf("%s: %s", c.first, reason))
		case 2:
			lines = append(lines, fmt.Sprintf("%s (and 1 other pod): %s", c.first, reason))
		default:
			lines = append(lines, fmt.Sprintf("%s (and %d other pods): %s", c.first, c.count-1, reason))
		}
	}
	sort.Strings(lines)
	return append(out, lines...)
}

// significantPodUpdate: only a change of containers or their images can
// change a running pod's verdict (the rest of its spec is immutable).
func significantPodUpdate(pod, old *corev1.Pod) bool {
	if len(pod.Spec.Containers) != len(old.Spec.Containers) || len(pod.Spec.InitContainers) != len(old.Spec.InitContainers) ||
		len(pod.Spec.EphemeralContainers) != len(old.Spec.EphemeralContainers) {
		return true
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Image != old.Spec.Containers[i].Image {
			return true
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Image != old.Spec.InitContainers[i].Image {
			return true
		}
	}
	return false
}

// warningsKey carries a request's warning sink in its context.
type warningsKey struct{}

type warningSink struct {
	w    http.ResponseWriter
	mu   sync.Mutex
	sent map[string]bool
}

// withWarnings lets admission add Warning headers to w's response (each
// text once, however often admission runs for the request).
func withWarnings(ctx context.Context, w http.ResponseWriter) context.Context {
	return context.WithValue(ctx, warningsKey{}, &warningSink{w: w, sent: map[string]bool{}})
}

// addWarning adds a "299" Warning header, as kube-apiserver's admission
// warnings; without a sink (or text) it does nothing.
func addWarning(ctx context.Context, text string) {
	sink, _ := ctx.Value(warningsKey{}).(*warningSink)
	if sink == nil || text == "" {
		return
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if !sink.sent[text] {
		sink.sent[text] = true
		sink.w.Header().Add("Warning", fmt.Sprintf("299 - %q", text))
	}
}
