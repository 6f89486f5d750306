package svcutil

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/client/record"
)

// SliceActionType says what a SliceAction does.
type SliceActionType string

// The writes of the EndpointSlice and mirroring controllers.
const (
	// CreateSlice creates Slice, named by the apiserver (generateName).
	CreateSlice SliceActionType = "CreateSlice"
	// UpdateSlice writes Slice, a changed copy of an existing one.
	UpdateSlice SliceActionType = "UpdateSlice"
	// DeleteSlice deletes Slice if it still has the same UID.
	DeleteSlice SliceActionType = "DeleteSlice"
	// Warn records a Warning event (Reason, Message) on the object the
	// slices stand for.
	Warn SliceActionType = "Warn"
)

// SliceAction is one write of an EndpointSlice controller.
type SliceAction struct {
	Type            SliceActionType
	Slice           *discoveryv1.EndpointSlice
	Reason, Message string
}

func (a SliceAction) String() string {
	if a.Slice == nil {
		return string(a.Type) + " " + a.Reason
	}
	name := a.Slice.Name
	if name == "" {
		name = a.Slice.GenerateName + "*"
	}
	return string(a.Type) + " " + a.Slice.Namespace + "/" + name
}

// SliceWrites are the slices a plan writes, before they are actions.
type SliceWrites struct {
	Create, Update, Delete []*discoveryv1.EndpointSlice
}

// Actions lists the creates, then the updates, then the deletes, so that
// a Service never lists fewer endpoints on the way.
func (w SliceWrites) Actions() []SliceAction {
	var out []SliceAction
	for _, step := range []struct {
		t  SliceActionType
		ss []*discoveryv1.EndpointSlice
	}{{CreateSlice, w.Create}, {UpdateSlice, w.Update}, {DeleteSlice, w.Delete}} {
		for _, s := range step.ss {
			out = append(out, SliceAction{Type: step.t, Slice: s})
		}
	}
	return out
}

// ErrNamespaceTerminating is a create refused because the slice's
// namespace is going: so are its Service and pods, and the sync ends
// without error.
var ErrNamespaceTerminating = errors.New("namespace is terminating")

// SliceSink performs SliceActions through the apiserver for one queue
// key and records each write in Tracker, which tells the controller
// when its cache has caught up with them.
type SliceSink struct {
	API     *client.Typed[discoveryv1.EndpointSlice]
	Tracker *SliceTracker
	Key     string
	// Rec records the Warn events, on Object.
	Rec    *record.Recorder
	Object client.Object
}

// Do performs a.
func (s SliceSink) Do(ctx context.Context, a SliceAction) error {
	switch a.Type {
	case CreateSlice:
		got, err := s.API.Create(ctx, a.Slice, metav1.CreateOptions{})
		if err != nil {
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return ErrNamespaceTerminating
			}
			return err
		}
		s.Tracker.Expect(s.Key, got)
	case UpdateSlice:
		got, err := s.API.Update(ctx, a.Slice, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		s.Tracker.Expect(s.Key, got)
	case DeleteSlice:
		uid := a.Slice.UID
		err := s.API.Delete(ctx, a.Slice.Namespace, a.Slice.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		s.Tracker.ExpectDeletion(s.Key, a.Slice)
	case Warn:
		s.Rec.Eventf(s.Object, corev1.EventTypeWarning, a.Reason, "%s", a.Message)
	}
	return nil
}
