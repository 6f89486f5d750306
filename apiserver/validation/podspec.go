package validation

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	isNotPositiveErrorMsg = "must be greater than zero"
	fileModeErrorMsg      = "must be a number between 0 and 0777 (octal), both inclusive"

	// maxDNSNameservers, maxDNSSearchPaths and maxDNSSearchListChars are the
	// resolver limits upstream enforces on dnsConfig.
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

// validatePodSpec checks a PodSpec. isPod is false for the templates of
// controllers, which upstream checks a little more loosely.
func validatePodSpec(spec *corev1.PodSpec, fldPath *field.Path, isPod bool) field.ErrorList {
	var errs field.ErrorList
	if spec.TerminationGracePeriodSeconds == nil {
		errs = append(errs, field.Required(fldPath.Child("terminationGracePeriodSeconds"), ""))
	}
	grace := spec.TerminationGracePeriodSeconds
	hostUsers := spec.HostUsers == nil || *spec.HostUsers

	vols, volErrs := validateVolumes(spec.Volumes, fldPath.Child("volumes"), isPod)
	errs = append(errs, volErrs...)
	errs = append(errs, validateContainers(spec.Containers, vols, grace, fldPath.Child("containers"), spec.RestartPolicy, hostUsers)...)
	errs = append(errs, validateInitContainers(spec.InitContainers, spec.Containers, vols, grace, fldPath.Child("initContainers"), spec.RestartPolicy, hostUsers)...)
	if spec.Resources != nil {
		errs = append(errs, validatePodResources(spec.Resources, fldPath.Child("resources"))...)
	}
	if spec.HostNetwork {
		for i, c := range spec.Containers {
			for j, p := range c.Ports {
				// Templates may leave hostPort 0; the pod defaults it.
				if (isPod || p.HostPort != 0) && p.HostPort != p.ContainerPort {
					errs = append(errs, field.Invalid(fldPath.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"), p.HostPort, "must match `containerPort` when `hostNetwork` is true"))
				}
			}
		}
	}
	errs = append(errs, enumValue(fldPath.Child("restartPolicy"), spec.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever})...)
	errs = append(errs, enumValue(fldPath.Child("dnsPolicy"), spec.DNSPolicy, []corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone})...)
	errs = append(errs, metav1validation.ValidateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	errs = append(errs, validatePodSecurityContext(spec, fldPath)...)
	for i, s := range spec.ImagePullSecrets {
		if s != (corev1.LocalObjectReference{Name: s.Name}) {
			errs = append(errs, field.Invalid(fldPath.Child("imagePullSecrets").Index(i), s, "only name may be set"))
		}
	}
	errs = append(errs, validateAffinity(spec.Affinity, fldPath.Child("affinity"))...)
	errs = append(errs, validateDNSConfig(spec.DNSConfig, spec.DNSPolicy, fldPath.Child("dnsConfig"))...)
	for i, g := range spec.ReadinessGates {
		errs = append(errs, qualifiedName(string(g.ConditionType), fldPath.Child("readinessGates").Index(i).Child("conditionType"))...)
	}
	seenGates := sets.New[string]()
	for i, g := range spec.SchedulingGates {
		p := fldPath.Child("schedulingGates").Index(i)
		errs = append(errs, qualifiedName(g.Name, p)...)
		if seenGates.Has(g.Name) {
			errs = append(errs, field.Duplicate(p, g.Name))
		}
		seenGates.Insert(g.Name)
	}
	errs = append(errs, validateTopologySpreadConstraints(spec.TopologySpreadConstraints, fldPath.Child("topologySpreadConstraints"))...)
	if !hostUsers {
		// upstream spells these two paths with capitals.
		for _, f := range []struct {
			set  bool
			path *field.Path
		}{{spec.HostNetwork, fldPath.Child("hostNetwork")}, {spec.HostPID, fldPath.Child("HostPID")}, {spec.HostIPC, fldPath.Child("HostIPC")}} {
			if f.set {
				errs = append(errs, field.Forbidden(f.path, "when `pod.Spec.HostUsers` is false"))
			}
		}
	}
	if spec.ServiceAccountName != "" {
		errs = append(errs, nameErrs(apimachineryvalidation.ValidateServiceAccountName, spec.ServiceAccountName, fldPath.Child("serviceAccountName"))...)
	}
	if spec.NodeName != "" {
		errs = append(errs, nameErrs(apimachineryvalidation.NameIsDNSSubdomain, spec.NodeName, fldPath.Child("nodeName"))...)
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && (*d < 1 || *d > math.MaxInt32) {
		errs = append(errs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), *d, validation.InclusiveRangeError(1, math.MaxInt32)))
	}
	if spec.Hostname != "" {
		errs = append(errs, dnsLabel(spec.Hostname, fldPath.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		errs = append(errs, dnsLabel(spec.Subdomain, fldPath.Child("subdomain"))...)
	}
	errs = append(errs, validateTolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	for i, a := range spec.HostAliases {
		p := fldPath.Child("hostAliases").Index(i)
		errs = append(errs, validation.IsValidIP(p.Child("ip"), a.IP)...)
		for j, h := range a.Hostnames {
			errs = append(errs, dnsSubdomain(h, p.Child("hostnames").Index(j))...)
		}
	}
	if spec.PriorityClassName != "" {
		errs = append(errs, nameErrs(apimachineryvalidation.NameIsDNSSubdomain, spec.PriorityClassName, fldPath.Child("priorityClassName"))...)
	}
	if spec.RuntimeClassName != nil {
		errs = append(errs, nameErrs(apimachineryvalidation.NameIsDNSSubdomain, *spec.RuntimeClassName, fldPath.Child("runtimeClassName"))...)
	}
	if spec.PreemptionPolicy != nil {
		errs = append(errs, enumValue(fldPath.Child("preemptionPolicy"), *spec.PreemptionPolicy, []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever})...)
	}
	if spec.Overhead != nil {
		errs = append(errs, validateResourceRequirements(&corev1.ResourceRequirements{Limits: spec.Overhead}, containerResourceName, fldPath.Child("overhead"))...)
	}
	if spec.OS != nil {
		if spec.OS.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("os", "name"), "cannot be empty"))
		} else if spec.OS.Name != corev1.Linux && spec.OS.Name != corev1.Windows {
			errs = append(errs, field.NotSupported(fldPath.Child("os"), spec.OS.Name, []corev1.OSName{corev1.Linux, corev1.Windows}))
		}
	}
	return errs
}

// validatePodTemplateSpec checks the pod template of a controller.
func validatePodTemplateSpec(t *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(t.Labels, fldPath.Child("labels"))
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(t.Annotations, fldPath.Child("annotations"))...)
	errs = append(errs, validatePodSpec(&t.Spec, fldPath.Child("spec"), false)...)
	if len(t.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(fldPath.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

// validateTemplateForController checks a controller's template: that its
// labels match the selector, that it is a valid template, and that its pods
// run for ever (restartPolicy Always, no deadline). kind names the
// controller in the activeDeadlineSeconds message.
func validateTemplateForController(t *corev1.PodTemplateSpec, selector labels.Selector, kind string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t == nil {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if !selector.Empty() && !selector.Matches(labels.Set(t.Labels)) {
		errs = append(errs, field.Invalid(fldPath.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`"))
	}
	errs = append(errs, validatePodTemplateSpec(t, fldPath)...)
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(fldPath.Child("spec", "restartPolicy"), t.Spec.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("spec", "activeDeadlineSeconds"), fmt.Sprintf("activeDeadlineSeconds in %s is not Supported", kind)))
	}
	return errs
}

func validateContainers(containers []corev1.Container, vols map[string]corev1.VolumeSource, grace *int64, fldPath *field.Path, restartPolicy corev1.RestartPolicy, hostUsers bool) field.ErrorList {
	if len(containers) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range containers {
		c := &containers[i]
		p := fldPath.Index(i)
		errs = append(errs, validateContainerCommon(c, vols, p, restartPolicy, hostUsers)...)
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		} else {
			names.Insert(c.Name)
		}
		if c.Lifecycle != nil {
			errs = append(errs, validateLifecycle(c.Lifecycle, grace, p.Child("lifecycle"))...)
		}
		errs = append(errs, validateProbes(c, grace, p)...)
		if c.RestartPolicy != nil {
			errs = append(errs, field.Forbidden(p.Child("restartPolicy"), "may not be set for non-init containers"))
		}
	}
	return append(errs, hostPortConflicts(containers, fldPath)...)
}

func validateInitContainers(containers, regular []corev1.Container, vols map[string]corev1.VolumeSource, grace *int64, fldPath *field.Path, restartPolicy corev1.RestartPolicy, hostUsers bool) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for _, c := range regular {
		names.Insert(c.Name)
	}
	for i := range containers {
		c := &containers[i]
		p := fldPath.Index(i)
		errs = append(errs, validateContainerCommon(c, vols, p, restartPolicy, hostUsers)...)
		sidecar := false
		if c.RestartPolicy != nil {
			sidecar = *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
			if !sidecar {
				errs = append(errs, field.NotSupported(p.Child("restartPolicy"), *c.RestartPolicy, []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways}))
			}
		}
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		} else if c.Name != "" {
			names.Insert(c.Name)
		}
		// Init containers run one at a time, so only their own ports clash.
		errs = append(errs, hostPortConflicts([]corev1.Container{*c}, fldPath)...)
		if sidecar {
			if c.Lifecycle != nil {
				errs = append(errs, validateLifecycle(c.Lifecycle, grace, p.Child("lifecycle"))...)
			}
			errs = append(errs, validateProbes(c, grace, p)...)
			continue
		}
		for _, f := range []struct {
			name string
			set  bool
		}{{"lifecycle", c.Lifecycle != nil}, {"livenessProbe", c.LivenessProbe != nil}, {"readinessProbe", c.ReadinessProbe != nil}, {"startupProbe", c.StartupProbe != nil}} {
			if f.set {
				errs = append(errs, field.Forbidden(p.Child(f.name), "may not be set for init containers without restartPolicy=Always"))
			}
		}
	}
	return errs
}

// validateContainerCommon holds the checks every kind of container gets.
func validateContainerCommon(c *corev1.Container, vols map[string]corev1.VolumeSource, p *field.Path, restartPolicy corev1.RestartPolicy, hostUsers bool) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		errs = append(errs, dnsLabel(c.Name, p.Child("name"))...)
	}
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	}
	errs = append(errs, enumValue(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy, []corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError})...)
	errs = append(errs, validateContainerPorts(c.Ports, p.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, p.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, p.Child("envFrom"))...)
	errs = append(errs, validateVolumeMounts(c, vols, p.Child("volumeMounts"))...)
	errs = append(errs, validateVolumeDevices(c.VolumeDevices, vols, p.Child("volumeDevices"))...)
	errs = append(errs, enumValue(p.Child("imagePullPolicy"), c.ImagePullPolicy, []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever})...)
	errs = append(errs, validateResourceRequirements(&c.Resources, containerResourceName, p.Child("resources"))...)
	errs = append(errs, validateResizePolicy(c.ResizePolicy, p.Child("resizePolicy"), restartPolicy)...)
	errs = append(errs, validateSecurityContext(c.SecurityContext, p.Child("securityContext"), hostUsers)...)
	return errs
}

var supportedPortProtocols = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}

func validateContainerPorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := fldPath.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) != 0 {
				for _, msg := range msgs {
					errs = append(errs, field.Invalid(p.Child("name"), port.Name, msg))
				}
			} else if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			} else {
				names.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(p.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(p.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(p.Child("hostPort"), port.HostPort, msg))
			}
		}
		errs = append(errs, enumValue(p.Child("protocol"), port.Protocol, supportedPortProtocols)...)
	}
	return errs
}

// hostPortConflicts reports a host port bound twice with the same protocol
// and host IP.
func hostPortConflicts(containers []corev1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, c := range containers {
		for j, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if seen.Has(key) {
				errs = append(errs, field.Duplicate(fldPath.Index(i).Child("ports").Index(j).Child("hostPort"), key))
			}
			seen.Insert(key)
		}
	}
	return errs
}

// validEnvFieldPaths are the pod fields an env var may read through
// fieldRef; volumes allow a different set.
var validEnvFieldPaths = sets.New(
	"metadata.name", "metadata.namespace", "metadata.uid",
	"spec.nodeName", "spec.serviceAccountName",
	"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
)

var validVolumeFieldPaths = sets.New(
	"metadata.name", "metadata.namespace", "metadata.labels", "metadata.annotations", "metadata.uid",
)

// convertibleFieldPaths are the v1 pod field labels the downward API knows
// at all; others fail conversion before the per-use check.
var convertibleFieldPaths = sets.New(
	"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
	"spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
	"status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
)

var validResourceFieldPaths = sets.New(
	"limits.cpu", "limits.memory", "limits.ephemeral-storage",
	"requests.cpu", "requests.memory", "requests.ephemeral-storage",
)

func validateEnv(vars []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range vars {
		p := fldPath.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), ev.Name, msg))
			}
		}
		errs = append(errs, validateEnvVarValueFrom(ev, p.Child("valueFrom"))...)
	}
	return errs
}

func validateEnvVarValueFrom(ev corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	from := ev.ValueFrom
	if from == nil {
		return nil
	}
	var errs field.ErrorList
	sources := 0
	if from.FieldRef != nil {
		sources++
		errs = append(errs, validateObjectFieldSelector(from.FieldRef, validEnvFieldPaths, fldPath.Child("fieldRef"))...)
	}
	if from.ResourceFieldRef != nil {
		sources++
		errs = append(errs, validateResourceFieldSelector(from.ResourceFieldRef, false, fldPath.Child("resourceFieldRef"))...)
	}
	if from.ConfigMapKeyRef != nil {
		sources++
		errs = append(errs, validateKeySelector(from.ConfigMapKeyRef.Name, from.ConfigMapKeyRef.Key, fldPath.Child("configMapKeyRef"))...)
	}
	if from.SecretKeyRef != nil {
		sources++
		errs = append(errs, validateKeySelector(from.SecretKeyRef.Name, from.SecretKeyRef.Key, fldPath.Child("secretKeyRef"))...)
	}
	if from.FileKeyRef != nil {
		sources++
		errs = append(errs, validateFileKeySelector(from.FileKeyRef, fldPath.Child("fileKeyRef"))...)
	}
	switch {
	case sources == 0:
		errs = append(errs, field.Invalid(fldPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
	case ev.Value != "":
		errs = append(errs, field.Invalid(fldPath, "", "may not be specified when `value` is not empty"))
	case sources > 1:
		errs = append(errs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
	}
	return errs
}

func validateObjectFieldSelector(fs *corev1.ObjectFieldSelector, allowed sets.Set[string], fldPath *field.Path) field.ErrorList {
	if fs.APIVersion == "" {
		return field.ErrorList{field.Required(fldPath.Child("apiVersion"), "")}
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(fldPath.Child("fieldPath"), "")}
	}
	if fs.APIVersion != "v1" {
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath, fmt.Sprintf("error converting fieldPath: unsupported pod version: %s", fs.APIVersion))}
	}
	path, subscript, subscripted := splitSubscriptedPath(fs.FieldPath)
	if !convertibleFieldPaths.Has(path) {
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath, fmt.Sprintf("error converting fieldPath: field label not supported: %s", fs.FieldPath))}
	}
	if subscripted {
		switch path {
		case "metadata.annotations":
			return qualifiedName(strings.ToLower(subscript), fldPath)
		case "metadata.labels":
			return qualifiedName(subscript, fldPath)
		default:
			return field.ErrorList{field.Invalid(fldPath, path, "does not support subscript")}
		}
	}
	if !allowed.Has(path) {
		return field.ErrorList{field.NotSupported(fldPath.Child("fieldPath"), path, sets.List(allowed))}
	}
	return nil
}

// splitSubscriptedPath splits "metadata.labels['key']" into its path and
// subscript.
func splitSubscriptedPath(fieldPath string) (path, subscript string, ok bool) {
	if !strings.HasSuffix(fieldPath, "']") {
		return fieldPath, "", false
	}
	s := strings.TrimSuffix(fieldPath, "']")
	parts := strings.SplitN(s, "['", 2)
	if len(parts) < 2 || len(parts[0]) == 0 {
		return fieldPath, "", false
	}
	return parts[0], parts[1], true
}

var (
	divisorsCPU    = sets.New("1m", "1")
	divisorsMemory = sets.New("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")
)

func validateResourceFieldSelector(fs *corev1.ResourceFieldSelector, volume bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	hugePages := strings.HasPrefix(fs.Resource, "requests.hugepages-") || strings.HasPrefix(fs.Resource, "limits.hugepages-")
	switch {
	case volume && fs.ContainerName == "":
		errs = append(errs, field.Required(fldPath.Child("containerName"), ""))
	case fs.Resource == "":
		errs = append(errs, field.Required(fldPath.Child("resource"), ""))
	case !validResourceFieldPaths.Has(fs.Resource) && !hugePages:
		errs = append(errs, field.NotSupported(fldPath.Child("resource"), fs.Resource, sets.List(validResourceFieldPaths)))
	}
	if fs.Divisor.IsZero() {
		return errs
	}
	d := fs.Divisor.String()
	switch {
	case (fs.Resource == "limits.cpu" || fs.Resource == "requests.cpu") && !divisorsCPU.Has(d):
		errs = append(errs, field.Invalid(fldPath.Child("divisor"), fs.Resource, "only divisor's values 1m and 1 are supported with the cpu resource"))
	case (fs.Resource == "limits.memory" || fs.Resource == "requests.memory") && !divisorsMemory.Has(d):
		errs = append(errs, field.Invalid(fldPath.Child("divisor"), fs.Resource, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource"))
	case (fs.Resource == "limits.ephemeral-storage" || fs.Resource == "requests.ephemeral-storage") && !divisorsMemory.Has(d):
		errs = append(errs, field.Invalid(fldPath.Child("divisor"), fs.Resource, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the local ephemeral storage resource"))
	case hugePages && !divisorsMemory.Has(d):
		errs = append(errs, field.Invalid(fldPath.Child("divisor"), fs.Resource, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource"))
	}
	return errs
}

// validateKeySelector checks a configMapKeyRef or secretKeyRef.
func validateKeySelector(name, key string, fldPath *field.Path) field.ErrorList {
	errs := nameErrs(apimachineryvalidation.NameIsDNSSubdomain, name, fldPath.Child("name"))
	if key == "" {
		return append(errs, field.Required(fldPath.Child("key"), ""))
	}
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(fldPath.Child("key"), key, msg))
	}
	return errs
}

func validateFileKeySelector(s *corev1.FileKeySelector, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.VolumeName == "" {
		errs = append(errs, field.Required(fldPath.Child("volumeName"), ""))
	}
	if s.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	} else {
		errs = append(errs, localNonReservedPath(s.Path, fldPath.Child("path"))...)
	}
	if s.Key == "" {
		errs = append(errs, field.Required(fldPath.Child("key"), ""))
	}
	return errs
}

func validateEnvFrom(sources []corev1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range sources {
		p := fldPath.Index(i)
		if ev.Prefix != "" {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Prefix) {
				errs = append(errs, field.Invalid(p.Child("prefix"), ev.Prefix, msg))
			}
		}
		n := 0
		for _, ref := range []struct {
			set  bool
			name string
			path *field.Path
		}{
			{ev.ConfigMapRef != nil, refName(ev.ConfigMapRef), p.Child("configMapRef")},
			{ev.SecretRef != nil, secretRefName(ev.SecretRef), p.Child("secretRef")},
		} {
			if !ref.set {
				continue
			}
			n++
			if ref.name == "" {
				errs = append(errs, field.Required(ref.path.Child("name"), ""))
			} else {
				for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(ref.name, true) {
					errs = append(errs, field.Invalid(ref.path.Child("name"), ref.name, msg))
				}
			}
		}
		switch {
		case n == 0:
			errs = append(errs, field.Invalid(fldPath, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			errs = append(errs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

func refName(r *corev1.ConfigMapEnvSource) string {
	if r == nil {
		return ""
	}
	return r.Name
}

func secretRefName(r *corev1.SecretEnvSource) string {
	if r == nil {
		return ""
	}
	return r.Name
}

func validateVolumeMounts(c *corev1.Container, vols map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	devices := map[string]string{}
	for _, d := range c.VolumeDevices {
		devices[d.Name] = d.DevicePath
	}
	mountPaths := sets.New[string]()
	for i, m := range c.VolumeMounts {
		p := fldPath.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if _, ok := vols[m.Name]; !ok {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		}
		if mountPaths.Has(m.MountPath) {
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountPaths.Insert(m.MountPath)
		if _, ok := devices[m.Name]; ok {
			errs = append(errs, field.Invalid(p.Child("name"), m.Name, "must not already exist in volumeDevices"))
		}
		for _, dp := range devices {
			if dp == m.MountPath {
				errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must not already exist as a path in volumeDevices"))
			}
		}
		if v, ok := vols[m.Name]; ok && v.Image != nil {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(p.Child("subPath"), m.SubPath, "not allowed in image volume sources"))
			}
			if m.SubPathExpr != "" {
				errs = append(errs, field.Invalid(p.Child("subPathExpr"), m.SubPathExpr, "not allowed in image volume sources"))
			}
		}
		// upstream reports subPath problems without the mount's index.
		if m.SubPath != "" {
			errs = append(errs, localDescendingPath(m.SubPath, fldPath.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(p.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, localDescendingPath(m.SubPathExpr, fldPath.Child("subPathExpr"))...)
		}
		if m.MountPropagation != nil {
			mp := fldPath.Child("mountPropagation")
			supported := []corev1.MountPropagationMode{corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone}
			errs = append(errs, enumValue(mp, *m.MountPropagation, supported)...)
			privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
			if *m.MountPropagation == corev1.MountPropagationBidirectional && !privileged {
				errs = append(errs, field.Forbidden(mp, "Bidirectional mount propagation is available only to privileged containers"))
			}
		}
		if rro := m.RecursiveReadOnly; rro != nil {
			rp := fldPath.Child("recursiveReadOnly")
			switch *rro {
			case corev1.RecursiveReadOnlyDisabled:
			case corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible:
				if !m.ReadOnly {
					errs = append(errs, field.Forbidden(rp, "may only be specified when readOnly is true"))
				}
				if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
					errs = append(errs, field.Forbidden(rp, "may only be specified when mountPropagation is None or not specified"))
				}
			default:
				errs = append(errs, field.NotSupported(rp, *rro, []corev1.RecursiveReadOnlyMode{corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible}))
			}
		}
	}
	return errs
}

func validateVolumeDevices(devices []corev1.VolumeDevice, vols map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names, paths := sets.New[string](), sets.New[string]()
	for i, d := range devices {
		p := fldPath.Index(i)
		if d.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if names.Has(d.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "must be unique"))
		}
		names.Insert(d.Name)
		if v, ok := vols[d.Name]; !ok {
			errs = append(errs, field.NotFound(p.Child("name"), d.Name))
		} else if v.PersistentVolumeClaim == nil && v.Ephemeral == nil {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
		}
		if d.DevicePath == "" {
			errs = append(errs, field.Required(p.Child("devicePath"), ""))
		}
		if paths.Has(d.DevicePath) {
			errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "must be unique"))
		}
		paths.Insert(d.DevicePath)
	}
	return errs
}

func validateResizePolicy(policies []corev1.ContainerResizePolicy, fldPath *field.Path, restartPolicy corev1.RestartPolicy) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[corev1.ResourceName]()
	for i, p := range policies {
		if seen.Has(p.ResourceName) {
			errs = append(errs, field.Duplicate(fldPath.Index(i), p.ResourceName))
		}
		seen.Insert(p.ResourceName)
		errs = append(errs, enumValue(fldPath, p.ResourceName, []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory})...)
		errs = append(errs, enumValue(fldPath, p.RestartPolicy, []corev1.ResourceResizeRestartPolicy{corev1.NotRequired, corev1.RestartContainer})...)
		if restartPolicy == corev1.RestartPolicyNever && p.RestartPolicy != corev1.NotRequired {
			errs = append(errs, field.Invalid(fldPath, p.RestartPolicy, "must be 'NotRequired' when `restartPolicy` is 'Never'"))
		}
	}
	return errs
}

func validateProbes(c *corev1.Container, grace *int64, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pr := c.LivenessProbe; pr != nil {
		errs = append(errs, validateProbe(pr, grace, p.Child("livenessProbe"))...)
		if pr.SuccessThreshold != 1 {
			errs = append(errs, field.Invalid(p.Child("livenessProbe", "successThreshold"), pr.SuccessThreshold, "must be 1"))
		}
	}
	if pr := c.ReadinessProbe; pr != nil {
		errs = append(errs, validateProbe(pr, grace, p.Child("readinessProbe"))...)
		if pr.TerminationGracePeriodSeconds != nil {
			errs = append(errs, field.Invalid(p.Child("readinessProbe", "terminationGracePeriodSeconds"), pr.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	if pr := c.StartupProbe; pr != nil {
		errs = append(errs, validateProbe(pr, grace, p.Child("startupProbe"))...)
		if pr.SuccessThreshold != 1 {
			errs = append(errs, field.Invalid(p.Child("startupProbe", "successThreshold"), pr.SuccessThreshold, "must be 1"))
		}
	}
	return errs
}

func validateProbe(pr *corev1.Probe, grace *int64, fldPath *field.Path) field.ErrorList {
	h := pr.ProbeHandler
	errs := validateHandler(handler{Exec: h.Exec, HTTPGet: h.HTTPGet, TCPSocket: h.TCPSocket, GRPC: h.GRPC}, grace, fldPath)
	for _, f := range []struct {
		name  string
		value int32
	}{{"initialDelaySeconds", pr.InitialDelaySeconds}, {"timeoutSeconds", pr.TimeoutSeconds}, {"periodSeconds", pr.PeriodSeconds}, {"successThreshold", pr.SuccessThreshold}, {"failureThreshold", pr.FailureThreshold}} {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(f.value), fldPath.Child(f.name))...)
	}
	if g := pr.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	return errs
}

// handler is the union of probe and lifecycle actions.
type handler struct {
	Exec      *corev1.ExecAction
	HTTPGet   *corev1.HTTPGetAction
	TCPSocket *corev1.TCPSocketAction
	GRPC      *corev1.GRPCAction
	Sleep     *corev1.SleepAction
}

func validateLifecycle(l *corev1.Lifecycle, grace *int64, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, h := range []struct {
		name string
		h    *corev1.LifecycleHandler
	}{{"postStart", l.PostStart}, {"preStop", l.PreStop}} {
		if h.h != nil {
			errs = append(errs, validateHandler(handler{Exec: h.h.Exec, HTTPGet: h.h.HTTPGet, TCPSocket: h.h.TCPSocket, Sleep: h.h.Sleep}, grace, fldPath.Child(h.name))...)
		}
	}
	return errs
}

func validateHandler(h handler, grace *int64, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	check := func(set bool, name string, fn func(*field.Path) field.ErrorList) {
		if !set {
			return
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 handler type"))
			return
		}
		n++
		errs = append(errs, fn(fldPath.Child(name))...)
	}
	check(h.Exec != nil, "exec", func(p *field.Path) field.ErrorList {
		if len(h.Exec.Command) == 0 {
			return field.ErrorList{field.Required(p.Child("command"), "")}
		}
		return nil
	})
	check(h.HTTPGet != nil, "httpGet", func(p *field.Path) field.ErrorList {
		var errs field.ErrorList
		if h.HTTPGet.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		}
		errs = append(errs, portNumOrName(h.HTTPGet.Port, p.Child("port"))...)
		if s := h.HTTPGet.Scheme; s != corev1.URISchemeHTTP && s != corev1.URISchemeHTTPS {
			errs = append(errs, field.NotSupported(p.Child("scheme"), s, []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}))
		}
		for _, header := range h.HTTPGet.HTTPHeaders {
			for _, msg := range validation.IsHTTPHeaderName(header.Name) {
				errs = append(errs, field.Invalid(p.Child("httpHeaders"), header.Name, msg))
			}
		}
		return errs
	})
	check(h.TCPSocket != nil, "tcpSocket", func(p *field.Path) field.ErrorList {
		return portNumOrName(h.TCPSocket.Port, p.Child("port"))
	})
	check(h.GRPC != nil, "grpc", func(p *field.Path) field.ErrorList {
		return portNumOrName(intstr.FromInt32(h.GRPC.Port), p.Child("port"))
	})
	check(h.Sleep != nil, "sleep", func(p *field.Path) field.ErrorList {
		if grace != nil && (h.Sleep.Seconds < 0 || h.Sleep.Seconds > *grace) {
			return field.ErrorList{field.Invalid(p, h.Sleep.Seconds, fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *grace))}
		}
		return nil
	})
	if n == 0 {
		errs = append(errs, field.Required(fldPath, "must specify a handler type"))
	}
	return errs
}

func portNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if port.Type == intstr.String {
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(fldPath, port.StrVal, msg))
		}
		return errs
	}
	for _, msg := range validation.IsValidPortNum(port.IntValue()) {
		errs = append(errs, field.Invalid(fldPath, port.IntValue(), msg))
	}
	return errs
}

func validateSecurityContext(sc *corev1.SecurityContext, fldPath *field.Path, hostUsers bool) field.ErrorList {
	if sc == nil {
		return nil
	}
	var errs field.ErrorList
	if sc.RunAsUser != nil {
		for _, msg := range validation.IsValidUserID(*sc.RunAsUser) {
			errs = append(errs, field.Invalid(fldPath.Child("runAsUser"), *sc.RunAsUser, msg))
		}
	}
	if sc.RunAsGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.RunAsGroup) {
			errs = append(errs, field.Invalid(fldPath.Child("runAsGroup"), *sc.RunAsGroup, msg))
		}
	}
	if sc.ProcMount != nil {
		errs = append(errs, enumValue(fldPath.Child("procMount"), *sc.ProcMount, []corev1.ProcMountType{corev1.DefaultProcMount, corev1.UnmaskedProcMount})...)
		if hostUsers && *sc.ProcMount == corev1.UnmaskedProcMount {
			errs = append(errs, field.Invalid(fldPath.Child("procMount"), sc.ProcMount, "`hostUsers` must be false to use `Unmasked`"))
		}
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if c == "CAP_SYS_ADMIN" {
					errs = append(errs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	return errs
}

var sysctlRegexp = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

// sysctlMaxLength is the longest sysctl name upstream accepts.
const sysctlMaxLength = 253

func validatePodSecurityContext(spec *corev1.PodSpec, specFldPath *field.Path) field.ErrorList {
	sc := spec.SecurityContext
	if sc == nil {
		return nil
	}
	fldPath := specFldPath.Child("securityContext")
	var errs field.ErrorList
	if sc.FSGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.FSGroup) {
			errs = append(errs, field.Invalid(fldPath.Child("fsGroup"), *sc.FSGroup, msg))
		}
	}
	if sc.RunAsUser != nil {
		for _, msg := range validation.IsValidUserID(*sc.RunAsUser) {
			errs = append(errs, field.Invalid(fldPath.Child("runAsUser"), *sc.RunAsUser, msg))
		}
	}
	if sc.RunAsGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.RunAsGroup) {
			errs = append(errs, field.Invalid(fldPath.Child("runAsGroup"), *sc.RunAsGroup, msg))
		}
	}
	for i, gid := range sc.SupplementalGroups {
		for _, msg := range validation.IsValidGroupID(gid) {
			errs = append(errs, field.Invalid(fldPath.Child("supplementalGroups").Index(i), gid, msg))
		}
	}
	if spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace && spec.HostPID {
		// upstream keeps this field in the security context internally.
		errs = append(errs, field.Invalid(fldPath.Child("shareProcessNamespace"), *spec.ShareProcessNamespace, "ShareProcessNamespace and HostPID cannot both be enabled"))
	}
	names := sets.New[string]()
	for i, s := range sc.Sysctls {
		p := fldPath.Child("sysctls").Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(p, ""))
		case len(s.Name) > sysctlMaxLength || !sysctlRegexp.MatchString(s.Name):
			errs = append(errs, field.Invalid(p, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlRegexp)))
		case names.Has(s.Name):
			errs = append(errs, field.Duplicate(p, s.Name))
		}
		names.Insert(s.Name)
	}
	if sc.FSGroupChangePolicy != nil {
		errs = append(errs, enumValue(fldPath.Child("fsGroupChangePolicy"), *sc.FSGroupChangePolicy, []corev1.PodFSGroupChangePolicy{corev1.FSGroupChangeAlways, corev1.FSGroupChangeOnRootMismatch})...)
	}
	errs = append(errs, validateSeccompProfile(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	if sc.SupplementalGroupsPolicy != nil {
		errs = append(errs, enumValue(fldPath.Child("supplementalGroupsPolicy"), *sc.SupplementalGroupsPolicy, []corev1.SupplementalGroupsPolicy{corev1.SupplementalGroupsPolicyMerge, corev1.SupplementalGroupsPolicyStrict})...)
	}
	if sc.SELinuxChangePolicy != nil {
		errs = append(errs, enumValue(fldPath.Child("seLinuxChangePolicy"), *sc.SELinuxChangePolicy, []corev1.PodSELinuxChangePolicy{corev1.SELinuxChangePolicyMountOption, corev1.SELinuxChangePolicyRecursive})...)
	}
	return errs
}

func validateSeccompProfile(sp *corev1.SeccompProfile, fldPath *field.Path) field.ErrorList {
	if sp == nil {
		return nil
	}
	var errs field.ErrorList
	switch sp.Type {
	case corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined:
	case "":
		errs = append(errs, field.Required(fldPath.Child("type"), "type is required when seccompProfile is set"))
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("type"), sp.Type, []corev1.SeccompProfileType{corev1.SeccompProfileTypeLocalhost, corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined}))
	}
	if sp.Type == corev1.SeccompProfileTypeLocalhost {
		if sp.LocalhostProfile == nil {
			errs = append(errs, field.Required(fldPath.Child("localhostProfile"), "must be set when seccomp type is Localhost"))
		} else {
			errs = append(errs, localDescendingPath(*sp.LocalhostProfile, fldPath.Child("localhostProfile"))...)
		}
	} else if sp.LocalhostProfile != nil {
		errs = append(errs, field.Invalid(fldPath.Child("localhostProfile"), sp, "can only be set when seccomp type is Localhost"))
	}
	return errs
}

func validateDNSConfig(cfg *corev1.PodDNSConfig, policy corev1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	if policy == corev1.DNSNone {
		if cfg == nil {
			return field.ErrorList{field.Required(fldPath, fmt.Sprintf("must provide `dnsConfig` when `dnsPolicy` is %s", corev1.DNSNone))}
		}
		if len(cfg.Nameservers) == 0 {
			return field.ErrorList{field.Required(fldPath.Child("nameservers"), fmt.Sprintf("must provide at least one DNS nameserver when `dnsPolicy` is %s", corev1.DNSNone))}
		}
	}
	if cfg == nil {
		return nil
	}
	var errs field.ErrorList
	if len(cfg.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(fldPath.Child("nameservers"), cfg.Nameservers, fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers)))
	}
	for i, ns := range cfg.Nameservers {
		errs = append(errs, validation.IsValidIP(fldPath.Child("nameservers").Index(i), ns)...)
	}
	if len(cfg.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(fldPath.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v search paths", maxDNSSearchPaths)))
	}
	if len(strings.Join(cfg.Searches, " ")) > maxDNSSearchListChars {
		errs = append(errs, field.Invalid(fldPath.Child("searches"), cfg.Searches, fmt.Sprintf("must not have more than %v characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, s := range cfg.Searches {
		// A lone "." and underscores are allowed, as in RelaxedDNSSearchValidation.
		if s == "." {
			continue
		}
		s = strings.TrimSuffix(s, ".")
		for _, msg := range validation.IsDNS1123SubdomainWithUnderscore(s) {
			errs = append(errs, field.Invalid(fldPath.Child("searches").Index(i), s, msg))
		}
	}
	for i, o := range cfg.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}

// enumValue reports an empty value as Required and any value outside valid
// as NotSupported, the way upstream checks its enums.
func enumValue[T ~string](fldPath *field.Path, value T, valid []T) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	for _, v := range valid {
		if v == value {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(fldPath, value, valid)}
}

func dnsLabel(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func dnsSubdomain(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func qualifiedName(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range content.IsLabelKey(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func labelValue(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range content.IsLabelValue(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func nameErrs(fn apimachineryvalidation.ValidateNameFunc, name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range fn(name, false) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	return errs
}
