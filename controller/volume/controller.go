package volume

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/client/informer"
	"minik/client/record"
	"minik/controller/framework"
)

// Name is the controller's name.
const Name = "persistentvolume-binder"

// passKey is the one queue key: every change re-plans the whole (small)
// set of claims and volumes, which keeps the binding of both sides in one
// place.
const passKey = "all"

// Controller drives Plan from the shared informers.
type Controller struct {
	c     *client.Client
	inf   *framework.Informers
	rec   *record.Recorder
	log   *slog.Logger
	queue *framework.Queue

	mu     sync.Mutex
	events map[string]string // object uid + reason → last message sent, so a repeated pass is quiet

	// sink returns the performer of one pass's actions (apiSink; a
	// FakeSink in tests).
	sink func() framework.Sink[Action]
}

// New registers the controller's handlers.
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, log *slog.Logger) *Controller {
	vc := &Controller{c: c, inf: inf, rec: rec, log: log.With("controller", Name),
		queue: framework.NewQueue(framework.QueueConfig{Name: Name}), events: map[string]string{}}
	vc.sink = func() framework.Sink[Action] { return apiSink{vc: vc, rv: map[string]string{}} }
	kick := func() { vc.queue.Add(passKey) }
	inf.PersistentVolumeClaims.AddHandler(informer.Handler[corev1.PersistentVolumeClaim]{
		OnAdd: func(*corev1.PersistentVolumeClaim) { kick() }, OnUpdate: func(_, _ *corev1.PersistentVolumeClaim) { kick() },
		OnDelete: func(*corev1.PersistentVolumeClaim) { kick() }})
	inf.PersistentVolumes.AddHandler(informer.Handler[corev1.PersistentVolume]{
		OnAdd: func(*corev1.PersistentVolume) { kick() }, OnUpdate: func(_, _ *corev1.PersistentVolume) { kick() },
		OnDelete: func(*corev1.PersistentVolume) { kick() }})
	inf.StorageClasses.AddHandler(informer.Handler[storagev1.StorageClass]{
		OnAdd: func(*storagev1.StorageClass) { kick() }, OnUpdate: func(_, _ *storagev1.StorageClass) { kick() }})
	// Pods hold claims (protection); only pods with claims matter.
	onPod := func(p *corev1.Pod) {
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
				kick()
				return
			}
		}
	}
	inf.Pods.AddHandler(informer.Handler[corev1.Pod]{OnAdd: onPod, OnDelete: onPod, OnUpdate: func(_, p *corev1.Pod) { onPod(p) }})
	return vc
}

// Run processes passes until ctx ends; one worker, passes never overlap.
func (vc *Controller) Run(ctx context.Context, _ int) {
	vc.queue.Add(passKey)
	framework.RunWorkers(ctx, vc.queue, 1, vc.sync, func(_ string, err error) {
		vc.log.Warn("pass failed", "err", err)
	})
}

func (vc *Controller) sync(ctx context.Context, _ string) (framework.Result, error) {
	s := Snapshot{Claims: vc.inf.PersistentVolumeClaims.Store().List(), Volumes: vc.inf.PersistentVolumes.Store().List(),
		Classes: map[string]*storagev1.StorageClass{}, Nodes: map[string]*corev1.Node{}}
	for _, sc := range vc.inf.StorageClasses.Store().List() {
		s.Classes[sc.Name] = sc
	}
	for _, n := range vc.inf.Nodes.Store().List() {
		s.Nodes[n.Name] = n
	}
	s.Pods = vc.inf.Pods.Store().List()
	sink := vc.sink()
	// Unlike framework.Execute, a pass goes on past a failed write, so
	// one refused object does not hold back the other claims and
	// volumes; only a conflict ends it.
	var firstErr error
	for _, a := range Plan(s).Actions {
		if err := sink.Do(ctx, a); err != nil {
			if apierrors.IsNotFound(err) {
				continue // gone meanwhile: its delete event brings a new pass
			}
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", a, err)
			}
			if apierrors.IsConflict(err) {
				break // the cache is behind: the retried pass sees the new objects
			}
		}
	}
	return framework.Result{}, firstErr
}

// apiSink performs one pass's actions through the apiserver.
type apiSink struct {
	vc *Controller
	// rv holds, by uid, the resourceVersion of our last write: a pass
	// may write one object twice.
	rv map[string]string
}

func (s apiSink) Do(ctx context.Context, a Action) error {
	vc, rv := s.vc, s.rv
	opts := metav1.UpdateOptions{}
	var err error
	var written client.Object
	if a.Claim != nil && rv[string(a.Claim.UID)] != "" {
		a.Claim.ResourceVersion = rv[string(a.Claim.UID)]
	}
	if a.Volume != nil && rv[string(a.Volume.UID)] != "" {
		a.Volume.ResourceVersion = rv[string(a.Volume.UID)]
	}
	switch a.Type {
	case UpdateClaim:
		written, err = vc.c.PersistentVolumeClaims().Update(ctx, a.Claim, opts)
	case UpdateClaimStatus:
		written, err = vc.c.PersistentVolumeClaims().UpdateStatus(ctx, a.Claim, opts)
	case UpdateVolume:
		written, err = vc.c.PersistentVolumes().Update(ctx, a.Volume, opts)
	case UpdateVolumeStatus:
		written, err = vc.c.PersistentVolumes().UpdateStatus(ctx, a.Volume, opts)
	case CreateVolume:
		_, err = vc.c.PersistentVolumes().Create(ctx, a.Volume, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	case RecordEvent:
		vc.event(a)
		return nil
	}
	if err == nil && written != nil && written.GetUID() != "" {
		rv[string(written.GetUID())] = written.GetResourceVersion()
	}
	if err == nil {
		vc.log.Debug("done", "action", a.String())
	}
	return err
}

// event records a, unless the same object already got the same reason
// and message (the plan says it on every pass).
func (vc *Controller) event(a Action) {
	var obj client.Object = a.Volume
	if a.Claim != nil {
		obj = a.Claim
	}
	key := string(obj.GetUID()) + "/" + a.Reason
	vc.mu.Lock()
	repeat := vc.events[key] == a.Message
	vc.events[key] = a.Message
	vc.mu.Unlock()
	if !repeat {
		vc.rec.Eventf(obj, a.EventType, a.Reason, "%s", a.Message)
	}
}
