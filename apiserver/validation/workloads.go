package validation

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// Legacy Job labels that upstream still requires next to the
// batch.kubernetes.io/ ones.
const (
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
)

func nonNegative(value int64, fldPath *field.Path) field.ErrorList {
	return apimachineryvalidation.ValidateNonnegativeField(value, fldPath)
}

func validateReplicationControllerSpec(spec *corev1.ReplicationControllerSpec, fldPath *field.Path) field.ErrorList {
	errs := nonNegative(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))
	selector := labels.Set(spec.Selector).AsSelector()
	if selector.Empty() {
		errs = append(errs, field.Required(fldPath.Child("selector"), ""))
	}
	errs = append(errs, nonNegative(int64(ptr.Deref(spec.Replicas, 1)), fldPath.Child("replicas"))...)
	return append(errs, validateTemplateForController(spec.Template, selector, "ReplicationController", fldPath.Child("template"))...)
}

// validateAppsSelector checks an apps/v1 selector, which is required and
// may not be empty, and returns it parsed for the template check.
func validateAppsSelector(s *metav1.LabelSelector, kind string, fldPath *field.Path) (labels.Selector, field.ErrorList) {
	if s == nil {
		return labels.Nothing(), field.ErrorList{field.Required(fldPath, "")}
	}
	errs := metav1validation.ValidateLabelSelector(s, strictSelector, fldPath)
	if len(s.MatchLabels)+len(s.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(fldPath, s, fmt.Sprintf("empty selector is invalid for %s", kind)))
	}
	selector, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		// Everything skips the template match, already hopeless.
		return labels.Everything(), append(errs, field.Invalid(fldPath, s, "invalid label selector"))
	}
	return selector, errs
}

func validateReplicaSetSpec(spec *appsv1.ReplicaSetSpec, fldPath *field.Path) field.ErrorList {
	errs := nonNegative(int64(ptr.Deref(spec.Replicas, 1)), fldPath.Child("replicas"))
	errs = append(errs, nonNegative(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	// upstream names deployments in the empty selector message of both kinds.
	selector, selErrs := validateAppsSelector(spec.Selector, "deployment", fldPath.Child("selector"))
	errs = append(errs, selErrs...)
	return append(errs, validateTemplateForController(&spec.Template, selector, "ReplicaSet", fldPath.Child("template"))...)
}

func validateDeploymentSpec(spec *appsv1.DeploymentSpec, fldPath *field.Path) field.ErrorList {
	errs := nonNegative(int64(ptr.Deref(spec.Replicas, 1)), fldPath.Child("replicas"))
	selector, selErrs := validateAppsSelector(spec.Selector, "deployment", fldPath.Child("selector"))
	errs = append(errs, selErrs...)
	// upstream checks a Deployment's template with the ReplicaSet rules.
	errs = append(errs, validateTemplateForController(&spec.Template, selector, "ReplicaSet", fldPath.Child("template"))...)
	errs = append(errs, validateDeploymentStrategy(&spec.Strategy, fldPath.Child("strategy"))...)
	errs = append(errs, nonNegative(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*spec.RevisionHistoryLimit), fldPath.Child("revisionHistoryLimit"))...)
	}
	if d := spec.ProgressDeadlineSeconds; d != nil {
		errs = append(errs, nonNegative(int64(*d), fldPath.Child("progressDeadlineSeconds"))...)
		if *d <= spec.MinReadySeconds {
			errs = append(errs, field.Invalid(fldPath.Child("progressDeadlineSeconds"), *d, "must be greater than minReadySeconds"))
		}
	}
	return errs
}

func validateDeploymentStrategy(s *appsv1.DeploymentStrategy, fldPath *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.RollingUpdate != nil {
			return field.ErrorList{field.Forbidden(fldPath.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'")}
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		if s.RollingUpdate == nil {
			return field.ErrorList{field.Required(fldPath.Child("rollingUpdate"), "this should be defaulted and never be nil")}
		}
		p := fldPath.Child("rollingUpdate")
		maxUnavailable := ptr.Deref(s.RollingUpdate.MaxUnavailable, intstr.FromInt32(0))
		maxSurge := ptr.Deref(s.RollingUpdate.MaxSurge, intstr.FromInt32(0))
		errs := intOrPercent(maxUnavailable, p.Child("maxUnavailable"))
		errs = append(errs, intOrPercent(maxSurge, p.Child("maxSurge"))...)
		if intOrPercentValue(maxUnavailable) == 0 && intOrPercentValue(maxSurge) == 0 {
			errs = append(errs, field.Invalid(p.Child("maxUnavailable"), maxUnavailable, "may not be 0 when `maxSurge` is 0"))
		}
		return append(errs, notMoreThan100Percent(maxUnavailable, p.Child("maxUnavailable"))...)
	default:
		return field.ErrorList{field.NotSupported(fldPath.Child("type"), s.Type, []appsv1.DeploymentStrategyType{appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType})}
	}
	return nil
}

func validateDaemonSetSpec(spec *appsv1.DaemonSetSpec, fldPath *field.Path) field.ErrorList {
	selector, errs := validateAppsSelector(spec.Selector, "daemonset", fldPath.Child("selector"))
	if spec.Selector != nil && !selector.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(fldPath.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	// The selector was matched above; an empty one must not match again.
	errs = append(errs, validateTemplateForController(&spec.Template, labels.Everything(), "DaemonSet", fldPath.Child("template"))...)
	errs = append(errs, nonNegative(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	errs = append(errs, validateDaemonSetUpdateStrategy(&spec.UpdateStrategy, fldPath.Child("updateStrategy"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*spec.RevisionHistoryLimit), fldPath.Child("revisionHistoryLimit"))...)
	}
	return errs
}

func validateDaemonSetUpdateStrategy(s *appsv1.DaemonSetUpdateStrategy, fldPath *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
		return nil
	case appsv1.RollingUpdateDaemonSetStrategyType:
		if s.RollingUpdate == nil {
			return field.ErrorList{field.Required(fldPath.Child("rollingUpdate"), "")}
		}
	default:
		return field.ErrorList{field.NotSupported(fldPath, s.Type, []appsv1.DaemonSetUpdateStrategyType{appsv1.RollingUpdateDaemonSetStrategyType, appsv1.OnDeleteDaemonSetStrategyType})}
	}
	p := fldPath.Child("rollingUpdate")
	maxUnavailable := ptr.Deref(s.RollingUpdate.MaxUnavailable, intstr.FromInt32(0))
	maxSurge := ptr.Deref(s.RollingUpdate.MaxSurge, intstr.FromInt32(0))
	errs := intOrPercent(maxUnavailable, p.Child("maxUnavailable"))
	errs = append(errs, intOrPercent(maxSurge, p.Child("maxSurge"))...)
	errs = append(errs, notMoreThan100Percent(maxUnavailable, p.Child("maxUnavailable"))...)
	errs = append(errs, notMoreThan100Percent(maxSurge, p.Child("maxSurge"))...)
	// Exactly one of the two bounds drives a DaemonSet rollout.
	hasUnavailable, hasSurge := intOrPercentValue(maxUnavailable) != 0, intOrPercentValue(maxSurge) != 0
	switch {
	case hasUnavailable && hasSurge:
		errs = append(errs, field.Invalid(p.Child("maxSurge"), maxSurge, "may not be set when maxUnavailable is non-zero"))
	case !hasUnavailable && !hasSurge:
		errs = append(errs, field.Required(p.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
	}
	return errs
}

// intOrPercent accepts a non-negative integer or a percentage string.
func intOrPercent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch v.Type {
	case intstr.String:
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(fldPath, v, msg))
		}
	case intstr.Int:
		errs = append(errs, nonNegative(int64(v.IntValue()), fldPath)...)
	default:
		errs = append(errs, field.Invalid(fldPath, v, "must be an integer or percentage (e.g '5%%')"))
	}
	return errs
}

func percentValue(v intstr.IntOrString) (int, bool) {
	if v.Type != intstr.String || len(validation.IsValidPercent(v.StrVal)) != 0 {
		return 0, false
	}
	n, _ := strconv.Atoi(v.StrVal[:len(v.StrVal)-1])
	return n, true
}

func intOrPercentValue(v intstr.IntOrString) int {
	if n, ok := percentValue(v); ok {
		return n
	}
	return v.IntValue()
}

func notMoreThan100Percent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if n, ok := percentValue(v); ok && n > 100 {
		return field.ErrorList{field.Invalid(fldPath, v, "must not be greater than 100%")}
	}
	return nil
}

// validateJob checks a Job. requirePrefixedLabels asks for the
// batch.kubernetes.io/ selector labels, which Jobs created before they
// existed lack.
func validateJob(job *batchv1.Job, requirePrefixedLabels bool) field.ErrorList {
	errs := validateGeneratedSelector(job, requirePrefixedLabels)
	errs = append(errs, validateJobSpec(&job.Spec, specPath)...)
	if ptr.Deref(job.Spec.CompletionMode, "") == batchv1.IndexedCompletion && ptr.Deref(job.Spec.Completions, 0) > 0 {
		// Indexed pods are named <job>-<index>, which must stay a DNS label.
		hostname := fmt.Sprintf("%s-%d", job.Name, *job.Spec.Completions-1)
		if len(validation.IsDNS1123Label(hostname)) > 0 {
			errs = append(errs, field.Invalid(metaPath.Child("name"), job.Name, fmt.Sprintf("will not able to create pod with invalid DNS label: %s", hostname)))
		}
	}
	return errs
}

// validateGeneratedSelector checks, unless the selector is manual, that
// the selector and template labels are the ones generated from the Job's
// name and UID (see defaults.JobSelector).
func validateGeneratedSelector(job *batchv1.Job, requirePrefixedLabels bool) field.ErrorList {
	if ptr.Deref(job.Spec.ManualSelector, false) || job.Spec.Selector == nil {
		return nil
	}
	var errs field.ErrorList
	if job.UID == "" {
		errs = append(errs, field.Required(metaPath.Child("uid"), ""))
	}
	tmplMeta := specPath.Child("template", "metadata")
	expected := map[string]string{legacyControllerUIDLabel: string(job.UID), legacyJobNameLabel: job.Name}
	if requirePrefixedLabels {
		expected[batchv1.ControllerUidLabel] = string(job.UID)
		expected[batchv1.JobNameLabel] = job.Name
	}
	for _, key := range []string{legacyControllerUIDLabel, legacyJobNameLabel, batchv1.ControllerUidLabel, batchv1.JobNameLabel} {
		want, ok := expected[key]
		if !ok {
			continue
		}
		got, found := job.Spec.Template.Labels[key]
		switch {
		case !found:
			errs = append(errs, field.Required(tmplMeta.Child("labels").Key(key), fmt.Sprintf("must be '%s'", want)))
		case got != want:
			errs = append(errs, field.Invalid(tmplMeta.Child("labels").Key(key), job.Spec.Template.Labels, fmt.Sprintf("must be '%s'", want)))
		}
	}
	if selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector); err == nil && !selector.Matches(labels.Set(expected)) {
		errs = append(errs, field.Invalid(specPath.Child("selector"), job.Spec.Selector, "`selector` not auto-generated"))
	}
	return errs
}

func validateJobSpec(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name  string
		value *int32
	}{{"parallelism", spec.Parallelism}, {"completions", spec.Completions}, {"backoffLimit", spec.BackoffLimit}, {"ttlSecondsAfterFinished", spec.TTLSecondsAfterFinished}, {"backoffLimitPerIndex", spec.BackoffLimitPerIndex}, {"maxFailedIndexes", spec.MaxFailedIndexes}} {
		if f.value != nil {
			errs = append(errs, nonNegative(int64(*f.value), fldPath.Child(f.name))...)
		}
	}
	if spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, nonNegative(*spec.ActiveDeadlineSeconds, fldPath.Child("activeDeadlineSeconds"))...)
	}
	if spec.MaxFailedIndexes != nil && spec.BackoffLimitPerIndex == nil {
		errs = append(errs, field.Required(fldPath.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
	}
	indexed := ptr.Deref(spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
	if m := spec.CompletionMode; m != nil && *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
		errs = append(errs, field.NotSupported(fldPath.Child("completionMode"), m, []batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
	}
	if indexed {
		errs = append(errs, validateIndexedJobLimits(spec, fldPath)...)
		if spec.SuccessPolicy != nil {
			errs = append(errs, validateSuccessPolicy(spec, fldPath.Child("successPolicy"))...)
		}
	}
	if !indexed {
		if spec.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Invalid(fldPath.Child("backoffLimitPerIndex"), *spec.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if spec.MaxFailedIndexes != nil {
			errs = append(errs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "requires indexed completion mode"))
		}
		if spec.SuccessPolicy != nil {
			errs = append(errs, field.Invalid(fldPath.Child("successPolicy"), *spec.SuccessPolicy, "requires indexed completion mode"))
		}
	}
	if spec.PodFailurePolicy != nil {
		errs = append(errs, validatePodFailurePolicy(spec, fldPath.Child("podFailurePolicy"))...)
	}
	if rp := spec.PodReplacementPolicy; rp != nil {
		if spec.PodFailurePolicy != nil && *rp != batchv1.Failed {
			errs = append(errs, field.NotSupported(fldPath.Child("podReplacementPolicy"), *rp, []batchv1.PodReplacementPolicy{batchv1.Failed}))
		} else if *rp != batchv1.Failed && *rp != batchv1.TerminatingOrFailed {
			errs = append(errs, field.NotSupported(fldPath.Child("podReplacementPolicy"), *rp, []batchv1.PodReplacementPolicy{batchv1.Failed, batchv1.TerminatingOrFailed}))
		}
	}

	if spec.Selector == nil {
		errs = append(errs, field.Required(fldPath.Child("selector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, strictSelector, fldPath.Child("selector"))...)
		if selector, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !selector.Matches(labels.Set(spec.Template.Labels)) {
			errs = append(errs, field.Invalid(fldPath.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
		}
	}

	tp := fldPath.Child("template")
	errs = append(errs, validatePodTemplateSpec(&spec.Template, tp)...)
	restartPath := tp.Child("spec", "restartPolicy")
	switch rp := spec.Template.Spec.RestartPolicy; {
	case rp == corev1.RestartPolicyAlways || rp == "":
		errs = append(errs, field.Required(restartPath, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)))
	case rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever:
		errs = append(errs, field.NotSupported(restartPath, rp, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	case spec.PodFailurePolicy != nil && rp != corev1.RestartPolicyNever:
		errs = append(errs, field.Invalid(restartPath, rp, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
	}
	return errs
}

// Limits of Indexed Jobs, as upstream: they bound the length of
// status.completedIndexes and status.failedIndexes.
const (
	maxParallelismForIndexedJob             = 100_000
	maxFailedIndexesForIndexedJob           = 100_000
	completionsSoftLimit                    = 100_000
	parallelismLimitForHighCompletions      = 10_000
	maxFailedIndexesLimitForHighCompletions = 10_000
)

func validateIndexedJobLimits(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Completions == nil {
		errs = append(errs, field.Required(fldPath.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
	}
	if p := spec.Parallelism; p != nil && *p > maxParallelismForIndexedJob {
		errs = append(errs, field.Invalid(fldPath.Child("parallelism"), *p, fmt.Sprintf("must be less than or equal to %d when completion mode is %s", maxParallelismForIndexedJob, batchv1.IndexedCompletion)))
	}
	if m := spec.MaxFailedIndexes; m != nil {
		if spec.Completions != nil && *m > *spec.Completions {
			errs = append(errs, field.Invalid(fldPath.Child("maxFailedIndexes"), *m, "must be less than or equal to completions"))
		}
		if *m > maxFailedIndexesForIndexedJob {
			errs = append(errs, field.Invalid(fldPath.Child("maxFailedIndexes"), *m, fmt.Sprintf("must be less than or equal to %d", maxFailedIndexesForIndexedJob)))
		}
	}
	if c := spec.Completions; c != nil && *c > completionsSoftLimit && spec.BackoffLimitPerIndex != nil {
		if spec.MaxFailedIndexes == nil {
			errs = append(errs, field.Required(fldPath.Child("maxFailedIndexes"), fmt.Sprintf("must be specified when completions is above %d", completionsSoftLimit)))
		}
		if p := spec.Parallelism; p != nil && *p > parallelismLimitForHighCompletions {
			errs = append(errs, field.Invalid(fldPath.Child("parallelism"), *p, fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", parallelismLimitForHighCompletions, completionsSoftLimit)))
		}
		if m := spec.MaxFailedIndexes; m != nil && *m > maxFailedIndexesLimitForHighCompletions {
			errs = append(errs, field.Invalid(fldPath.Child("maxFailedIndexes"), *m, fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", maxFailedIndexesLimitForHighCompletions, completionsSoftLimit)))
		}
	}
	return errs
}

// Caps of spec.successPolicy, as upstream.
const (
	maxSuccessPolicyRules         = 20
	maxSuccessPolicyIndexesLength = 64 * 1024
)

// validateSuccessPolicy checks an Indexed Job's success policy: 1 to 20
// rules, each with succeededIndexes (ascending intervals below
// completions) or succeededCount (at most completions, and at most the
// indexes of succeededIndexes) or both.
func validateSuccessPolicy(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	rulesPath := fldPath.Child("rules")
	rules := spec.SuccessPolicy.Rules
	if len(rules) == 0 {
		errs = append(errs, field.Required(rulesPath, "at least one rules must be specified when the successPolicy is specified"))
	}
	if len(rules) > maxSuccessPolicyRules {
		errs = append(errs, field.TooMany(rulesPath, len(rules), maxSuccessPolicyRules))
	}
	completions := ptr.Deref(spec.Completions, 0)
	for i, rule := range rules {
		rulePath := rulesPath.Index(i)
		if rule.SucceededCount == nil && rule.SucceededIndexes == nil {
			errs = append(errs, field.Required(rulePath, "at least one of succeededCount or succeededIndexes must be specified"))
		}
		var indexes int32
		if rule.SucceededIndexes != nil {
			indexesPath := rulePath.Child("succeededIndexes")
			if len(*rule.SucceededIndexes) > maxSuccessPolicyIndexesLength {
				errs = append(errs, field.TooLong(indexesPath, *rule.SucceededIndexes, maxSuccessPolicyIndexesLength))
			}
			var err error
			if indexes, err = countIndexes(*rule.SucceededIndexes, completions); err != nil {
				errs = append(errs, field.Invalid(indexesPath, *rule.SucceededIndexes, "error parsing succeededIndexes: "+err.Error()))
			}
		}
		if c := rule.SucceededCount; c != nil {
			countPath := rulePath.Child("succeededCount")
			errs = append(errs, nonNegative(int64(*c), countPath)...)
			if *c > completions {
				errs = append(errs, field.Invalid(countPath, *c, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", completions)))
			}
			if rule.SucceededIndexes != nil && *c > indexes {
				errs = append(errs, field.Invalid(countPath, *c, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", indexes)))
			}
		}
	}
	return errs
}

// countIndexes parses a list of indexes in the form of
// status.completedIndexes ("1,3-5"), whose intervals must ascend and stay
// below completions, and returns how many indexes it holds.
func countIndexes(list string, completions int32) (int32, error) {
	if list == "" {
		return 0, nil
	}
	var total int32
	last := int32(-1)
	for _, part := range strings.Split(list, ",") {
		first, end, err := parseIndexInterval(part, completions)
		if err != nil {
			return 0, err
		}
		if first <= last {
			return 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", last, first)
		}
		total += end - first + 1
		last = end
	}
	return total, nil
}

// parseIndexInterval parses "3" or "3-5" into its first and last index,
// with upstream's messages.
func parseIndexInterval(part string, completions int32) (int32, int32, error) {
	bounds := strings.Split(part, "-")
	if len(bounds) > 2 {
		return 0, 0, fmt.Errorf("the fragment %q violates the requirement that an index interval can have at most two parts separated by '-'", part)
	}
	var ends [2]int32
	for i, b := range bounds {
		v, err := strconv.Atoi(b)
		if err != nil {
			return 0, 0, fmt.Errorf("cannot convert string to integer for index: %q", b)
		}
		if v >= int(completions) {
			return 0, 0, fmt.Errorf("too large index: %q", b)
		}
		ends[i] = int32(v)
	}
	if len(bounds) == 1 {
		return ends[0], ends[0], nil
	}
	if ends[0] >= ends[1] {
		return 0, 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", ends[0], ends[1])
	}
	return ends[0], ends[1], nil
}

// Caps of spec.podFailurePolicy, as upstream.
const (
	maxPodFailurePolicyRules                   = 20
	maxPodFailurePolicyOnExitCodesValues       = 255
	maxPodFailurePolicyOnPodConditionsPatterns = 20
)

// The values a pod failure policy's enums take, sorted as upstream lists
// them in its messages.
var (
	podFailurePolicyActions = []batchv1.PodFailurePolicyAction{batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex,
		batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore}
	podFailurePolicyOperators  = []batchv1.PodFailurePolicyOnExitCodesOperator{batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn}
	podFailurePolicyConditions = []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown}
)

func validatePodFailurePolicy(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	rules := spec.PodFailurePolicy.Rules
	rulesPath := fldPath.Child("rules")
	if len(rules) > maxPodFailurePolicyRules {
		errs = append(errs, field.TooMany(rulesPath, len(rules), maxPodFailurePolicyRules))
	}
	containers := map[string]bool{}
	for _, c := range spec.Template.Spec.Containers {
		containers[c.Name] = true
	}
	for _, c := range spec.Template.Spec.InitContainers {
		containers[c.Name] = true
	}
	for i, r := range rules {
		rp := rulesPath.Index(i)
		actionPath := rp.Child("action")
		switch {
		case r.Action == "":
			errs = append(errs, field.Required(actionPath, fmt.Sprintf("valid values: %q", podFailurePolicyActions)))
		case r.Action == batchv1.PodFailurePolicyActionFailIndex:
			if spec.BackoffLimitPerIndex == nil {
				errs = append(errs, field.Invalid(actionPath, r.Action, "requires the backoffLimitPerIndex to be set"))
			}
		case !slices.Contains(podFailurePolicyActions, r.Action):
			errs = append(errs, field.NotSupported(actionPath, r.Action, podFailurePolicyActions))
		}
		if r.OnExitCodes != nil {
			errs = append(errs, validateOnExitCodes(r.OnExitCodes, rp.Child("onExitCodes"), containers)...)
		}
		if len(r.OnPodConditions) > 0 {
			errs = append(errs, validateOnPodConditions(r.OnPodConditions, rp.Child("onPodConditions"))...)
		}
		switch {
		case r.OnExitCodes != nil && len(r.OnPodConditions) > 0:
			errs = append(errs, field.Invalid(rp, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
		case r.OnExitCodes == nil && len(r.OnPodConditions) == 0:
			errs = append(errs, field.Invalid(rp, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
		}
	}
	return errs
}

// validateOnExitCodes checks a rule's exit codes: a known operator, a
// container of the template, 1 to 255 values, ascending, distinct, and no
// 0 with In (a container that exits 0 did not fail).
func validateOnExitCodes(ec *batchv1.PodFailurePolicyOnExitCodesRequirement, fldPath *field.Path, containers map[string]bool) field.ErrorList {
	var errs field.ErrorList
	opPath := fldPath.Child("operator")
	switch {
	case ec.Operator == "":
		errs = append(errs, field.Required(opPath, fmt.Sprintf("valid values: %q", podFailurePolicyOperators)))
	case !slices.Contains(podFailurePolicyOperators, ec.Operator):
		errs = append(errs, field.NotSupported(opPath, ec.Operator, podFailurePolicyOperators))
	}
	if ec.ContainerName != nil && !containers[*ec.ContainerName] {
		errs = append(errs, field.Invalid(fldPath.Child("containerName"), *ec.ContainerName, "must be one of the container or initContainer names in the pod template"))
	}
	valuesPath := fldPath.Child("values")
	if len(ec.Values) == 0 {
		errs = append(errs, field.Invalid(valuesPath, ec.Values, "at least one value is required"))
	} else if len(ec.Values) > maxPodFailurePolicyOnExitCodesValues {
		errs = append(errs, field.TooMany(valuesPath, len(ec.Values), maxPodFailurePolicyOnExitCodesValues))
	}
	seen := map[int32]bool{}
	for j, v := range ec.Values {
		if ec.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0 {
			errs = append(errs, field.Invalid(valuesPath.Index(j), v, "must not be 0 for the In operator"))
		}
		if seen[v] {
			errs = append(errs, field.Duplicate(valuesPath.Index(j), v))
		}
		seen[v] = true
	}
	if !slices.IsSorted(ec.Values) {
		errs = append(errs, field.Invalid(valuesPath, ec.Values, "must be ordered"))
	}
	return errs
}

func validateOnPodConditions(patterns []batchv1.PodFailurePolicyOnPodConditionsPattern, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(patterns) > maxPodFailurePolicyOnPodConditionsPatterns {
		errs = append(errs, field.TooMany(fldPath, len(patterns), maxPodFailurePolicyOnPodConditionsPatterns))
	}
	for j, c := range patterns {
		cp := fldPath.Index(j)
		errs = append(errs, qualifiedName(string(c.Type), cp.Child("type"))...)
		statusPath := cp.Child("status")
		switch {
		case c.Status == "":
			errs = append(errs, field.Required(statusPath, fmt.Sprintf("valid values: %q", podFailurePolicyConditions)))
		case !slices.Contains(podFailurePolicyConditions, c.Status):
			errs = append(errs, field.NotSupported(statusPath, c.Status, podFailurePolicyConditions))
		}
	}
	return errs
}

func validateJobUpdate(job, old *batchv1.Job) field.ErrorList {
	_, hadName := old.Spec.Template.Labels[batchv1.JobNameLabel]
	_, hadUID := old.Spec.Template.Labels[batchv1.ControllerUidLabel]
	errs := validateJob(job, hadName && hadUID)
	spec, oldSpec := &job.Spec, &old.Spec

	// Completions may change only on Indexed Jobs, together with parallelism.
	indexed := ptr.Deref(spec.CompletionMode, "") == batchv1.IndexedCompletion
	if !indexed {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(spec.Completions, oldSpec.Completions, specPath.Child("completions"))...)
	} else if !apiequality.Semantic.DeepEqual(spec.Completions, oldSpec.Completions) && spec.Completions != nil && *spec.Completions != ptr.Deref(spec.Parallelism, 0) {
		errs = append(errs, field.Invalid(specPath.Child("completions"), spec.Completions, "can only be modified in tandem with spec.parallelism"))
	}
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(spec.Selector, oldSpec.Selector, specPath.Child("selector"))...)

	// A suspended Job that never started may change where its pods run.
	oldTemplate := oldSpec.Template.DeepCopy()
	if ptr.Deref(oldSpec.Suspend, false) && old.Status.StartTime == nil {
		t := &spec.Template
		switch {
		case t.Spec.Affinity == nil && oldTemplate.Spec.Affinity != nil:
			oldTemplate.Spec.Affinity.NodeAffinity = nil
			if *oldTemplate.Spec.Affinity == (corev1.Affinity{}) {
				oldTemplate.Spec.Affinity = nil
			}
		case t.Spec.Affinity != nil && oldTemplate.Spec.Affinity == nil:
			oldTemplate.Spec.Affinity = &corev1.Affinity{NodeAffinity: t.Spec.Affinity.NodeAffinity}
		case t.Spec.Affinity != nil && oldTemplate.Spec.Affinity != nil:
			oldTemplate.Spec.Affinity.NodeAffinity = t.Spec.Affinity.NodeAffinity
		}
		oldTemplate.Spec.NodeSelector = t.Spec.NodeSelector
		oldTemplate.Spec.Tolerations = t.Spec.Tolerations
		oldTemplate.Annotations = t.Annotations
		oldTemplate.Labels = t.Labels
		oldTemplate.Spec.SchedulingGates = t.Spec.SchedulingGates
	}
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(spec.Template, *oldTemplate, specPath.Child("template"))...)

	for _, f := range []struct {
		name     string
		new, old any
	}{
		{"completionMode", spec.CompletionMode, oldSpec.CompletionMode},
		{"podFailurePolicy", spec.PodFailurePolicy, oldSpec.PodFailurePolicy},
		{"backoffLimitPerIndex", spec.BackoffLimitPerIndex, oldSpec.BackoffLimitPerIndex},
		{"managedBy", spec.ManagedBy, oldSpec.ManagedBy},
		{"successPolicy", spec.SuccessPolicy, oldSpec.SuccessPolicy},
	} {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(f.new, f.old, specPath.Child(f.name))...)
	}
	return errs
}

func validateJobStatus(s *batchv1.JobStatus, fldPath *field.Path) field.ErrorList {
	errs := nonNegative(int64(s.Active), fldPath.Child("active"))
	errs = append(errs, nonNegative(int64(s.Succeeded), fldPath.Child("succeeded"))...)
	errs = append(errs, nonNegative(int64(s.Failed), fldPath.Child("failed"))...)
	if s.Ready != nil {
		errs = append(errs, nonNegative(int64(*s.Ready), fldPath.Child("ready"))...)
	}
	if s.Terminating != nil {
		errs = append(errs, nonNegative(int64(*s.Terminating), fldPath.Child("terminating"))...)
	}
	return errs
}

// replicaCounts are the counters shared by the status of replica
// controllers; zero-valued fields the type lacks are harmless.
type replicaCounts struct {
	replicas, fullyLabeled, ready, available, observedGeneration int64
}

func validateReplicaCounts(c replicaCounts, fldPath *field.Path) field.ErrorList {
	errs := nonNegative(c.replicas, fldPath.Child("replicas"))
	errs = append(errs, nonNegative(c.fullyLabeled, fldPath.Child("fullyLabeledReplicas"))...)
	errs = append(errs, nonNegative(c.ready, fldPath.Child("readyReplicas"))...)
	errs = append(errs, nonNegative(c.available, fldPath.Child("availableReplicas"))...)
	errs = append(errs, nonNegative(c.observedGeneration, fldPath.Child("observedGeneration"))...)
	const msg = "cannot be greater than status.replicas"
	if c.fullyLabeled > c.replicas {
		errs = append(errs, field.Invalid(fldPath.Child("fullyLabeledReplicas"), c.fullyLabeled, msg))
	}
	if c.ready > c.replicas {
		errs = append(errs, field.Invalid(fldPath.Child("readyReplicas"), c.ready, msg))
	}
	if c.available > c.replicas {
		errs = append(errs, field.Invalid(fldPath.Child("availableReplicas"), c.available, msg))
	}
	if c.available > c.ready {
		errs = append(errs, field.Invalid(fldPath.Child("availableReplicas"), c.available, "cannot be greater than readyReplicas"))
	}
	return errs
}

func validateReplicationControllerStatus(s *corev1.ReplicationControllerStatus, fldPath *field.Path) field.ErrorList {
	return validateReplicaCounts(replicaCounts{int64(s.Replicas), int64(s.FullyLabeledReplicas), int64(s.ReadyReplicas), int64(s.AvailableReplicas), s.ObservedGeneration}, fldPath)
}

func validateReplicaSetStatus(s *appsv1.ReplicaSetStatus, fldPath *field.Path) field.ErrorList {
	return validateReplicaCounts(replicaCounts{int64(s.Replicas), int64(s.FullyLabeledReplicas), int64(s.ReadyReplicas), int64(s.AvailableReplicas), s.ObservedGeneration}, fldPath)
}

func validateDeploymentStatusUpdate(s, old *appsv1.DeploymentStatus) field.ErrorList {
	p := statusPath
	errs := nonNegative(s.ObservedGeneration, p.Child("observedGeneration"))
	for _, f := range []struct {
		name  string
		value int32
	}{{"replicas", s.Replicas}, {"updatedReplicas", s.UpdatedReplicas}, {"readyReplicas", s.ReadyReplicas}, {"availableReplicas", s.AvailableReplicas}, {"unavailableReplicas", s.UnavailableReplicas}} {
		errs = append(errs, nonNegative(int64(f.value), p.Child(f.name))...)
	}
	const msg = "cannot be greater than status.replicas"
	if s.UpdatedReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("updatedReplicas"), s.UpdatedReplicas, msg))
	}
	if s.ReadyReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("readyReplicas"), s.ReadyReplicas, msg))
	}
	if s.AvailableReplicas > s.Replicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), s.AvailableReplicas, msg))
	}
	if s.AvailableReplicas > s.ReadyReplicas {
		errs = append(errs, field.Invalid(p.Child("availableReplicas"), s.AvailableReplicas, "cannot be greater than readyReplicas"))
	}
	return append(errs, collisionCount(s.CollisionCount, old.CollisionCount)...)
}

func validateDaemonSetStatusUpdate(s, old *appsv1.DaemonSetStatus) field.ErrorList {
	p := statusPath
	var errs field.ErrorList
	for _, f := range []struct {
		name  string
		value int32
	}{{"currentNumberScheduled", s.CurrentNumberScheduled}, {"numberMisscheduled", s.NumberMisscheduled}, {"desiredNumberScheduled", s.DesiredNumberScheduled}, {"numberReady", s.NumberReady}, {"updatedNumberScheduled", s.UpdatedNumberScheduled}, {"numberAvailable", s.NumberAvailable}, {"numberUnavailable", s.NumberUnavailable}} {
		errs = append(errs, nonNegative(int64(f.value), p.Child(f.name))...)
	}
	errs = append(errs, nonNegative(s.ObservedGeneration, p.Child("observedGeneration"))...)
	return append(errs, collisionCount(s.CollisionCount, old.CollisionCount)...)
}

// collisionCount may grow but never shrink: controllers use it to pick new
// ReplicaSet names.
func collisionCount(count, old *int32) field.ErrorList {
	p := statusPath.Child("collisionCount")
	var errs field.ErrorList
	if count != nil {
		errs = append(errs, nonNegative(int64(*count), p)...)
	}
	if old != nil && (count == nil || *count < *old) {
		errs = append(errs, field.Invalid(p, ptr.Deref(count, 0), "cannot be decremented"))
	}
	return errs
}
