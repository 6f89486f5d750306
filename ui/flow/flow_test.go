package flow

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// input is one thing the watcher saw.
type input struct {
	at    int // ms after t0
	typ   string
	pod   *corev1.Pod
	event *corev1.Event
}

func pod(mut ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1", UID: "u1", ResourceVersion: "10",
		CreationTimestamp: metav1.NewTime(t0)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
	for _, m := range mut {
		m(p)
	}
	return p
}

func owned(p *corev1.Pod) {
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", Controller: &yes}}
}
func bound(p *corev1.Pod) { p.Spec.NodeName = "n1" }
func started(p *corev1.Pod) {
	now := metav1.NewTime(t0)
	p.Status.StartTime = &now
}
func withIP(p *corev1.Pod) { p.Status.PodIP = "10.244.0.5" }
func running(p *corev1.Pod) {
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	p.Status.Phase = corev1.PodRunning
}
func ready(p *corev1.Pod) {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
}
func unschedulable(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: "0/2 nodes are available: 2 Insufficient cpu."}}
}

func event(kind, name, reason, msg string) *corev1.Event {
	return &corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: "default", Name: name}, Reason: reason, Message: msg}
}

func TestFlow(t *testing.T) {
	cases := []struct {
		name    string
		inputs  []input
		want    []int // ms of each step; -1 not lit, -2 skipped
		waiting string
	}{
		{"a ReplicaSet's pod lights every step at the time its evidence was seen", []input{
			{at: 5, typ: "ADDED", pod: pod(owned)},
			{at: 6, event: event("ReplicaSet", "web", "SuccessfulCreate", "Created pod: web-1")},
			{at: 20, event: event("Pod", "web-1", "Scheduled", "Successfully assigned default/web-1 to n1")},
			{at: 21, typ: "MODIFIED", pod: pod(owned, bound)},
			{at: 40, typ: "MODIFIED", pod: pod(owned, bound, started)},
			{at: 300, typ: "MODIFIED", pod: pod(owned, bound, started, withIP)},
			{at: 900, event: event("Pod", "web-1", "Pulled", `Container image "busybox" already present on machine`)},
			{at: 950, event: event("Pod", "web-1", "Started", "Started container c")},
			{at: 960, typ: "MODIFIED", pod: pod(owned, bound, started, withIP, running, ready)},
		}, []int{5, 5, 5, 20, 21, 40, 300, 900, 950, 960}, ""},
		{"a step seen before earlier ones lights them: they happened by then", []input{
			{at: 5, typ: "ADDED", pod: pod(owned, bound)},
			{at: 7, event: event("Pod", "web-1", "Pulled", "Container image already present on machine")},
			{at: 9, typ: "MODIFIED", pod: pod(owned, bound, started, withIP)},
		}, []int{5, 5, 5, 5, 5, 7, 7, 7, -1, -1}, ""},
		{"a step seen after a later one moves back to the later one's time", []input{
			{at: 1, typ: "ADDED", pod: pod()},
			{at: 10, event: event("Pod", "web-1", "Started", "Started container c")},
			{at: 12, event: event("Pod", "web-1", "Scheduled", "Successfully assigned default/web-1 to n1")},
		}, []int{1, 1, -2, 10, 10, 10, 10, 10, 10, -1}, ""},
		{"a pod created directly skips the controller step", []input{
			{at: 1, typ: "ADDED", pod: pod()},
		}, []int{1, 1, -2, -1, -1, -1, -1, -1, -1, -1}, ""},
		{"an unschedulable pod waits with the scheduler's message", []input{
			{at: 1, typ: "ADDED", pod: pod()},
			{at: 9, typ: "MODIFIED", pod: pod(unschedulable)},
		}, []int{1, 1, -2, -1, -1, -1, -1, -1, -1, -1}, "0/2 nodes are available: 2 Insufficient cpu."},
		{"a bound pod whose Scheduled Event was missed is scheduled when seen bound", []input{
			{at: 1, typ: "ADDED", pod: pod()},
			{at: 4, typ: "MODIFIED", pod: pod(bound)},
		}, []int{1, 1, -2, 4, 4, -1, -1, -1, -1, -1}, ""},
		{"a running container lights the image step if the Pulled Event was missed", []input{
			{at: 1, typ: "ADDED", pod: pod(bound, started, withIP, running)},
		}, []int{1, 1, -2, 1, 1, 1, 1, 1, 1, -1}, ""},
		{"Events of another pod of the same name are ignored", []input{
			{at: 1, typ: "ADDED", pod: pod()},
			{at: 2, event: &corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-1", UID: "old"}, Reason: "Scheduled"}},
		}, []int{1, 1, -2, -1, -1, -1, -1, -1, -1, -1}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := New()
			for _, in := range tc.inputs {
				if in.pod != nil {
					m.Pod(in.typ, in.pod, ms(in.at))
				} else {
					m.Event(in.event, ms(in.at))
				}
			}
			f, ok := m.Flow("default", "web-1")
			if !ok {
				t.Fatal("no flow")
			}
			for i, s := range f.Steps {
				got := -1
				switch {
				case s.Skipped:
					got = -2
				case !s.At.IsZero():
					got = int(s.At.Sub(t0) / time.Millisecond)
				}
				if s.N != i+1 || got != tc.want[i] {
					t.Errorf("step %d (%s): at %d, want %d", s.N, s.Name, got, tc.want[i])
				}
			}
			if f.Waiting != tc.waiting {
				t.Errorf("waiting %q, want %q", f.Waiting, tc.waiting)
			}
		})
	}
}

func TestSinceIsTheTimeFromThePreviousLitStep(t *testing.T) {
	m := New()
	m.Pod("ADDED", pod(), ms(10))
	m.Pod("MODIFIED", pod(bound), ms(35))
	f, _ := m.Flow("default", "web-1")
	if got := f.Steps[Scheduled].SinceMs; got != 25 {
		t.Errorf("scheduled %vms after the previous step, want 25", got)
	}
}

func TestADeletedPodIsMarkedAndANewOneOfTheSameNameStartsAfresh(t *testing.T) {
	m := New()
	m.Pod("ADDED", pod(bound), ms(1))
	m.Pod("DELETED", pod(bound), ms(2))
	if f, _ := m.Flow("default", "web-1"); !f.Deleted {
		t.Error("not marked deleted")
	}
	m.Pod("ADDED", pod(func(p *corev1.Pod) { p.UID = "u2" }), ms(3))
	f, _ := m.Flow("default", "web-1")
	if f.Deleted || f.UID != "u2" || !f.Steps[Bound].At.IsZero() {
		t.Errorf("the new pod inherited the old one's path: %+v", f)
	}
}
