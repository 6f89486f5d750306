// Package record sends Kubernetes Events for the components, the way
// `kubectl describe` shows them: one Event per (object, type, reason,
// message), whose count and lastTimestamp grow when it repeats. Similar
// events are combined and a spam filter bounds each object's events, with
// Kubernetes' rules (correlate.go).
//
//	Eventf ─▶ correlate ─▶ one of 4 queues by event key (bounded, never blocks) ─▶ Run's senders
//	          (combine, drop spam)                        ├─ new:    POST events
//	                                                      └─ repeat: PATCH count+1, lastTimestamp
package record

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik/client"
)

// maxQueued bounds the events waiting to be sent, across lanes; beyond
// it events are dropped (and logged) rather than slowing the component
// down. A burst as large as scheduling 10,000 pods at once fits.
const maxQueued = 10000

// lanes bounds the events in flight. Repeats of one event always take the
// same lane, so their count is patched in order. Upstream's recorder sends
// each event from its own goroutine; a handful of senders instead falls
// behind a scheduler binding hundreds of pods at once, which has hundreds
// of requests in flight.
const lanes = 64

// maxAggregated bounds the remembered events used for counting repeats.
const maxAggregated = 4096

// Recorder emits events for one component instance. Recorders made by
// For share their senders, spam filter and counts with the one they were
// made from.
type Recorder struct {
	*sink
	component string
	instance  string
}

// sink is what the recorders of one process share: the lanes, their
// senders and what was sent.
type sink struct {
	events  *client.Typed[corev1.Event]
	now     func() time.Time
	dropped atomic.Int64

	qmu     sync.Mutex
	lanes   map[uint32]*lane // only lanes with events waiting or in flight
	queued  int              // events waiting, across lanes
	running context.Context  // Run's while it runs
	senders sync.WaitGroup

	mu         sync.Mutex
	correlator *correlator
	seen       map[string]sentEvent // by the key correlate returned
}

// sentEvent is what is kept of an event sent, to count its repeats (as
// Kubernetes' event logger keeps a count and a name, not the event): an
// idle component may remember thousands.
type sentEvent struct {
	namespace, name, message string
	count                    int32
}

// queued is an event waiting to be sent, with the key its repeats share.
type queued struct {
	ev  *corev1.Event
	key string
}

// NewRecorder returns a recorder reporting as component (e.g.
// "default-scheduler") from instance (e.g. the host or node name).
func NewRecorder(c *client.Client, component, instance string) *Recorder {
	s := &sink{events: c.Events(), now: time.Now, seen: map[string]sentEvent{}, correlator: newCorrelator(),
		lanes: map[uint32]*lane{}}
	return &Recorder{sink: s, component: component, instance: instance}
}

// For returns a recorder reporting as component from the same instance,
// sent by r's senders (one Run serves both): each controller of the
// controller manager reports under its own name, as upstream's do
// ("deployment-controller"), over one set of senders.
func (r *Recorder) For(component string) *Recorder {
	return &Recorder{sink: r.sink, component: component, instance: r.instance}
}

// Eventf queues an event about obj. eventType is corev1.EventTypeNormal
// or corev1.EventTypeWarning. It never blocks.
func (r *Recorder) Eventf(obj client.Object, eventType, reason, messageFmt string, args ...any) {
	ref := Reference(obj)
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault // events about cluster-scoped objects live in default
	}
	now := metav1.NewTime(r.now())
	ev := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", ref.Name, now.UnixNano()), Namespace: ns},
		InvolvedObject:      ref,
		Reason:              reason,
		Message:             fmt.Sprintf(messageFmt, args...),
		Type:                eventType,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Source:              corev1.EventSource{Component: r.component, Host: r.instance},
		ReportingController: r.component,
		ReportingInstance:   r.instance,
	}
	r.mu.Lock()
	key, ok := r.correlator.correlate(ev, now.Time)
	r.mu.Unlock()
	if !ok {
		return // the spam filter: this object has had its share of events
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	if !r.push(h.Sum32()%lanes, queued{ev: ev, key: key}) {
		// Under a burst, say so once per thousand drops rather than per event.
		if n := r.dropped.Add(1); n%1000 == 1 {
			slog.Warn("events dropped: queue full", "dropped", n, "reason", reason)
		}
	}
}

// lane is one FIFO of events, sent one at a time by its own goroutine
// while it holds any: an idle sink holds no lane and no goroutine (5,000
// hollow kubelets share one process).
type lane struct {
	items []queued
}

// push queues it on lane i and starts the lane's sender if Run has been
// called, or reports false when maxQueued events already wait.
func (r *sink) push(i uint32, it queued) bool {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	if r.queued >= maxQueued {
		return false
	}
	l, ok := r.lanes[i]
	if !ok {
		l = &lane{}
		r.lanes[i] = l
		if r.running != nil {
			r.startLocked(r.running, i, l)
		}
	}
	l.items = append(l.items, it)
	r.queued++
	return true
}

func (r *sink) startLocked(ctx context.Context, i uint32, l *lane) {
	r.senders.Add(1)
	go func() {
		defer r.senders.Done()
		for it, ok := r.pop(ctx, i, l); ok; it, ok = r.pop(ctx, i, l) {
			r.send(ctx, it.ev, it.key)
		}
	}()
}

// pop returns lane i's oldest event, or removes the lane when it is empty
// or ctx has ended (its sender then stops).
func (r *sink) pop(ctx context.Context, i uint32, l *lane) (queued, bool) {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	if len(l.items) == 0 || ctx.Err() != nil {
		r.queued -= len(l.items)
		delete(r.lanes, i)
		return queued{}, false
	}
	it := l.items[0]
	l.items[0] = queued{}
	l.items = l.items[1:]
	r.queued--
	return it, true
}

// Reference describes obj for an event's involvedObject.
func Reference(obj client.Object) corev1.ObjectReference {
	gvk := obj.GetObjectKind().GroupVersionKind()
	kind, apiVersion := gvk.Kind, gvk.GroupVersion().String()
	if kind == "" {
		kind = reflect.Indirect(reflect.ValueOf(obj)).Type().Name()
		apiVersion = apiVersionOf(kind)
	}
	return corev1.ObjectReference{Kind: kind, APIVersion: apiVersion, Namespace: obj.GetNamespace(),
		Name: obj.GetName(), UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion()}
}

func apiVersionOf(kind string) string {
	switch kind {
	case "Deployment", "ReplicaSet", "DaemonSet", "StatefulSet":
		return "apps/v1"
	case "Job", "CronJob":
		return "batch/v1"
	case "HorizontalPodAutoscaler":
		return "autoscaling/v2"
	case "EndpointSlice":
		return "discovery.k8s.io/v1"
	case "Lease":
		return "coordination.k8s.io/v1"
	case "PodDisruptionBudget":
		return "policy/v1"
	}
	return "v1"
}

// Run sends queued events until ctx ends, and returns once its senders
// have stopped.
func (r *sink) Run(ctx context.Context) {
	r.qmu.Lock()
	r.running = ctx
	for i, l := range r.lanes {
		r.startLocked(ctx, i, l)
	}
	r.qmu.Unlock()
	<-ctx.Done()
	r.qmu.Lock()
	r.running = nil // events queued from now on wait; none starts a sender
	r.qmu.Unlock()
	r.senders.Wait()
}

func (r *sink) send(ctx context.Context, ev *corev1.Event, key string) {
	r.mu.Lock()
	prev, ok := r.seen[key]
	r.mu.Unlock()
	if ok {
		fields := map[string]any{"count": prev.count + 1, "lastTimestamp": ev.LastTimestamp}
		if ev.Message != prev.message {
			fields["message"] = ev.Message // a combined event shows the latest message
		}
		patch, _ := json.Marshal(fields)
		updated, err := r.events.Patch(ctx, prev.namespace, prev.name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			r.remember(key, updated)
			return
		}
		if !apierrors.IsNotFound(err) {
			slog.Debug("event patch failed", "reason", ev.Reason, "err", err)
			return
		}
		// The old event is gone (deleted or expired): start a new one.
	}
	created, err := r.events.Create(ctx, ev, metav1.CreateOptions{})
	if err != nil {
		if ctx.Err() == nil {
			slog.Debug("event create failed", "reason", ev.Reason, "err", err)
		}
		return
	}
	r.remember(key, created)
}

func (r *sink) remember(key string, ev *corev1.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) >= maxAggregated {
		// Forget everything rather than track ages: repeats then start a
		// fresh event, which is what Kubernetes does after its cache expires.
		r.seen = map[string]sentEvent{}
	}
	r.seen[key] = sentEvent{namespace: ev.Namespace, name: ev.Name, message: ev.Message, count: ev.Count}
}
