package statefulset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
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
const Name = "statefulset"

// Controller is the StatefulSet controller.
type Controller struct {
	c      *client.Client
	inf    *framework.Informers
	rec    *record.Recorder
	log    *slog.Logger
	clock  clock.Clock
	queue  *framework.Queue
	expect *framework.Expectations
	// sink performs the actions of a sync of set (apiSink; a FakeSink in
	// tests).
	sink func(set *appsv1.StatefulSet) framework.Sink[Action]
}

// New registers the controller's handlers.
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, clk clock.Clock, log *slog.Logger) *Controller {
	sc := &Controller{c: c, inf: inf, rec: rec, log: log.With("controller", Name), clock: clk,
		queue: framework.NewQueue(framework.QueueConfig{Name: Name, Clock: clk}), expect: framework.NewExpectations(clk)}
	sc.sink = func(set *appsv1.StatefulSet) framework.Sink[Action] { return &apiSink{sc: sc, set: set} }
	inf.StatefulSets.AddHandler(framework.Handler[appsv1.StatefulSet](sc.queue))
	inf.Pods.AddHandler(framework.OwnedPodHandler("StatefulSet", sc.queue, sc.expect))
	owner := func(r *appsv1.ControllerRevision) {
		if ref := metav1.GetControllerOfNoCopy(r); ref != nil && ref.Kind == "StatefulSet" {
			sc.queue.Add(informer.Key(r.Namespace, ref.Name))
		}
	}
	inf.ControllerRevisions.AddHandler(informer.Handler[appsv1.ControllerRevision]{
		OnAdd: owner, OnUpdate: func(_, r *appsv1.ControllerRevision) { owner(r) }, OnDelete: owner,
	})
	// A claim removed by hand comes back: requeue the sets of its namespace.
	inf.PersistentVolumeClaims.AddHandler(informer.Handler[corev1.PersistentVolumeClaim]{
		OnDelete: func(pvc *corev1.PersistentVolumeClaim) {
			for _, s := range inf.StatefulSets.Store().List() {
				if s.Namespace == pvc.Namespace && len(s.Spec.VolumeClaimTemplates) > 0 {
					sc.queue.Add(framework.KeyOf(s))
				}
			}
		},
	})
	return sc
}

// Run processes StatefulSets until ctx ends.
func (sc *Controller) Run(ctx context.Context, workers int) {
	framework.RunWorkers(ctx, sc.queue, workers, sc.sync, func(key string, err error) {
		sc.log.Warn("sync failed", "statefulset", key, "err", err)
	})
}

func (sc *Controller) sync(ctx context.Context, key string) (framework.Result, error) {
	ns, name := framework.SplitKey(key)
	set, ok := sc.inf.StatefulSets.Store().Get(ns, name)
	if !ok {
		sc.expect.Delete(key)
		return framework.Result{}, nil
	}
	revs, retry, err := sc.revisions(ctx, set)
	if err != nil || retry {
		return framework.Result{}, err
	}
	obs := Observed{Pods: sc.inf.Pods.Store().ByIndex(framework.ControllerUIDIndex, string(set.UID)),
		Claims: map[string]*corev1.PersistentVolumeClaim{}}
	// The claims the pods and ordinals of the set would use.
	for i := range set.Spec.VolumeClaimTemplates {
		ct := &set.Spec.VolumeClaimTemplates[i]
		names := []string{}
		for _, p := range obs.Pods {
			names = append(names, ClaimName(ct, p.Name))
		}
		for ord := startOf(set); ord < int(ptr.Deref(set.Spec.Replicas, 1))+startOf(set); ord++ {
			names = append(names, ClaimName(ct, PodName(set, ord)))
		}
		for _, n := range names {
			if c, ok := sc.inf.PersistentVolumeClaims.Store().Get(ns, n); ok {
				obs.Claims[n] = c
			}
		}
	}
	out := Plan(set, revs, obs, sc.expect.Satisfied(key), sc.clock.Now())
	// A failed write holds back none of the others (but the pods whose
	// claims failed), and the status is written whatever they did.
	err = framework.ExecuteAll(ctx, sc.sink(set), out.Actions)
	return framework.Result{RequeueAfter: out.RequeueAfter}, err
}

func startOf(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

// revisions finds or creates the update revision and finds the current
// one. retry is true when the set's collisionCount was raised (the next
// sync names the revision again).
func (sc *Controller) revisions(ctx context.Context, set *appsv1.StatefulSet) (Revisions, bool, error) {
	owned := sc.inf.ControllerRevisions.Store().ByIndex(framework.ControllerUIDIndex, string(set.UID))
	data, err := history.Patch(&set.Spec.Template)
	if err != nil {
		return Revisions{}, false, err
	}
	hash := history.Hash(data, set.Status.CollisionCount)
	p := history.Sync(owned, history.Want{Owner: set, APIVersion: "apps/v1", Kind: "StatefulSet",
		Name: history.Name(set.Name, hash), Hash: hash, Labels: set.Spec.Template.Labels, Data: data})
	if p.Collision {
		cp := set.DeepCopy()
		cp.Status.CollisionCount = ptr.To(ptr.Deref(set.Status.CollisionCount, 0) + 1)
		_, err := sc.c.StatefulSets().UpdateStatus(ctx, cp, metav1.UpdateOptions{})
		return Revisions{}, true, err
	}
	update := p.Update
	switch {
	case p.Create != nil:
		created, err := sc.c.ControllerRevisions().Create(ctx, p.Create, metav1.CreateOptions{})
		if err != nil {
			return Revisions{}, false, fmt.Errorf("create revision %s: %w", p.Create.Name, err)
		}
		update = created
	case p.Renumber != nil:
		updated, err := sc.c.ControllerRevisions().Update(ctx, p.Renumber, metav1.UpdateOptions{})
		if err != nil {
			return Revisions{}, false, fmt.Errorf("renumber revision %s: %w", p.Renumber.Name, err)
		}
		update = updated
	}
	current := update
	for _, r := range owned {
		if r.Name == set.Status.CurrentRevision {
			current = r
		}
	}
	revs := Revisions{Owned: owned, Current: current, Update: update}
	if revs.UpdateTemplate, err = history.Template(update); err != nil {
		return Revisions{}, false, err
	}
	if revs.CurrentTemplate, err = history.Template(current); err != nil {
		return Revisions{}, false, err
	}
	return revs, false, nil
}

// apiSink performs the actions of one sync of set through the
// apiserver, and records their events.
type apiSink struct {
	sc  *Controller
	set *appsv1.StatefulSet
	// failedClaims are the pods whose claims this sync could not make:
	// they are not created.
	failedClaims map[string]bool
}

func (s *apiSink) Do(ctx context.Context, a Action) error {
	sc, set := s.sc, s.set
	switch a.Type {
	case RecordEvent:
		sc.rec.Eventf(set, a.Event.Type, a.Event.Reason, "%s", a.Event.Message)
	case CreateClaim:
		c, pod := a.Claim, podOfClaim(set, a.Claim.Name)
		_, err := sc.c.PersistentVolumeClaims().Create(ctx, c, metav1.CreateOptions{})
		switch {
		case err == nil:
			sc.rec.Eventf(set, corev1.EventTypeNormal, "SuccessfulCreate", "create Claim %s Pod %s in StatefulSet %s success", c.Name, pod, set.Name)
		case apierrors.IsAlreadyExists(err):
		default:
			if s.failedClaims == nil {
				s.failedClaims = map[string]bool{}
			}
			s.failedClaims[pod] = true
			sc.rec.Eventf(set, corev1.EventTypeWarning, "FailedCreate", "create Claim %s for Pod %s in StatefulSet %s failed error: %s", c.Name, pod, set.Name, err)
			return err
		}
	case UpdateClaim:
		if _, err := sc.c.PersistentVolumeClaims().Update(ctx, a.Claim, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	case ManagePods:
		var creates []*corev1.Pod
		for _, p := range a.Create {
			if !s.failedClaims[p.Name] {
				creates = append(creates, p)
			}
		}
		return sc.managePods(ctx, set, creates, a.Delete)
	case DeleteRevision:
		if err := sc.c.ControllerRevisions().Delete(ctx, a.Revision.Namespace, a.Revision.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	case UpdateStatus:
		cp := set.DeepCopy()
		cp.Status = a.Status
		if _, err := sc.c.StatefulSets().UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	default:
		return fmt.Errorf("unknown action %s", a.Type)
	}
	return nil
}

// managePods raises the expectations of all its creates and deletes,
// then makes them in parallel.
func (sc *Controller) managePods(ctx context.Context, set *appsv1.StatefulSet, creates, deletes []*corev1.Pod) error {
	key := framework.KeyOf(set)
	uids := make([]types.UID, len(deletes))
	for i, p := range deletes {
		uids[i] = p.UID
	}
	sc.expect.Expect(key, len(creates), uids)
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range creates {
		wg.Go(func() {
			_, err := sc.c.Pods().Create(ctx, p, metav1.CreateOptions{})
			if err != nil {
				sc.expect.CreationObserved(key)
				if apierrors.IsAlreadyExists(err) {
					return
				}
				sc.rec.Eventf(set, corev1.EventTypeWarning, "FailedCreate", "create Pod %s in StatefulSet %s failed error: %s", p.Name, set.Name, err)
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			sc.rec.Eventf(set, corev1.EventTypeNormal, "SuccessfulCreate", "create Pod %s in StatefulSet %s successful", p.Name, set.Name)
		})
	}
	for _, p := range deletes {
		wg.Go(func() {
			uid := p.UID
			err := sc.c.Pods().Delete(ctx, p.Namespace, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil {
				sc.expect.DeletionObserved(key, p.UID)
				if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
					return
				}
				sc.rec.Eventf(set, corev1.EventTypeWarning, "FailedDelete", "delete Pod %s in StatefulSet %s failed error: %s", p.Name, set.Name, err)
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			sc.rec.Eventf(set, corev1.EventTypeNormal, "SuccessfulDelete", "delete Pod %s in StatefulSet %s successful", p.Name, set.Name)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// podOfClaim returns the pod part of a claim name TEMPLATE-SET-ORDINAL.
func podOfClaim(set *appsv1.StatefulSet, claim string) string {
	for i := range set.Spec.VolumeClaimTemplates {
		if rest, ok := strings.CutPrefix(claim, set.Spec.VolumeClaimTemplates[i].Name+"-"); ok && strings.HasPrefix(rest, set.Name+"-") {
			return rest
		}
	}
	return claim
}
