package daemonset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"minik/client"
	"minik/client/informer"
	"minik/client/record"
	"minik/controller/framework"
	"minik/controller/internal/history"
)

// Name is the controller's name.
const Name = "daemonset"

// Controller is the DaemonSet controller.
type Controller struct {
	c      *client.Client
	inf    *framework.Informers
	rec    *record.Recorder
	log    *slog.Logger
	clock  clock.Clock
	queue  *framework.Queue
	expect *framework.Expectations
	// sink performs the actions of a sync of ds, whose template has hash
	// (apiSink; a FakeSink in tests).
	sink func(ds *appsv1.DaemonSet, hash string) framework.Sink[Action]
}

// New registers the controller.
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, clk clock.Clock, log *slog.Logger) *Controller {
	dc := &Controller{c: c, inf: inf, rec: rec, log: log.With("controller", Name), clock: clk,
		queue: framework.NewQueue(framework.QueueConfig{Name: Name, Clock: clk}), expect: framework.NewExpectations(clk)}
	dc.sink = func(ds *appsv1.DaemonSet, hash string) framework.Sink[Action] {
		return &apiSink{dc: dc, ds: ds, hash: hash}
	}
	inf.DaemonSets.AddHandler(framework.Handler[appsv1.DaemonSet](dc.queue))
	all := func() {
		for _, key := range inf.DaemonSets.Store().Keys() {
			dc.queue.Add(key)
		}
	}
	inf.Nodes.AddHandler(informer.Handler[corev1.Node]{
		OnAdd:    func(*corev1.Node) { all() },
		OnDelete: func(*corev1.Node) { all() },
		OnUpdate: func(old, n *corev1.Node) {
			if old == n || !equalForDaemons(old, n) {
				all()
			}
		},
	})
	inf.Pods.AddHandler(framework.OwnedPodHandler("DaemonSet", dc.queue, dc.expect))
	return dc
}

// equalForDaemons reports whether nothing that decides eligibility changed.
func equalForDaemons(a, b *corev1.Node) bool {
	if len(a.Labels) != len(b.Labels) || len(a.Spec.Taints) != len(b.Spec.Taints) || a.Spec.Unschedulable != b.Spec.Unschedulable {
		return false
	}
	for k, v := range a.Labels {
		if b.Labels[k] != v {
			return false
		}
	}
	for i := range a.Spec.Taints {
		if !a.Spec.Taints[i].MatchTaint(&b.Spec.Taints[i]) {
			return false
		}
	}
	return true
}

// Run processes DaemonSets until ctx ends.
func (dc *Controller) Run(ctx context.Context, workers int) {
	framework.RunWorkers(ctx, dc.queue, workers, dc.sync, func(key string, err error) {
		dc.log.Warn("sync failed", "daemonset", key, "err", err)
	})
}

func (dc *Controller) sync(ctx context.Context, key string) (framework.Result, error) {
	ns, name := framework.SplitKey(key)
	ds, ok := dc.inf.DaemonSets.Store().Get(ns, name)
	if !ok {
		dc.expect.Delete(key)
		return framework.Result{}, nil
	}
	if ds.DeletionTimestamp != nil {
		return framework.Result{}, nil
	}
	byNode := map[string][]*corev1.Pod{}
	for _, p := range dc.inf.Pods.Store().ByIndex(framework.ControllerUIDIndex, string(ds.UID)) {
		byNode[PinnedNode(p)] = append(byNode[PinnedNode(p)], p)
	}
	hash := framework.ComputeHash(&ds.Spec.Template, ds.Status.CollisionCount)
	if retry, err := dc.syncRevisions(ctx, ds, hash, byNode); err != nil || retry {
		return framework.Result{}, err
	}
	out := Plan(ds, dc.inf.Nodes.Store().List(), byNode, hash, dc.expect.Satisfied(key), dc.clock.Now())
	// The status is written whatever the creates and deletes did.
	err := framework.ExecuteAll(ctx, dc.sink(ds, hash), out.Actions)
	return framework.Result{RequeueAfter: out.RequeueAfter}, err
}

// apiSink performs the actions of one sync of ds through the apiserver,
// and records their events.
type apiSink struct {
	dc   *Controller
	ds   *appsv1.DaemonSet
	hash string
}

func (s *apiSink) Do(ctx context.Context, a Action) error {
	switch a.Type {
	case ManagePods:
		return s.dc.manage(ctx, s.ds, s.hash, a.CreateOn, a.Pods)
	case UpdateStatus:
		cp := s.ds.DeepCopy()
		cp.Status = a.Status
		if _, err := s.dc.c.DaemonSets().UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	}
	return fmt.Errorf("unknown action %s", a.Type)
}

// manage raises the expectations of all its creates and deletes, then
// creates the pods of createOn in parallel, then deletes del.
func (dc *Controller) manage(ctx context.Context, ds *appsv1.DaemonSet, hash string, createOn []string, del []*corev1.Pod) error {
	key := framework.KeyOf(ds)
	uids := make([]types.UID, len(del))
	for i, p := range del {
		uids[i] = p.UID
	}
	dc.expect.Expect(key, len(createOn), uids)
	var wg sync.WaitGroup
	errc := make(chan error, len(createOn)+len(del))
	for _, node := range createOn {
		wg.Go(func() {
			p, err := dc.c.Pods().Create(ctx, NewPod(ds, node, hash), metav1.CreateOptions{})
			if err != nil {
				dc.expect.CreationObserved(key)
				errc <- err
				dc.rec.Eventf(ds, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
				return
			}
			dc.rec.Eventf(ds, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", p.Name)
		})
	}
	wg.Wait()
	close(errc)
	errs := []error{framework.DeletePods(ctx, dc.c, dc.rec, ds, key, dc.expect, del)}
	for err := range errc {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// syncRevisions keeps the DaemonSet's ControllerRevisions, as upstream: one
// per template, named DS-HASH and labelled with the hash its pods carry,
// renumbered as the newest when a rollback returns to it, and pruned to
// revisionHistoryLimit beyond those pods still use. retry is true when
// the hash collided with another revision's name and collisionCount was
// raised.
func (dc *Controller) syncRevisions(ctx context.Context, ds *appsv1.DaemonSet, hash string, byNode map[string][]*corev1.Pod) (bool, error) {
	data, err := history.Patch(&ds.Spec.Template)
	if err != nil {
		return false, err
	}
	owned := dc.inf.ControllerRevisions.Store().ByIndex(framework.ControllerUIDIndex, string(ds.UID))
	p := history.Sync(owned, history.Want{Owner: ds, APIVersion: "apps/v1", Kind: "DaemonSet",
		Name: history.Name(ds.Name, hash), Hash: hash, Labels: ds.Spec.Template.Labels, Data: data})
	switch {
	case p.Collision:
		cp := ds.DeepCopy()
		cp.Status.CollisionCount = ptr.To(ptr.Deref(ds.Status.CollisionCount, 0) + 1)
		_, err := dc.c.DaemonSets().UpdateStatus(ctx, cp, metav1.UpdateOptions{})
		return true, err
	case p.Create != nil:
		if _, err := dc.c.ControllerRevisions().Create(ctx, p.Create, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return false, fmt.Errorf("create revision %s: %w", p.Create.Name, err)
		}
	case p.Renumber != nil:
		if _, err := dc.c.ControllerRevisions().Update(ctx, p.Renumber, metav1.UpdateOptions{}); err != nil {
			return false, fmt.Errorf("renumber revision %s: %w", p.Renumber.Name, err)
		}
	}
	live := map[string]bool{p.Update.Name: true}
	byHash := map[string]string{}
	for _, r := range owned {
		byHash[r.Labels[history.HashLabel]] = r.Name
	}
	for _, pods := range byNode {
		for _, pod := range pods {
			live[byHash[pod.Labels[RevisionHashLabel]]] = true
		}
	}
	var errs []error
	for _, r := range history.Prune(owned, live, ptr.Deref(ds.Spec.RevisionHistoryLimit, 10)) {
		if err := dc.c.ControllerRevisions().Delete(ctx, r.Namespace, r.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return false, errors.Join(errs...)
}
