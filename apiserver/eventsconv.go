package apiserver

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// eventsConversion serves events.k8s.io/v1 Events from the core Event
// storage, mapping fields as Kubernetes does (regarding ↔ involvedObject,
// note ↔ message, deprecated* ↔ the old counters and timestamps).
func eventsConversion() *conversion {
	return &conversion{
		toStorage: func(obj runtime.Object) (runtime.Object, error) {
			e, ok := obj.(*eventsv1.Event)
			if !ok {
				return nil, fmt.Errorf("expected an events.k8s.io Event, got %T", obj)
			}
			out := &corev1.Event{
				ObjectMeta:          e.ObjectMeta,
				InvolvedObject:      e.Regarding,
				Related:             e.Related,
				Message:             e.Note,
				Reason:              e.Reason,
				Type:                e.Type,
				Action:              e.Action,
				EventTime:           e.EventTime,
				ReportingController: e.ReportingController,
				ReportingInstance:   e.ReportingInstance,
				Source:              e.DeprecatedSource,
				FirstTimestamp:      e.DeprecatedFirstTimestamp,
				LastTimestamp:       e.DeprecatedLastTimestamp,
				Count:               e.DeprecatedCount,
			}
			out.APIVersion, out.Kind = "v1", "Event"
			if e.Series != nil {
				out.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
			}
			return out, nil
		},
		fromStorage: func(obj runtime.Object) (runtime.Object, error) {
			e, ok := obj.(*corev1.Event)
			if !ok {
				return nil, fmt.Errorf("expected a core Event, got %T", obj)
			}
			out := &eventsv1.Event{
				ObjectMeta:               e.ObjectMeta,
				Regarding:                e.InvolvedObject,
				Related:                  e.Related,
				Note:                     e.Message,
				Reason:                   e.Reason,
				Type:                     e.Type,
				Action:                   e.Action,
				EventTime:                e.EventTime,
				ReportingController:      e.ReportingController,
				ReportingInstance:        e.ReportingInstance,
				DeprecatedSource:         e.Source,
				DeprecatedFirstTimestamp: e.FirstTimestamp,
				DeprecatedLastTimestamp:  e.LastTimestamp,
				DeprecatedCount:          e.Count,
			}
			out.APIVersion, out.Kind = "events.k8s.io/v1", "Event"
			if e.Series != nil {
				out.Series = &eventsv1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
			}
			return out, nil
		},
	}
}
