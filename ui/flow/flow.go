// Package flow turns what a watcher sees (pod watch events and Events,
// each with the time it was seen) into a pod's path through the cluster:
// the numbered steps of the seeds, each lit with when it happened. It is
// pure: the caller passes the times, so tables test it.
//
//	pod ADDED/MODIFIED ──┐
//	                     ├─▶ Model.track[ns/name] ──▶ Flow (10 steps: time, component, detail)
//	Event (pod or owner) ┘
//
// A step is lit the first time its evidence is seen:
//
//	1 created    first ADDED                         (apiserver)
//	2 persisted  first ADDED: its resourceVersion     (etcd)
//	3 controller first ADDED of a pod a controller owns (controller; skipped for a pod without one;
//	             its SuccessfulCreate Event adds the detail)
//	4 scheduled  Event Scheduled / PodScheduled=True  (scheduler)
//	5 bound      spec.nodeName set                    (apiserver: pods/binding)
//	6 kubelet    status.startTime set, or its first Event for the pod   (kubelet)
//	7 sandbox    PodReadyToStartContainers or podIP, or Pulling/Pulled  (runtime; the
//	             kubelet pulls images only once the sandbox runs)
//	8 image      Event Pulled, or a container running                   (kubelet, runtime)
//	9 started    Event Started, or every container running              (runtime)
//	10 ready     Ready=True                                             (kubelet)
//
// Each step needs the ones before it, so a step seen at T means the
// earlier ones happened by T: an earlier step not seen yet (its evidence
// comes later on another stream, or never) is lit at T, "implied", and
// one seen after T is moved back to T. Times are therefore in order.
package flow

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The steps, in order (index + 1 is the step's number).
var stepNames = []struct{ name, component string }{
	{"created", "apiserver"},
	{"persisted", "etcd"},
	{"controller", "controller"},
	{"scheduled", "scheduler"},
	{"bound", "apiserver"},
	{"kubelet", "kubelet"},
	{"sandbox", "runtime"},
	{"image", "kubelet"},
	{"started", "runtime"},
	{"ready", "kubelet"},
}

// Step indexes.
const (
	Created = iota
	Persisted
	Controller
	Scheduled
	Bound
	KubeletSaw
	Sandbox
	Image
	Started
	Ready
	NumSteps
)

// Step is one numbered step of a pod's path.
type Step struct {
	N         int       `json:"n"`
	Name      string    `json:"name"`
	Component string    `json:"component"`
	At        time.Time `json:"at,omitzero"` // zero: not yet
	// SinceMs is the time since the previous lit step, in milliseconds.
	SinceMs float64 `json:"sinceMs,omitempty"`
	Detail  string  `json:"detail,omitempty"`
	Skipped bool    `json:"skipped,omitempty"` // does not apply to this pod
}

// Flow is a pod's path.
type Flow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	Node      string `json:"node,omitempty"`
	Phase     string `json:"phase,omitempty"`
	// Waiting is why the pod waits (the last FailedScheduling message).
	Waiting string `json:"waiting,omitempty"`
	Deleted bool   `json:"deleted,omitempty"`
	Steps   []Step `json:"steps"`
}

type track struct {
	flow  Flow
	owner string // "Kind/name" of the controller owner, or ""
}

// Model follows every pod it is told about.
type Model struct {
	pods map[string]*track // by namespace/name
	// Max bounds the pods followed; the oldest deleted ones go first.
	Max int
}

// New returns an empty model.
func New() *Model {
	return &Model{pods: map[string]*track{}, Max: 10000}
}

func key(ns, name string) string { return ns + "/" + name }

func newTrack(p *corev1.Pod) *track {
	t := &track{flow: Flow{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), Steps: make([]Step, NumSteps)}}
	for i, s := range stepNames {
		t.flow.Steps[i] = Step{N: i + 1, Name: s.name, Component: s.component}
	}
	if ref := metav1.GetControllerOf(p); ref != nil {
		t.owner = ref.Kind + "/" + ref.Name
	} else {
		t.flow.Steps[Controller].Skipped = true
		t.flow.Steps[Controller].Detail = "no controller: created directly"
	}
	return t
}

func (t *track) light(i int, at time.Time, detail string) {
	s := &t.flow.Steps[i]
	if !s.At.IsZero() {
		if s.Detail == "" {
			s.Detail = detail // a later, more telling evidence
		}
		return
	}
	s.At = at
	if detail != "" {
		s.Detail = detail
	}
}

// Pod takes a pod watch event (typ ADDED, MODIFIED or DELETED) seen at seen.
func (m *Model) Pod(typ string, p *corev1.Pod, seen time.Time) {
	k := key(p.Namespace, p.Name)
	t := m.pods[k]
	if t == nil || t.flow.UID != string(p.UID) {
		if typ == "DELETED" {
			return
		}
		t = newTrack(p)
		m.pods[k] = t
		m.trim()
	}
	if typ == "DELETED" {
		t.flow.Deleted = true
		return
	}
	f := &t.flow
	f.Node, f.Phase = p.Spec.NodeName, string(p.Status.Phase)
	t.light(Created, seen, "at "+p.CreationTimestamp.UTC().Format(time.RFC3339))
	t.light(Persisted, seen, "resourceVersion "+p.ResourceVersion)
	if t.owner != "" {
		t.light(Controller, seen, "created by "+t.owner)
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable {
				f.Waiting = c.Message
			}
			continue
		}
		switch c.Type {
		case corev1.PodScheduled:
			t.light(Scheduled, seen, "")
			f.Waiting = ""
		case "PodReadyToStartContainers":
			t.light(Sandbox, seen, "sandbox and network ready")
		case corev1.PodReady:
			t.light(Ready, seen, "")
		}
	}
	if p.Spec.NodeName != "" {
		t.light(Scheduled, seen, "")
		t.light(Bound, seen, "to "+p.Spec.NodeName)
		f.Waiting = ""
	}
	if p.Status.StartTime != nil {
		t.light(KubeletSaw, seen, "on "+p.Spec.NodeName)
	}
	if p.Status.PodIP != "" {
		t.light(Sandbox, seen, "pod IP "+p.Status.PodIP)
	}
	if n := len(p.Status.ContainerStatuses); n > 0 && n >= len(p.Spec.Containers) {
		all := true
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running == nil && cs.State.Terminated == nil {
				all = false
			}
		}
		if all {
			t.light(Image, seen, "") // a container ran: its image was there
			t.light(Started, seen, "")
		}
	}
	m.since(t)
}

// Event takes an Event seen at seen.
func (m *Model) Event(e *corev1.Event, seen time.Time) {
	obj := e.InvolvedObject
	if e.Reason == "SuccessfulCreate" && strings.HasPrefix(e.Message, "Created pod: ") {
		pk := key(obj.Namespace, strings.TrimPrefix(e.Message, "Created pod: "))
		if t := m.pods[pk]; t != nil && t.owner == obj.Kind+"/"+obj.Name {
			t.flow.Steps[Controller].Detail = obj.Kind + " " + obj.Name + ": " + e.Message
		}
		return
	}
	if obj.Kind != "Pod" {
		return
	}
	t := m.pods[key(obj.Namespace, obj.Name)]
	if t == nil || (obj.UID != "" && string(obj.UID) != t.flow.UID) {
		return
	}
	switch e.Reason {
	case "Scheduled":
		t.light(Scheduled, seen, e.Message)
	case "FailedScheduling":
		if t.flow.Steps[Scheduled].At.IsZero() {
			t.flow.Waiting = e.Message
		}
	case "Pulling":
		t.light(KubeletSaw, seen, "its first Event: Pulling")
		t.light(Sandbox, seen, "running before the image pull")
	case "Pulled":
		t.light(KubeletSaw, seen, "its first Event: Pulled")
		t.light(Sandbox, seen, "running before the image pull")
		t.light(Image, seen, e.Message)
	case "Started":
		t.light(Started, seen, e.Message)
	}
	m.since(t)
}

// since orders the steps (see the package comment) and recomputes the
// times between them.
func (m *Model) since(t *track) {
	var bound time.Time
	for i := len(t.flow.Steps) - 1; i >= 0; i-- {
		s := &t.flow.Steps[i]
		switch {
		case s.Skipped:
		case s.At.IsZero() && !bound.IsZero():
			s.At = bound
			if s.Detail == "" {
				s.Detail = "implied by a later step"
			}
		case !s.At.IsZero() && !bound.IsZero() && s.At.After(bound):
			s.At = bound
		}
		if !s.At.IsZero() {
			bound = s.At
		}
	}
	var prev time.Time
	for i := range t.flow.Steps {
		s := &t.flow.Steps[i]
		s.SinceMs = 0
		if s.At.IsZero() {
			continue
		}
		if !prev.IsZero() {
			s.SinceMs = float64(s.At.Sub(prev).Microseconds()) / 1000
		}
		prev = s.At
	}
}

// trim forgets deleted pods beyond Max.
func (m *Model) trim() {
	if len(m.pods) <= m.Max {
		return
	}
	for k, t := range m.pods {
		if t.flow.Deleted {
			delete(m.pods, k)
			if len(m.pods) <= m.Max {
				return
			}
		}
	}
}

// Flow returns the path of pod namespace/name.
func (m *Model) Flow(namespace, name string) (Flow, bool) {
	t := m.pods[key(namespace, name)]
	if t == nil {
		return Flow{}, false
	}
	f := t.flow
	f.Steps = append([]Step(nil), f.Steps...)
	return f, true
}
