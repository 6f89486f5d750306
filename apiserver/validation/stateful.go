package validation

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func validateStatefulSetSpec(spec *appsv1.StatefulSetSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch spec.PodManagementPolicy {
	case "":
		errs = append(errs, field.Required(fldPath.Child("podManagementPolicy"), ""))
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		errs = append(errs, field.Invalid(fldPath.Child("podManagementPolicy"), spec.PodManagementPolicy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)))
	}
	errs = append(errs, validateStatefulSetUpdateStrategy(&spec.UpdateStrategy, fldPath.Child("updateStrategy"))...)
	errs = append(errs, validateClaimRetentionPolicy(spec.PersistentVolumeClaimRetentionPolicy, fldPath.Child("persistentVolumeClaimRetentionPolicy"))...)
	if spec.RevisionHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*spec.RevisionHistoryLimit), fldPath.Child("revisionHistoryLimit"))...)
	}
	errs = append(errs, nonNegative(int64(ptr.Deref(spec.Replicas, 1)), fldPath.Child("replicas"))...)
	errs = append(errs, nonNegative(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	if spec.Ordinals != nil {
		errs = append(errs, nonNegative(int64(spec.Ordinals.Start), fldPath.Child("ordinals", "start"))...)
	}
	if spec.ServiceName != "" {
		for _, msg := range serviceName(spec.ServiceName, false) {
			errs = append(errs, field.Invalid(fldPath.Child("serviceName"), spec.ServiceName, msg))
		}
	}
	selector, selErrs := validateAppsSelector(spec.Selector, "statefulset", fldPath.Child("selector"))
	errs = append(errs, selErrs...)
	claims := claimNames(spec.VolumeClaimTemplates)
	for i := range spec.VolumeClaimTemplates {
		errs = append(errs, validateClaimTemplate(&spec.VolumeClaimTemplates[i], fldPath.Child("volumeClaimTemplates").Index(i))...)
	}
	// The pods get one volume per claim template (replacing a template
	// volume of the same name), so the template is checked with them: a
	// mount of a claim template is valid, a mount of nothing is not.
	t := spec.Template.DeepCopy()
	t.Spec.Volumes = nil
	for _, v := range spec.Template.Spec.Volumes {
		if !claims[v.Name] {
			t.Spec.Volumes = append(t.Spec.Volumes, v)
		}
	}
	for _, c := range spec.VolumeClaimTemplates {
		t.Spec.Volumes = append(t.Spec.Volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name}}})
	}
	return append(errs, validateTemplateForController(t, selector, "StatefulSet", fldPath.Child("template"))...)
}

func claimNames(claims []corev1.PersistentVolumeClaim) map[string]bool {
	out := map[string]bool{}
	for _, c := range claims {
		out[c.Name] = true
	}
	return out
}

func validateStatefulSetUpdateStrategy(s *appsv1.StatefulSetUpdateStrategy, fldPath *field.Path) field.ErrorList {
	switch s.Type {
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	case appsv1.OnDeleteStatefulSetStrategyType:
		if s.RollingUpdate != nil {
			return field.ErrorList{field.Invalid(fldPath.Child("rollingUpdate"), s.RollingUpdate,
				fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType))}
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if s.RollingUpdate == nil {
			return nil
		}
		p := fldPath.Child("rollingUpdate")
		errs := nonNegative(int64(ptr.Deref(s.RollingUpdate.Partition, 0)), p.Child("partition"))
		if mu := s.RollingUpdate.MaxUnavailable; mu != nil {
			errs = append(errs, intOrPercent(*mu, p.Child("maxUnavailable"))...)
			if intOrPercentValue(*mu) <= 0 {
				errs = append(errs, field.Invalid(p.Child("maxUnavailable"), *mu, "must be greater than 0"))
			}
			errs = append(errs, notMoreThan100Percent(*mu, p.Child("maxUnavailable"))...)
		}
		return errs
	default:
		return field.ErrorList{field.Invalid(fldPath, s,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType))}
	}
	return nil
}

func validateClaimRetentionPolicy(p *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	valid := []appsv1.PersistentVolumeClaimRetentionPolicyType{appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType}
	var errs field.ErrorList
	for _, f := range []struct {
		name  string
		value appsv1.PersistentVolumeClaimRetentionPolicyType
	}{{"whenDeleted", p.WhenDeleted}, {"whenScaled", p.WhenScaled}} {
		if f.value != valid[0] && f.value != valid[1] {
			errs = append(errs, field.NotSupported(fldPath.Child(f.name), f.value, valid))
		}
	}
	return errs
}

// validateClaimTemplate checks a claim template as the claims made from
// it will be checked, plus its name.
func validateClaimTemplate(c *corev1.PersistentVolumeClaim, fldPath *field.Path) field.ErrorList {
	mp := fldPath.Child("metadata")
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(mp.Child("name"), "name or generateName is required"))
	} else {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(c.Name, false) {
			errs = append(errs, field.Invalid(mp.Child("name"), c.Name, msg))
		}
	}
	return append(errs, validatePersistentVolumeClaimSpec(&c.Spec, fldPath.Child("spec"))...)
}

// validateStatefulSetUpdate enforces upstream's list of mutable spec
// fields.
func validateStatefulSetUpdate(s, old *appsv1.StatefulSet) field.ErrorList {
	a, b := s.Spec.DeepCopy(), old.Spec.DeepCopy()
	for _, sp := range []*appsv1.StatefulSetSpec{a, b} {
		sp.Replicas, sp.Ordinals, sp.Template, sp.UpdateStrategy = nil, nil, corev1.PodTemplateSpec{}, appsv1.StatefulSetUpdateStrategy{}
		sp.RevisionHistoryLimit, sp.PersistentVolumeClaimRetentionPolicy, sp.MinReadySeconds = nil, nil, 0
	}
	if !apiequality.Semantic.DeepEqual(a, b) {
		return field.ErrorList{field.Forbidden(specPath, "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")}
	}
	return nil
}

func validateStatefulSetStatus(s *appsv1.StatefulSetStatus, old *appsv1.StatefulSetStatus) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name  string
		value int32
	}{{"replicas", s.Replicas}, {"readyReplicas", s.ReadyReplicas}, {"currentReplicas", s.CurrentReplicas}, {"updatedReplicas", s.UpdatedReplicas}, {"availableReplicas", s.AvailableReplicas}} {
		errs = append(errs, nonNegative(int64(f.value), statusPath.Child(f.name))...)
	}
	errs = append(errs, nonNegative(s.ObservedGeneration, statusPath.Child("observedGeneration"))...)
	for _, f := range []struct {
		name  string
		value int32
	}{{"readyReplicas", s.ReadyReplicas}, {"currentReplicas", s.CurrentReplicas}, {"updatedReplicas", s.UpdatedReplicas}, {"availableReplicas", s.AvailableReplicas}} {
		if f.value > s.Replicas {
			errs = append(errs, field.Invalid(statusPath.Child(f.name), f.value, "cannot be greater than status.replicas"))
		}
	}
	if s.AvailableReplicas > s.ReadyReplicas {
		errs = append(errs, field.Invalid(statusPath.Child("availableReplicas"), s.AvailableReplicas, "cannot be greater than status.readyReplicas"))
	}
	return append(errs, collisionCount(s.CollisionCount, old.CollisionCount)...)
}

// validateControllerRevision: data is required on create and immutable,
// revision is non-negative.
func validateControllerRevision(r *appsv1.ControllerRevision) field.ErrorList {
	errs := nonNegative(r.Revision, field.NewPath("revision"))
	if r.Data.Raw == nil && r.Data.Object == nil {
		errs = append(errs, field.Required(field.NewPath("data"), "data is mandatory"))
	}
	return errs
}

func validateControllerRevisionUpdate(r, old *appsv1.ControllerRevision) field.ErrorList {
	errs := nonNegative(r.Revision, field.NewPath("revision"))
	if !apiequality.Semantic.DeepEqual(r.Data, old.Data) {
		errs = append(errs, field.Invalid(field.NewPath("data"), "<omitted>", "field is immutable"))
	}
	return errs
}

// cronJobNameMax leaves room for the "-<minutes>" suffix of Job names
// within a 63-character label (upstream: DNS1035LabelMaxLength - 11).
const cronJobNameMax = 52

func validateCronJob(cj *batchv1.CronJob, allowTZInSchedule bool) field.ErrorList {
	var errs field.ErrorList
	if len(cj.Name) > cronJobNameMax {
		errs = append(errs, field.Invalid(metaPath.Child("name"), cj.Name, fmt.Sprintf("must be no more than %d characters", cronJobNameMax)))
	}
	spec, p := &cj.Spec, specPath
	if spec.Schedule == "" {
		errs = append(errs, field.Required(p.Child("schedule"), ""))
	} else {
		errs = append(errs, validateSchedule(spec.Schedule, allowTZInSchedule, spec.TimeZone, p.Child("schedule"))...)
	}
	errs = append(errs, validateTimeZone(spec.TimeZone, p.Child("timeZone"))...)
	if spec.StartingDeadlineSeconds != nil {
		errs = append(errs, nonNegative(*spec.StartingDeadlineSeconds, p.Child("startingDeadlineSeconds"))...)
	}
	switch spec.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		errs = append(errs, field.Required(p.Child("concurrencyPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("concurrencyPolicy"), spec.ConcurrencyPolicy,
			[]batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}))
	}
	if spec.SuccessfulJobsHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*spec.SuccessfulJobsHistoryLimit), p.Child("successfulJobsHistoryLimit"))...)
	}
	if spec.FailedJobsHistoryLimit != nil {
		errs = append(errs, nonNegative(int64(*spec.FailedJobsHistoryLimit), p.Child("failedJobsHistoryLimit"))...)
	}
	return append(errs, validateJobTemplate(&spec.JobTemplate, p.Child("jobTemplate"))...)
}

// validateSchedule parses the schedule as the controller will (five
// fields or a macro) and refuses TZ= and CRON_TZ= prefixes, which the
// timeZone field replaces. A schedule that already had one may keep it.
func validateSchedule(schedule string, allowTZ bool, timeZone *string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, err := cron.ParseStandard(schedule); err != nil {
		errs = append(errs, field.Invalid(fldPath, schedule, err.Error()))
	}
	switch {
	case allowTZ && strings.Contains(schedule, "TZ") && timeZone != nil:
		errs = append(errs, field.Invalid(fldPath, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
	case !allowTZ && strings.Contains(schedule, "TZ"):
		errs = append(errs, field.Invalid(fldPath, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	}
	return errs
}

func validateTimeZone(tz *string, fldPath *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	switch {
	case *tz == "":
		return field.ErrorList{field.Invalid(fldPath, tz, "timeZone must be nil or non-empty string")}
	case strings.EqualFold(*tz, "Local"):
		return field.ErrorList{field.Invalid(fldPath, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones")}
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		return field.ErrorList{field.Invalid(fldPath, tz, err.Error())}
	}
	return nil
}

// validateJobTemplate checks the Job spec a CronJob stamps out. Its
// selector is generated per Job, so none is needed here.
func validateJobTemplate(t *batchv1.JobTemplateSpec, fldPath *field.Path) field.ErrorList {
	errs := templateMeta(&t.ObjectMeta, fldPath.Child("metadata"))
	spec := t.Spec.DeepCopy()
	if ptr.Deref(spec.ManualSelector, false) {
		errs = append(errs, field.NotSupported(fldPath.Child("spec", "manualSelector"), spec.ManualSelector, []string{"nil", "false"}))
	}
	if spec.Selector == nil {
		spec.Selector = &metav1.LabelSelector{}
	}
	return append(errs, validateJobSpec(spec, fldPath.Child("spec"))...)
}

func validateCronJobStatus(s *batchv1.CronJobStatus) field.ErrorList {
	var errs field.ErrorList
	for i, ref := range s.Active {
		if ref.Name == "" {
			errs = append(errs, field.Required(statusPath.Child("active").Index(i).Child("name"), ""))
		}
	}
	return errs
}
