package validation

import (
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"strings"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// updatablePodSpecFields is quoted in the error for a forbidden pod update,
// word for word as upstream prints it.
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

func validatePod(pod *corev1.Pod, namespaced bool) field.ErrorList {
	errs := objectMeta(&pod.ObjectMeta, namespaced, apimachineryvalidation.NameIsDNSSubdomain)
	errs = append(errs, validatePodOnlySpec(pod)...)
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("ephemeralContainers"), "cannot be set on create"))
	}
	if pod.Spec.NodeName != "" && len(pod.Spec.SchedulingGates) != 0 {
		errs = append(errs, field.Forbidden(specPath.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
	}
	return errs
}

// validatePodOnlySpec checks a pod's spec on create and update, including
// the rules upstream applies to pods but not to pod templates.
func validatePodOnlySpec(pod *corev1.Pod) field.ErrorList {
	errs := validatePodSpec(&pod.Spec, specPath, true)
	if pod.Spec.ServiceAccountName == "" {
		for vi, v := range pod.Spec.Volumes {
			if v.Projected == nil {
				continue
			}
			for si, src := range v.Projected.Sources {
				if src.ServiceAccountToken != nil {
					p := specPath.Child("volumes").Index(vi).Child("projected", "sources").Index(si).Child("serviceAccountToken")
					errs = append(errs, field.Forbidden(p, "must not be specified when serviceAccountName is not set"))
				}
			}
		}
	}
	for _, list := range []struct {
		name       string
		containers []corev1.Container
	}{{"containers", pod.Spec.Containers}, {"initContainers", pod.Spec.InitContainers}} {
		for i, c := range list.containers {
			if len(c.Image) != len(strings.TrimSpace(c.Image)) {
				errs = append(errs, field.Invalid(specPath.Child(list.name).Index(i).Child("image"), c.Image, "must not have leading or trailing whitespace"))
			}
		}
	}
	return errs
}

func validatePodUpdate(pod, old *corev1.Pod, namespaced bool) field.ErrorList {
	errs := objectMetaUpdate(&pod.ObjectMeta, &old.ObjectMeta, namespaced)
	errs = append(errs, validatePodOnlySpec(pod)...)

	// Containers may change only their image, and never in number.
	for _, list := range []struct {
		name     string
		new, old []corev1.Container
	}{{"containers", pod.Spec.Containers, old.Spec.Containers}, {"initContainers", pod.Spec.InitContainers, old.Spec.InitContainers}} {
		if len(list.new) != len(list.old) {
			return append(errs, field.Forbidden(specPath.Child(list.name), "pod updates may not add or remove containers"))
		}
	}

	deadlinePath := specPath.Child("activeDeadlineSeconds")
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil {
		if *d < 0 || *d > math.MaxInt32 {
			return append(errs, field.Invalid(deadlinePath, *d, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
		if o := old.Spec.ActiveDeadlineSeconds; o != nil && *o < *d {
			return append(errs, field.Invalid(deadlinePath, *d, "must be less than or equal to previous value"))
		}
	} else if old.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Invalid(deadlinePath, pod.Spec.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
	}

	errs = append(errs, validateOnlyAddedTolerations(pod.Spec.Tolerations, old.Spec.Tolerations, specPath.Child("tolerations"))...)
	errs = append(errs, validateOnlyDeletedSchedulingGates(pod.Spec.SchedulingGates, old.Spec.SchedulingGates, specPath.Child("schedulingGates"))...)

	if apiequality.Semantic.DeepEqual(pod.Spec, old.Spec) {
		return errs
	}
	// Copy the updatable fields from old, then any remaining difference is
	// forbidden.
	munged := pod.Spec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = old.Spec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = old.Spec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = old.Spec.ActiveDeadlineSeconds
	munged.SchedulingGates = old.Spec.SchedulingGates
	munged.Tolerations = old.Spec.Tolerations
	if g := old.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 && munged.TerminationGracePeriodSeconds != nil && *munged.TerminationGracePeriodSeconds == 1 {
		munged.TerminationGracePeriodSeconds = g
	}
	// A pod still gated from scheduling may gain node selector entries.
	if len(old.Spec.SchedulingGates) > 0 && !apiequality.Semantic.DeepEqual(munged.NodeSelector, old.Spec.NodeSelector) {
		errs = append(errs, validateNodeSelectorAdditions(specPath.Child("nodeSelector"), munged.NodeSelector, old.Spec.NodeSelector)...)
		munged.NodeSelector = old.Spec.NodeSelector
	}
	if !apiequality.Semantic.DeepEqual(*munged, old.Spec) {
		diff := cmp.Diff(old.Spec, *munged)
		errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("pod updates may not change fields other than %s\n%v", strings.Join(updatablePodSpecFields, ","), diff)))
	}
	return errs
}

func validateOnlyAddedTolerations(tolerations, old []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	for _, o := range old {
		found := false
		for _, t := range tolerations {
			// tolerationSeconds may change; everything else must stay.
			o.TolerationSeconds = t.TolerationSeconds
			if reflect.DeepEqual(o, t) {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(fldPath, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return validateTolerations(tolerations, fldPath)
}

func validateOnlyDeletedSchedulingGates(gates, old []corev1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	existing := map[string]bool{}
	for _, g := range old {
		existing[g.Name] = true
	}
	var errs field.ErrorList
	for i, g := range gates {
		if !existing[g.Name] {
			errs = append(errs, field.Forbidden(fldPath.Index(i).Child("name"), fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	return errs
}

func validateNodeSelectorAdditions(fldPath *field.Path, selector, old map[string]string) field.ErrorList {
	var errs field.ErrorList
	for k, v := range old {
		if nv, ok := selector[k]; !ok || nv != v {
			errs = append(errs, field.Invalid(fldPath.Key(k), selector[k], "only additions are allowed (no mutations or deletions)"))
		}
	}
	return errs
}

// validatePodStatusUpdate checks a write to pods/status, typically from the
// kubelet or the scheduler.
func validatePodStatusUpdate(pod, old *corev1.Pod) field.ErrorList {
	errs := objectMetaUpdate(&pod.ObjectMeta, &old.ObjectMeta, true)
	system := map[corev1.PodConditionType]bool{corev1.PodScheduled: true, corev1.PodReady: true, corev1.PodInitialized: true}
	for i, c := range pod.Status.Conditions {
		if !system[c.Type] {
			// upstream reports conditions under metadata.
			errs = append(errs, qualifiedName(string(c.Type), metaPath.Child("conditions").Index(i).Child("Type"))...)
		}
	}
	if pod.Spec.NodeName != old.Spec.NodeName {
		errs = append(errs, field.Forbidden(statusPath.Child("nodeName"), "may not be changed directly"))
	}
	if n := pod.Status.NominatedNodeName; n != old.Status.NominatedNodeName && n != "" {
		errs = append(errs, nameErrs(apimachineryvalidation.NameIsDNSSubdomain, n, statusPath.Child("nominatedNodeName"))...)
	}
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(pod.Status.QOSClass, old.Status.QOSClass, statusPath.Child("qosClass"))...)
	errs = append(errs, validateContainerStateTransition(pod.Status.ContainerStatuses, old.Status.ContainerStatuses, statusPath.Child("containerStatuses"), old.Spec.RestartPolicy, nil)...)
	errs = append(errs, validateContainerStateTransition(pod.Status.InitContainerStatuses, old.Status.InitContainerStatuses, statusPath.Child("initContainerStatuses"), old.Spec.RestartPolicy, old.Spec.InitContainers)...)
	errs = append(errs, validateContainerStateTransition(pod.Status.EphemeralContainerStatuses, old.Status.EphemeralContainerStatuses, statusPath.Child("ephemeralContainerStatuses"), corev1.RestartPolicyNever, nil)...)

	podIPs := make([]string, 0, len(pod.Status.PodIPs))
	for _, ip := range pod.Status.PodIPs {
		podIPs = append(podIPs, ip.IP)
	}
	errs = append(errs, validateIPList(podIPs, statusPath.Child("podIPs"), pod.Status.PodIPs)...)
	if len(pod.Status.HostIPs) > 0 {
		hostIPsPath := statusPath.Child("hostIPs")
		if pod.Status.HostIP != pod.Status.HostIPs[0].IP {
			errs = append(errs, field.Invalid(hostIPsPath.Index(0).Child("ip"), pod.Status.HostIPs[0].IP, "must be equal to `hostIP`"))
		}
		hostIPs := make([]string, 0, len(pod.Status.HostIPs))
		for _, ip := range pod.Status.HostIPs {
			hostIPs = append(hostIPs, ip.IP)
		}
		errs = append(errs, validateIPList(hostIPs, hostIPsPath, pod.Status.HostIPs)...)
	}
	return errs
}

// validateContainerStateTransition forbids a terminated container from
// running again when the restart policy (or, for restartable init
// containers, their own policy) does not allow it.
func validateContainerStateTransition(statuses, old []corev1.ContainerStatus, fldPath *field.Path, policy corev1.RestartPolicy, initContainers []corev1.Container) field.ErrorList {
	if policy == corev1.RestartPolicyAlways {
		return nil
	}
	var errs field.ErrorList
	for i, o := range old {
		if o.State.Terminated == nil || (o.State.Terminated.ExitCode != 0 && policy == corev1.RestartPolicyOnFailure) {
			continue
		}
		if restartableInit(o.Name, initContainers) {
			continue
		}
		for _, s := range statuses {
			if s.Name == o.Name && s.State.Terminated == nil {
				errs = append(errs, field.Forbidden(fldPath.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
			}
		}
	}
	return errs
}

func restartableInit(name string, containers []corev1.Container) bool {
	for _, c := range containers {
		if c.Name == name {
			return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		}
	}
	return false
}

// validateIPList checks a pod's or node's IP list: every IP valid, no
// duplicate, and at most one IP per family. whole is reported as the value
// of a family error.
func validateIPList(ips []string, fldPath *field.Path, whole any) field.ErrorList {
	var errs field.ErrorList
	for i, ip := range ips {
		errs = append(errs, validation.IsValidIP(fldPath.Index(i), ip)...)
	}
	if len(ips) < 2 || len(errs) > 0 {
		return errs
	}
	v4, v6 := 0, 0
	seen := map[string]bool{}
	for i, ip := range ips {
		if addr, err := netip.ParseAddr(ip); err == nil && addr.Unmap().Is4() {
			v4++
		} else {
			v6++
		}
		if seen[ip] {
			errs = append(errs, field.Duplicate(fldPath.Index(i), ip))
		}
		seen[ip] = true
	}
	if v4 > 1 || v6 > 1 {
		errs = append(errs, field.Invalid(fldPath, whole, "may specify no more than one IP for each IP family"))
	}
	return errs
}
