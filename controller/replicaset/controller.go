package replicaset

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"minik/client"
	"minik/client/informer"
	"minik/client/record"
	"minik/controller/framework"
)

// Name is the ReplicaSet controller's name.
const Name = "replicaset"

// Kind adapts one workload type (ReplicaSet, ReplicationController) to
// the shared controller.
type Kind[T any] struct {
	// Name of the controller (its logs' and its queue's metrics'),
	// APIVersion and Kind of its objects.
	Name, APIVersion, Kind string
	Informer               *informer.Informer[T]
	API                    *client.Typed[T]
	// Workload extracts the step's input.
	Workload func(obj *T) (Workload, error)
	// Template returns the pod template.
	Template func(obj *T) *corev1.PodTemplateSpec
	// Status returns obj's status in the form of a ReplicaSet's, and
	// WithStatus a copy of obj with st: the status code is shared, and a
	// ReplicationController, whose status has the same fields, converts.
	Status     func(obj *T) appsv1.ReplicaSetStatus
	WithStatus func(obj *T, st appsv1.ReplicaSetStatus) *T
}

// Controller keeps the replicas of one Kind.
type Controller[T any] struct {
	kind   Kind[T]
	c      *client.Client
	pods   *informer.Informer[corev1.Pod]
	rec    *record.Recorder
	log    *slog.Logger
	clock  clock.Clock
	queue  *framework.Queue
	expect *framework.Expectations
	// sink performs the actions of a sync of obj at now (apiSink; a
	// FakeSink in tests).
	sink func(obj *T, now time.Time) framework.Sink[Action]

	mu sync.Mutex
	// slowStart is the first batch size of the next creation per key: 1
	// after a failure (or at first), else the last batch that succeeded.
	slowStart map[string]int
}

// NewController registers a controller for kind on the shared informers;
// its queue is named kind.Name.
func NewController[T any](kind Kind[T], c *client.Client, inf *framework.Informers, rec *record.Recorder, clk clock.Clock, log *slog.Logger) *Controller[T] {
	rc := &Controller[T]{kind: kind, c: c, pods: inf.Pods, rec: rec, log: log.With("controller", kind.Name), clock: clk,
		queue: framework.NewQueue(framework.QueueConfig{Name: kind.Name, Clock: clk}), expect: framework.NewExpectations(clk),
		slowStart: map[string]int{}}
	rc.sink = func(obj *T, now time.Time) framework.Sink[Action] { return &apiSink[T]{rc: rc, obj: obj, now: now} }
	kind.Informer.AddHandler(informer.Handler[T]{
		OnAdd:    func(o *T) { rc.queue.Add(framework.KeyOf(meta(o))) },
		OnUpdate: func(_, o *T) { rc.queue.Add(framework.KeyOf(meta(o))) },
		OnDelete: func(o *T) {
			key := framework.KeyOf(meta(o))
			rc.expect.Delete(key)
			rc.mu.Lock()
			delete(rc.slowStart, key)
			rc.mu.Unlock()
			rc.queue.Add(key)
		},
	})
	inf.Pods.AddHandler(framework.ClaimingPodHandler(rc.ownerKey, rc.matching, rc.queue, rc.expect))
	return rc
}

func meta[T any](o *T) metav1.Object { return any(o).(metav1.Object) }

// ownerKey returns the key of p's controller if it is of our kind.
func (rc *Controller[T]) ownerKey(p *corev1.Pod) (string, bool) {
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil || ref.Kind != rc.kind.Kind || ref.APIVersion != rc.kind.APIVersion {
		return "", false
	}
	return informer.Key(p.Namespace, ref.Name), true
}

// matching returns the keys of the workloads whose selector matches p.
func (rc *Controller[T]) matching(p *corev1.Pod) []string {
	return framework.MatchingKeys(rc.kind.Informer, p, func(o *T) labels.Selector {
		w, err := rc.workload(o)
		if err != nil {
			return nil
		}
		return w.Selector
	})
}

// Run processes the queue until ctx ends.
func (rc *Controller[T]) Run(ctx context.Context, workers int) {
	framework.RunWorkers(ctx, rc.queue, workers, rc.sync, func(key string, err error) {
		rc.log.Warn("sync failed", "key", key, "err", err)
	})
}

func (rc *Controller[T]) sync(ctx context.Context, key string) (framework.Result, error) {
	ns, name := framework.SplitKey(key)
	obj, ok := rc.kind.Informer.Store().Get(ns, name)
	if !ok {
		rc.expect.Delete(key)
		return framework.Result{}, nil
	}
	w, err := rc.workload(obj)
	if err != nil {
		return framework.Result{}, nil // invalid selector: nothing to do until it changes
	}
	m := meta(obj)
	// Our pods, and the orphans of the namespace.
	pods := rc.pods.Store().ByIndex(framework.ControllerUIDIndex, string(m.GetUID()))
	for _, p := range rc.pods.Store().ByIndex(framework.ControllerUIDIndex, "") {
		if p.Namespace == ns {
			pods = append(pods, p)
		}
	}
	now := rc.clock.Now()
	out := Plan(w, pods, rc.expect.Satisfied(key), now)
	// Each write stands on its own, as the status must be written (with
	// the ReplicaFailure condition) whatever the creates did.
	err = framework.ExecuteAll(ctx, rc.sink(obj, now), out.Actions)
	return framework.Result{RequeueAfter: out.RequeueAfter}, err
}

// workload is the step's input for obj, with its ReplicaFailure condition.
func (rc *Controller[T]) workload(obj *T) (Workload, error) {
	w, err := rc.kind.Workload(obj)
	w.ReplicaFailure = ReplicaFailureOf(rc.kind.Status(obj).Conditions)
	return w, err
}

// apiSink performs the actions of one sync of obj through the
// apiserver, and records their events.
type apiSink[T any] struct {
	rc  *Controller[T]
	obj *T
	now time.Time
	// manageErr is the failure of this sync's creates or deletes, which
	// the status reports.
	manageErr error
}

func (s *apiSink[T]) Do(ctx context.Context, a Action) error {
	rc, m := s.rc, meta(s.obj)
	key := framework.KeyOf(m)
	switch a.Type {
	case AdoptPod:
		refs := framework.AdoptedRefs(a.Pod, framework.ControllerRef(m, rc.kind.APIVersion, rc.kind.Kind))
		return framework.IgnoreNotFound(framework.PatchOwnerRefs(ctx, rc.c, a.Pod, refs))
	case ReleasePod:
		return framework.IgnoreNotFound(framework.PatchOwnerRefs(ctx, rc.c, a.Pod, framework.ReleasedRefs(a.Pod, m.GetUID())))
	case CreatePods:
		s.manageErr = rc.create(ctx, key, s.obj, a.Count)
		return s.manageErr
	case DeletePods:
		s.manageErr = rc.delete(ctx, key, s.obj, a.Pods)
		return s.manageErr
	case UpdateStatus:
		st := a.Status
		st.ReplicaFailure = ReplicaFailureAfter(st.ReplicaFailure, s.manageErr, a.Diff, s.now)
		next, changed := applyStatus(rc.kind.Status(s.obj), st)
		if !changed {
			return nil
		}
		_, err := rc.kind.API.UpdateStatus(ctx, rc.kind.WithStatus(s.obj, next), metav1.UpdateOptions{})
		return framework.IgnoreNotFound(err)
	}
	return fmt.Errorf("unknown action %s", a.Type)
}

// NewPod returns a pod for template, controlled by owner.
func NewPod(template *corev1.PodTemplateSpec, owner metav1.Object, apiVersion, kind string) *corev1.Pod {
	t := template.DeepCopy()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    owner.GetName() + "-",
			Namespace:       owner.GetNamespace(),
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{framework.ControllerRef(owner, apiVersion, kind)},
		},
		Spec: t.Spec,
	}
}

// create makes n pods in slow-start batches, stopping at the first batch
// with an error, which it returns as the apiserver gave it; expectations
// of pods never created are lowered.
func (rc *Controller[T]) create(ctx context.Context, key string, obj *T, n int) error {
	rc.expect.Expect(key, n, nil)
	m := meta(obj)
	tmpl := rc.kind.Template(obj)
	created := 0
	rc.mu.Lock()
	first := rc.slowStart[key]
	rc.mu.Unlock()
	last := 1
	for _, size := range SlowStartBatches(n, first) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var firstErr error
		for range size {
			wg.Go(func() {
				pod := NewPod(tmpl, m, rc.kind.APIVersion, rc.kind.Kind)
				p, err := rc.c.Pods().Create(ctx, pod, metav1.CreateOptions{})
				if err != nil {
					rc.expect.CreationObserved(key)
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				rc.rec.Eventf(any(obj).(client.Object), corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", p.Name)
			})
		}
		wg.Wait()
		created += size
		if firstErr != nil {
			rc.mu.Lock()
			delete(rc.slowStart, key)
			rc.mu.Unlock()
			for range n - created {
				rc.expect.CreationObserved(key)
			}
			rc.rec.Eventf(any(obj).(client.Object), corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", firstErr)
			return firstErr
		}
		last = size
	}
	rc.mu.Lock()
	rc.slowStart[key] = min(last, 256)
	rc.mu.Unlock()
	return nil
}

func (rc *Controller[T]) delete(ctx context.Context, key string, obj *T, pods []*corev1.Pod) error {
	uids := make([]types.UID, len(pods))
	for i, p := range pods {
		uids[i] = p.UID
	}
	rc.expect.Expect(key, 0, uids)
	return firstError(framework.DeletePods(ctx, rc.c, rc.rec, any(obj).(client.Object), key, rc.expect, pods))
}

// firstError returns the first of the errors err joins (the one the
// ReplicaFailure condition reports), or err itself.
func firstError(err error) error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		if errs := joined.Unwrap(); len(errs) > 0 {
			return firstError(errs[0])
		}
	}
	return err
}

// NewReplicaSets returns the ReplicaSet controller.
func NewReplicaSets(c *client.Client, inf *framework.Informers, rec *record.Recorder, clk clock.Clock, log *slog.Logger) *Controller[appsv1.ReplicaSet] {
	return NewController(Kind[appsv1.ReplicaSet]{
		Name: Name, APIVersion: "apps/v1", Kind: "ReplicaSet",
		Informer: inf.ReplicaSets, API: c.ReplicaSets(),
		Workload: func(rs *appsv1.ReplicaSet) (Workload, error) {
			sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
			if err != nil {
				return Workload{}, err
			}
			return Workload{Meta: rs, Replicas: replicas(rs.Spec.Replicas), Selector: sel, TemplateLabels: rs.Spec.Template.Labels,
				MinReadySeconds: rs.Spec.MinReadySeconds, Generation: rs.Generation}, nil
		},
		Template: func(rs *appsv1.ReplicaSet) *corev1.PodTemplateSpec { return &rs.Spec.Template },
		Status:   func(rs *appsv1.ReplicaSet) appsv1.ReplicaSetStatus { return rs.Status },
		WithStatus: func(rs *appsv1.ReplicaSet, st appsv1.ReplicaSetStatus) *appsv1.ReplicaSet {
			cp := rs.DeepCopy()
			cp.Status = st
			return cp
		},
	}, c, inf, rec, clk, log)
}

// applyStatus returns s with the step's st, and whether that changed
// anything.
func applyStatus(s appsv1.ReplicaSetStatus, st Status) (appsv1.ReplicaSetStatus, bool) {
	if s.Replicas == st.Replicas && s.FullyLabeledReplicas == st.FullyLabeledReplicas && s.ReadyReplicas == st.ReadyReplicas &&
		s.AvailableReplicas == st.AvailableReplicas && s.ObservedGeneration == st.ObservedGeneration &&
		EqualReplicaFailures(ReplicaFailureOf(s.Conditions), st.ReplicaFailure) {
		return s, false
	}
	s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas = st.Replicas, st.FullyLabeledReplicas, st.ReadyReplicas
	s.AvailableReplicas, s.ObservedGeneration = st.AvailableReplicas, st.ObservedGeneration
	// A clone: s.Conditions is the cached object's.
	s.Conditions = slices.DeleteFunc(slices.Clone(s.Conditions), func(c appsv1.ReplicaSetCondition) bool {
		return c.Type == appsv1.ReplicaSetReplicaFailure
	})
	if f := st.ReplicaFailure; f != nil {
		s.Conditions = append(s.Conditions, appsv1.ReplicaSetCondition{Type: appsv1.ReplicaSetReplicaFailure,
			Status: corev1.ConditionTrue, LastTransitionTime: f.LastTransitionTime, Reason: f.Reason, Message: f.Message})
	}
	return s, true
}

// ReplicaFailureOf returns the ReplicaFailure condition among conds, if
// True.
func ReplicaFailureOf(conds []appsv1.ReplicaSetCondition) *ReplicaFailure {
	for _, c := range conds {
		if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
			return &ReplicaFailure{Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime}
		}
	}
	return nil
}

// EqualReplicaFailures reports whether two ReplicaFailure conditions say
// the same (transition times compared to the second, as the API keeps
// them).
func EqualReplicaFailures(a, b *ReplicaFailure) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Reason == b.Reason && a.Message == b.Message && a.LastTransitionTime.Unix() == b.LastTransitionTime.Unix()
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}
