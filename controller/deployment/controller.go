package deployment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"minik/client"
	"minik/client/informer"
	"minik/client/record"
	"minik/controller/framework"
)

// Name is the controller's name.
const Name = "deployment"

// Controller is the Deployment controller.
type Controller struct {
	c     *client.Client
	inf   *framework.Informers
	rec   *record.Recorder
	log   *slog.Logger
	clock clock.Clock
	queue *framework.Queue
	// sink performs a sync's actions for Deployment d (apiSink; a
	// FakeSink in tests).
	sink func(d *appsv1.Deployment) framework.Sink[Action]
}

// New registers the controller on the shared informers.
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, clk clock.Clock, log *slog.Logger) *Controller {
	dc := &Controller{c: c, inf: inf, rec: rec, log: log.With("controller", Name), clock: clk,
		queue: framework.NewQueue(framework.QueueConfig{Name: Name, Clock: clk})}
	dc.sink = func(d *appsv1.Deployment) framework.Sink[Action] { return &apiSink{dc: dc, d: d} }
	inf.Deployments.AddHandler(framework.Handler[appsv1.Deployment](dc.queue))
	inf.ReplicaSets.AddHandler(informer.Handler[appsv1.ReplicaSet]{
		OnAdd:    dc.enqueueOwner,
		OnUpdate: func(old, rs *appsv1.ReplicaSet) { dc.enqueueOwner(old); dc.enqueueOwner(rs) },
		OnDelete: dc.enqueueOwner,
	})
	// Recreate waits for old pods to be gone.
	inf.Pods.AddHandler(informer.Handler[corev1.Pod]{OnDelete: func(p *corev1.Pod) {
		ref := metav1.GetControllerOfNoCopy(p)
		if ref == nil || ref.Kind != "ReplicaSet" {
			return
		}
		if rs, ok := inf.ReplicaSets.Store().Get(p.Namespace, ref.Name); ok {
			dc.enqueueOwner(rs)
		}
	}})
	return dc
}

func (dc *Controller) enqueueOwner(rs *appsv1.ReplicaSet) {
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && ref.Kind == "Deployment" {
		dc.queue.Add(informer.Key(rs.Namespace, ref.Name))
		return
	}
	// An orphan: any Deployment whose selector matches may adopt it.
	for _, d := range dc.inf.Deployments.Store().ByIndex(informer.NamespaceIndex, rs.Namespace) {
		if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil && !sel.Empty() && sel.Matches(labels.Set(rs.Labels)) {
			dc.queue.Add(framework.KeyOf(d))
		}
	}
}

// Run processes Deployments until ctx ends.
func (dc *Controller) Run(ctx context.Context, workers int) {
	framework.RunWorkers(ctx, dc.queue, workers, dc.sync, func(key string, err error) {
		dc.log.Warn("sync failed", "deployment", key, "err", err)
	})
}

func (dc *Controller) sync(ctx context.Context, key string) (framework.Result, error) {
	ns, name := framework.SplitKey(key)
	d, ok := dc.inf.Deployments.Store().Get(ns, name)
	if !ok {
		return framework.Result{}, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return framework.Result{}, nil
	}
	var candidates []*appsv1.ReplicaSet
	candidates = append(candidates, dc.inf.ReplicaSets.Store().ByIndex(framework.ControllerUIDIndex, string(d.UID))...)
	for _, rs := range dc.inf.ReplicaSets.Store().ByIndex(framework.ControllerUIDIndex, "") {
		if rs.Namespace == ns {
			candidates = append(candidates, rs)
		}
	}
	owned, adopt, release := framework.ClaimObjects(d, sel, candidates)
	var errs []error
	for _, rs := range adopt {
		if err := dc.setOwner(ctx, rs, append(append([]metav1.OwnerReference(nil), rs.OwnerReferences...),
			framework.ControllerRef(d, "apps/v1", "Deployment"))); err != nil {
			errs = append(errs, err)
		}
	}
	for _, rs := range release {
		var refs []metav1.OwnerReference
		for _, r := range rs.OwnerReferences {
			if r.UID != d.UID {
				refs = append(refs, r)
			}
		}
		if err := dc.setOwner(ctx, rs, refs); err != nil {
			errs = append(errs, err)
		}
	}
	active := map[types.UID]int{}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		for _, rs := range owned {
			for _, p := range dc.inf.Pods.Store().ByIndex(framework.ControllerUIDIndex, string(rs.UID)) {
				if !framework.IsPodTerminal(p) {
					active[rs.UID]++
				}
			}
		}
	}
	out := Plan(Input{Deployment: d, ReplicaSets: owned, ActivePods: active, Now: dc.clock.Now()})
	if err := framework.Execute(ctx, dc.sink(d), out.Actions); err != nil {
		errs = append(errs, err)
	}
	return framework.Result{RequeueAfter: out.RequeueAfter}, errors.Join(errs...)
}

func (dc *Controller) setOwner(ctx context.Context, rs *appsv1.ReplicaSet, refs []metav1.OwnerReference) error {
	cp := rs.DeepCopy()
	cp.OwnerReferences = refs
	_, err := dc.c.ReplicaSets().Update(ctx, cp, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// apiSink performs one sync's actions on Deployment d through the
// apiserver, and records their events.
type apiSink struct {
	dc *Controller
	d  *appsv1.Deployment
	// rv is the Deployment's resourceVersion once UpdateRevision wrote
	// it: the status written after it must carry it.
	rv string
}

func (s *apiSink) Do(ctx context.Context, a Action) error {
	dc, d := s.dc, s.d
	if a.Deployment != nil && s.rv != "" {
		a.Deployment.ResourceVersion = s.rv // the revision was written first
	}
	var err error
	switch a.Type {
	case UpdateRevision:
		var upd *appsv1.Deployment
		if upd, err = dc.c.Deployments().Update(ctx, a.Deployment, metav1.UpdateOptions{}); err == nil {
			s.rv = upd.ResourceVersion
		}
	case CreateReplicaSet:
		_, err = dc.c.ReplicaSets().Create(ctx, a.RS, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			err = dc.handleCollision(ctx, d, a.RS)
		case err != nil:
			failed, msg := CreateFailed(d, a.RS.Name, err, dc.clock.Now())
			if !statusEqual(d.Status, failed.Status) {
				// The create error is the one to return; a failed status
				// write is retried with the sync.
				_, _ = dc.c.Deployments().UpdateStatus(ctx, failed, metav1.UpdateOptions{})
			}
			dc.rec.Eventf(d, corev1.EventTypeWarning, ReasonFailedRSCreate, "%s", msg)
			return err
		}
	case UpdateReplicaSet:
		_, err = dc.c.ReplicaSets().Update(ctx, a.RS, metav1.UpdateOptions{})
	case DeleteReplicaSet:
		uid := a.RS.UID
		err = dc.c.ReplicaSets().Delete(ctx, a.RS.Namespace, a.RS.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) {
			err = nil
		}
	case UpdateStatus:
		_, err = dc.c.Deployments().UpdateStatus(ctx, a.Deployment, metav1.UpdateOptions{})
	}
	if err == nil && a.Message != "" {
		dc.rec.Eventf(d, corev1.EventTypeNormal, a.Reason, "%s", a.Message)
	}
	return err
}

// handleCollision deals with a ReplicaSet of the new name that already
// exists: ours with the same template is just not cached yet; anything
// else is a hash collision, resolved by bumping status.collisionCount,
// which changes the next hash.
func (dc *Controller) handleCollision(ctx context.Context, d *appsv1.Deployment, want *appsv1.ReplicaSet) error {
	cur, err := dc.c.ReplicaSets().Get(ctx, want.Namespace, want.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if ref := metav1.GetControllerOfNoCopy(cur); ref != nil && ref.UID == d.UID && EqualIgnoreHash(&cur.Spec.Template, &d.Spec.Template) {
		return nil
	}
	cp := d.DeepCopy()
	var n int32
	if cp.Status.CollisionCount != nil {
		n = *cp.Status.CollisionCount
	}
	n++
	cp.Status.CollisionCount = &n
	if _, err := dc.c.Deployments().UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return fmt.Errorf("hash collision on replica set %s; collisionCount is now %d", want.Name, n)
}
