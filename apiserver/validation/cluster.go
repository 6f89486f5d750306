package validation

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// nodeCIDRs is the node's pod CIDR list; a v1 client may set only the
// singular podCIDR.
func nodeCIDRs(spec *corev1.NodeSpec) []string {
	if len(spec.PodCIDRs) == 0 && spec.PodCIDR != "" {
		return []string{spec.PodCIDR}
	}
	return spec.PodCIDRs
}

func validateNode(node *corev1.Node) field.ErrorList {
	// upstream reports node taints under metadata.
	errs := validateTaints(node.Spec.Taints, metaPath.Child("taints"))
	errs = append(errs, validateNodeResources(node)...)
	if len(node.Spec.PodCIDRs) == 0 {
		if node.Spec.PodCIDR != "" {
			errs = append(errs, validation.IsValidCIDR(specPath.Child("podCIDR"), node.Spec.PodCIDR)...)
		}
		return errs
	}
	p := specPath.Child("podCIDRs")
	var cidrErrs field.ErrorList
	for i, c := range node.Spec.PodCIDRs {
		cidrErrs = append(cidrErrs, validation.IsValidCIDR(p.Index(i), c)...)
	}
	if len(cidrErrs) > 0 || len(node.Spec.PodCIDRs) < 2 {
		return append(errs, cidrErrs...)
	}
	v4, v6 := 0, 0
	seen := map[string]bool{}
	for i, c := range node.Spec.PodCIDRs {
		if strings.Contains(c, ":") {
			v6++
		} else {
			v4++
		}
		if seen[c] {
			errs = append(errs, field.Duplicate(p.Index(i), c))
		}
		seen[c] = true
	}
	if v4 > 1 || v6 > 1 {
		errs = append(errs, field.Invalid(p, node.Spec.PodCIDRs, "may specify no more than one CIDR for each IP family"))
	}
	return errs
}

func validateNodeResources(node *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		name      string
		resources corev1.ResourceList
	}{{"capacity", node.Status.Capacity}, {"allocatable", node.Status.Allocatable}} {
		for name, q := range list.resources {
			// upstream uses the resource name as a path segment here.
			errs = append(errs, validateQuantity(name, q, statusPath.Child(list.name, string(name)))...)
		}
	}
	return errs
}

// validateNodeUpdate covers updates through both nodes and nodes/status:
// the node must stay valid, and its pod CIDRs and provider ID may only be
// set once.
func validateNodeUpdate(node, old *corev1.Node) field.ErrorList {
	errs := validateNode(node)
	seen := map[corev1.NodeAddress]bool{}
	for i, a := range node.Status.Addresses {
		if seen[a] {
			errs = append(errs, field.Duplicate(statusPath.Child("addresses").Index(i), a))
		}
		seen[a] = true
	}
	oldCIDRs, newCIDRs := nodeCIDRs(&old.Spec), nodeCIDRs(&node.Spec)
	if len(oldCIDRs) > 0 && !reflect.DeepEqual(oldCIDRs, newCIDRs) {
		errs = append(errs, field.Forbidden(specPath.Child("podCIDRs"), "node updates may not change podCIDR except from \"\" to valid"))
	}
	if old.Spec.ProviderID != "" && old.Spec.ProviderID != node.Spec.ProviderID {
		errs = append(errs, field.Forbidden(specPath.Child("providerID"), "node updates may not change providerID except from \"\" to valid"))
	}
	if node.Spec.DoNotUseExternalID != old.Spec.DoNotUseExternalID {
		errs = append(errs, field.Forbidden(specPath.Child("externalID"), "may not be updated"))
	}
	return errs
}

func validateNamespace(ns *corev1.Namespace) field.ErrorList {
	var errs field.ErrorList
	for _, f := range ns.Spec.Finalizers {
		// upstream reports every finalizer at spec.finalizers, without index.
		p := specPath.Child("finalizers")
		errs = append(errs, apimachineryvalidation.ValidateFinalizerName(string(f), p)...)
		errs = append(errs, kubeFinalizerName(string(f), p)...)
	}
	return errs
}

// validateNamespaceStatus ties the phase to deletion: Active until the
// namespace is deleted, Terminating after.
func validateNamespaceStatus(ns *corev1.Namespace) field.ErrorList {
	p := statusPath.Child("Phase") // upstream capitalises this path
	if ns.DeletionTimestamp.IsZero() {
		if ns.Status.Phase != corev1.NamespaceActive {
			return field.ErrorList{field.Invalid(p, ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty")}
		}
	} else if ns.Status.Phase != corev1.NamespaceTerminating {
		return field.ErrorList{field.Invalid(p, ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty")}
	}
	return nil
}

func validateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	var errs field.ErrorList
	size := 0
	for key, value := range cm.Data {
		p := field.NewPath("data").Key(key)
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(p, key, msg))
		}
		if _, dup := cm.BinaryData[key]; dup {
			errs = append(errs, field.Invalid(p, key, "duplicate of key present in binaryData"))
		}
		size += len(value)
	}
	for key, value := range cm.BinaryData {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(key), key, msg))
		}
		size += len(value)
	}
	if size > corev1.MaxSecretSize {
		// The empty path means the whole object is too large.
		errs = append(errs, field.TooLong(field.NewPath(""), "", corev1.MaxSecretSize))
	}
	return errs
}

func validateConfigMapUpdate(cm, old *corev1.ConfigMap) field.ErrorList {
	var errs field.ErrorList
	if old.Immutable != nil && *old.Immutable {
		if cm.Immutable == nil || !*cm.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
		}
		if !reflect.DeepEqual(cm.Data, old.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
		}
		if !reflect.DeepEqual(cm.BinaryData, old.BinaryData) {
			errs = append(errs, field.Forbidden(field.NewPath("binaryData"), "field is immutable when `immutable` is set"))
		}
	}
	return append(errs, validateConfigMap(cm)...)
}

// validateSecret checks keys, the 1 MiB size limit and the keys each
// well-known secret type requires. Callers merge stringData into data
// first, as upstream's conversion does.
func validateSecret(s *corev1.Secret) field.ErrorList {
	var errs field.ErrorList
	dataPath := field.NewPath("data")
	size := 0
	for key, value := range s.Data {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(dataPath.Key(key), key, msg))
		}
		size += len(value)
	}
	if size > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(dataPath, "", corev1.MaxSecretSize))
	}
	requireJSON := func(key string) {
		b, ok := s.Data[key]
		if !ok {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
			return
		}
		if err := json.Unmarshal(b, &map[string]any{}); err != nil {
			errs = append(errs, field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error()))
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(metaPath.Child("annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		requireJSON(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		requireJSON(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		_, user := s.Data[corev1.BasicAuthUsernameKey]
		_, pass := s.Data[corev1.BasicAuthPasswordKey]
		if !user && !pass {
			errs = append(errs, field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""), field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		for _, key := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
			if _, ok := s.Data[key]; !ok {
				errs = append(errs, field.Required(dataPath.Key(key), ""))
			}
		}
	}
	return errs
}

func validateSecretUpdate(s, old *corev1.Secret) field.ErrorList {
	errs := apimachineryvalidation.ValidateImmutableField(s.Type, old.Type, field.NewPath("type"))
	if old.Immutable != nil && *old.Immutable {
		if s.Immutable == nil || !*s.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
		}
		if !reflect.DeepEqual(s.Data, old.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
		}
	}
	return append(errs, validateSecret(s)...)
}

func validateLeaseSpec(spec *coordinationv1.LeaseSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if d := spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("leaseDurationSeconds"), spec.LeaseDurationSeconds, "must be greater than 0"))
	}
	if t := spec.LeaseTransitions; t != nil && *t < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("leaseTransitions"), spec.LeaseTransitions, "must be greater than or equal to 0"))
	}
	if s := spec.Strategy; s != nil {
		p := fldPath.Child("strategy")
		if !strings.Contains(string(*s), "/") {
			if *s != coordinationv1.OldestEmulationVersion {
				// upstream nests the path once more.
				errs = append(errs, field.NotSupported(p.Child("strategy"), *s, []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}))
			}
		} else {
			errs = append(errs, qualifiedName(string(*s), p.Child("strategy"))...)
		}
	}
	if h := spec.PreferredHolder; h != nil && *h != "" && (spec.Strategy == nil || *spec.Strategy == "") {
		errs = append(errs, field.Forbidden(fldPath.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}

// Priority limits from upstream's scheduling API.
const (
	highestUserDefinablePriority = 1000000000
	systemPriorityClassPrefix    = "system-"
)

// systemPriorityClasses are the only classes allowed the system- prefix,
// with their fixed values.
var systemPriorityClasses = map[string]int32{
	"system-cluster-critical": 2 * highestUserDefinablePriority,
	"system-node-critical":    2*highestUserDefinablePriority + 1000,
}

func validatePriorityClass(pc *schedulingv1.PriorityClass) field.ErrorList {
	var errs field.ErrorList
	if strings.HasPrefix(pc.Name, systemPriorityClassPrefix) {
		var reason string
		value, known := systemPriorityClasses[pc.Name]
		switch {
		case !known:
			reason = fmt.Sprintf("%v is not a known system priority class", pc.Name)
		case pc.Value != value:
			reason = fmt.Sprintf("value of %v PriorityClass must be %v", pc.Name, value)
		case pc.GlobalDefault:
			reason = fmt.Sprintf("globalDefault of %v PriorityClass must be false", pc.Name)
		}
		if reason != "" {
			errs = append(errs, field.Forbidden(metaPath.Child("name"), "priority class names with '"+systemPriorityClassPrefix+"' prefix are reserved for system use only. error: "+reason))
		}
	} else if pc.Value > highestUserDefinablePriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"), fmt.Sprintf("maximum allowed value of a user defined priority is %v", highestUserDefinablePriority)))
	}
	if pc.PreemptionPolicy != nil {
		errs = append(errs, enumValue(field.NewPath("preemptionPolicy"), *pc.PreemptionPolicy, []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever})...)
	}
	return errs
}

func validatePriorityClassUpdate(pc, old *schedulingv1.PriorityClass) field.ErrorList {
	var errs field.ErrorList
	if pc.Value != old.Value {
		errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
	}
	return append(errs, apimachineryvalidation.ValidateImmutableField(pc.PreemptionPolicy, old.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
}

func validatePodDisruptionBudgetSpec(spec *policyv1.PodDisruptionBudgetSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.MinAvailable != nil && spec.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(fldPath, spec, "minAvailable and maxUnavailable cannot be both set"))
	}
	if v := spec.MinAvailable; v != nil {
		errs = append(errs, intOrPercent(*v, fldPath.Child("minAvailable"))...)
		errs = append(errs, notMoreThan100Percent(*v, fldPath.Child("minAvailable"))...)
	}
	if v := spec.MaxUnavailable; v != nil {
		errs = append(errs, intOrPercent(*v, fldPath.Child("maxUnavailable"))...)
		errs = append(errs, notMoreThan100Percent(*v, fldPath.Child("maxUnavailable"))...)
	}
	errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, strictSelector, fldPath.Child("selector"))...)
	if p := spec.UnhealthyPodEvictionPolicy; p != nil && *p != policyv1.IfHealthyBudget && *p != policyv1.AlwaysAllow {
		errs = append(errs, field.NotSupported(fldPath.Child("unhealthyPodEvictionPolicy"), *p, []policyv1.UnhealthyPodEvictionPolicyType{policyv1.AlwaysAllow, policyv1.IfHealthyBudget}))
	}
	return errs
}

func validatePodDisruptionBudgetStatus(s *policyv1.PodDisruptionBudgetStatus, fldPath *field.Path) field.ErrorList {
	errs := metav1validation.ValidateConditions(s.Conditions, fldPath.Child("conditions"))
	for _, f := range []struct {
		name  string
		value int32
	}{{"disruptionsAllowed", s.DisruptionsAllowed}, {"currentHealthy", s.CurrentHealthy}, {"desiredHealthy", s.DesiredHealthy}, {"expectedPods", s.ExpectedPods}} {
		errs = append(errs, nonNegative(int64(f.value), fldPath.Child(f.name))...)
	}
	return errs
}

// Length limits of the newer event fields.
const (
	reportingInstanceLengthLimit = 128
	actionLengthLimit            = 128
	reasonLengthLimit            = 128
	noteLengthLimit              = 1024
)

// validateEvent applies upstream's core/v1 event rules: the involved
// object's namespace must match the event's, and an event with eventTime
// set must name its reporter, action and reason.
func validateEvent(e *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	const mismatch = "does not match event.namespace"
	if e.EventTime.IsZero() {
		if e.InvolvedObject.Namespace == "" {
			// Cluster-scoped objects' events live in "default" or nowhere.
			if e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault {
				errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, mismatch))
			}
		} else if e.Namespace != e.InvolvedObject.Namespace {
			errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, mismatch))
		}
	} else {
		if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, mismatch))
		}
		if e.ReportingController == "" {
			errs = append(errs, field.Required(field.NewPath("reportingController"), ""))
		}
		errs = append(errs, qualifiedName(e.ReportingController, field.NewPath("reportingController"))...)
		for _, f := range []struct {
			name     string
			value    string
			limit    int
			required bool
		}{
			{"reportingInstance", e.ReportingInstance, reportingInstanceLengthLimit, true},
			{"action", e.Action, actionLengthLimit, true},
			{"reason", e.Reason, reasonLengthLimit, true},
			{"message", e.Message, noteLengthLimit, false},
		} {
			if f.required && f.value == "" {
				errs = append(errs, field.Required(field.NewPath(f.name), ""))
			}
			if len(f.value) > f.limit {
				errs = append(errs, field.Invalid(field.NewPath(f.name), "", fmt.Sprintf("can have at most %v characters", f.limit)))
			}
		}
	}
	for _, msg := range validation.IsDNS1123Subdomain(e.Namespace) {
		errs = append(errs, field.Invalid(field.NewPath("namespace"), e.Namespace, msg))
	}
	return errs
}
