package printers

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// eventView holds the fields the Event columns read. Both Event APIs map
// onto it the way upstream converts events.k8s.io/v1 to the core type.
type eventView struct {
	name                string
	eventType, reason   string
	involved            corev1.ObjectReference
	source              corev1.EventSource
	reportingController string
	reportingInstance   string
	message             string
	firstTimestamp      time.Time
	lastTimestamp       time.Time
	eventTime           time.Time
	series              *eventsv1.EventSeries
	count               int32
}

func coreEventView(e *corev1.Event) eventView {
	v := eventView{
		name: e.Name, eventType: e.Type, reason: e.Reason,
		involved: e.InvolvedObject, source: e.Source,
		reportingController: e.ReportingController, reportingInstance: e.ReportingInstance,
		message:        e.Message,
		firstTimestamp: e.FirstTimestamp.Time, lastTimestamp: e.LastTimestamp.Time,
		eventTime: e.EventTime.Time, count: e.Count,
	}
	if e.Series != nil {
		v.series = &eventsv1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return v
}

func eventsEventView(e *eventsv1.Event) eventView {
	return eventView{
		name: e.Name, eventType: e.Type, reason: e.Reason,
		involved: e.Regarding, source: e.DeprecatedSource,
		reportingController: e.ReportingController, reportingInstance: e.ReportingInstance,
		message:        e.Note,
		firstTimestamp: e.DeprecatedFirstTimestamp.Time, lastTimestamp: e.DeprecatedLastTimestamp.Time,
		eventTime: e.EventTime.Time, series: e.Series, count: e.DeprecatedCount,
	}
}

// eventRow prints LAST-SEEN TYPE REASON OBJECT SUBOBJECT SOURCE MESSAGE
// FIRST-SEEN COUNT NAME for a core/v1 or an events.k8s.io/v1 Event.
func eventRow(obj runtime.Object, now time.Time) (metav1.TableRow, error) {
	var v eventView
	switch e := obj.(type) {
	case *corev1.Event:
		v = coreEventView(e)
	case *eventsv1.Event:
		v = eventsEventView(e)
	default:
		return metav1.TableRow{}, fmt.Errorf("unexpected object type %T, want *v1.Event", obj)
	}

	// Events written through the new API have only eventTime and series;
	// older ones only first/last timestamps and count.
	firstSeen := since(v.firstTimestamp, now)
	if v.firstTimestamp.IsZero() {
		firstSeen = since(v.eventTime, now)
	}
	lastSeen := since(v.lastTimestamp, now)
	if v.lastTimestamp.IsZero() {
		lastSeen = firstSeen
	}
	count := v.count
	if v.series != nil {
		lastSeen = since(v.series.LastObservedTime.Time, now)
		count = v.series.Count
	} else if count == 0 {
		count = 1
	}

	object := strings.ToLower(v.involved.Kind)
	if v.involved.Name != "" {
		object += "/" + v.involved.Name
	}
	return row(
		lastSeen,
		v.eventType,
		v.reason,
		object,
		v.involved.FieldPath,
		eventSource(v),
		strings.TrimSpace(v.message),
		firstSeen,
		int64(count),
		v.name,
	), nil
}

// eventSource is "component, host", falling back to the reporting
// controller and instance that the new Event API sets instead.
func eventSource(v eventView) string {
	component := firstNonEmpty(v.source.Component, v.reportingController)
	host := firstNonEmpty(v.source.Host, v.reportingInstance)
	if host == "" {
		return component
	}
	return component + ", " + host
}

// firstNonEmpty returns a, or b if a is empty.
func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
