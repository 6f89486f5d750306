package printers

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var statefulSetColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
	ageColumn,
	containersColumn,
	imagesColumn,
}

var controllerRevisionColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Controller", Type: "string", Description: "Controller of the object"},
	{Name: "Revision", Type: "integer", Description: appsv1.ControllerRevision{}.SwaggerDoc()["revision"]},
	ageColumn,
}

var cronJobColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Schedule", Type: "string", Description: batchv1.CronJobSpec{}.SwaggerDoc()["schedule"]},
	{Name: "Timezone", Type: "string", Description: batchv1.CronJobSpec{}.SwaggerDoc()["timeZone"]},
	{Name: "Suspend", Type: "boolean", Description: batchv1.CronJobSpec{}.SwaggerDoc()["suspend"]},
	{Name: "Active", Type: "integer", Description: batchv1.CronJobStatus{}.SwaggerDoc()["active"]},
	{Name: "Last Schedule", Type: "string", Description: batchv1.CronJobStatus{}.SwaggerDoc()["lastScheduleTime"]},
	ageColumn,
	containersColumn,
	imagesColumn,
	selectorColumn(batchv1.JobSpec{}.SwaggerDoc()["selector"]),
}

// statefulSetRow prints NAME READY AGE CONTAINERS IMAGES.
func statefulSetRow(s *appsv1.StatefulSet, now time.Time) metav1.TableRow {
	names, images := containerCells(s.Spec.Template.Spec.Containers)
	return row(s.Name, fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, replicas(s.Spec.Replicas)),
		since(s.CreationTimestamp.Time, now), names, images)
}

// controllerRevisionRow prints NAME CONTROLLER REVISION AGE; the
// controller as kind.group/name ("statefulset.apps/web").
func controllerRevisionRow(r *appsv1.ControllerRevision, now time.Time) metav1.TableRow {
	controller := "<none>"
	if ref := metav1.GetControllerOf(r); ref != nil {
		gv, _ := schema.ParseGroupVersion(ref.APIVersion)
		controller = strings.ToLower(gv.WithKind(ref.Kind).GroupKind().String()) + "/" + ref.Name
	}
	return row(r.Name, controller, r.Revision, since(r.CreationTimestamp.Time, now))
}

// cronJobRow prints NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST-SCHEDULE
// AGE CONTAINERS IMAGES SELECTOR.
func cronJobRow(cj *batchv1.CronJob, now time.Time) metav1.TableRow {
	tz := "<none>"
	if cj.Spec.TimeZone != nil {
		tz = *cj.Spec.TimeZone
	}
	suspend := "<unset>"
	if cj.Spec.Suspend != nil {
		suspend = "False"
		if *cj.Spec.Suspend {
			suspend = "True"
		}
	}
	last := "<none>"
	if t := cj.Status.LastScheduleTime; t != nil {
		last = since(t.Time, now)
	}
	names, images := containerCells(cj.Spec.JobTemplate.Spec.Template.Spec.Containers)
	return row(cj.Name, cj.Spec.Schedule, tz, suspend, int64(len(cj.Status.Active)), last,
		since(cj.CreationTimestamp.Time, now), names, images, metav1.FormatLabelSelector(cj.Spec.JobTemplate.Spec.Selector))
}
