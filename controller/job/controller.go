package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"minik/client"
	"minik/client/record"
	"minik/controller/framework"
)

// Name is the controller's name.
const Name = "job"

// Controller is the Job controller (with ttlSecondsAfterFinished).
type Controller struct {
	c      *client.Client
	inf    *framework.Informers
	rec    *record.Recorder
	log    *slog.Logger
	clock  clock.Clock
	queue  *framework.Queue
	expect *framework.Expectations
	// sink performs the actions of a sync of job, queued as key (apiSink;
	// a FakeSink in tests).
	sink func(key string, job *batchv1.Job) framework.Sink[Action]
}

// New registers the controller.
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, clk clock.Clock, log *slog.Logger) *Controller {
	jc := &Controller{c: c, inf: inf, rec: rec, log: log.With("controller", Name), clock: clk,
		queue: framework.NewQueue(framework.QueueConfig{Name: Name, Clock: clk}), expect: framework.NewExpectations(clk)}
	jc.sink = func(key string, job *batchv1.Job) framework.Sink[Action] { return &apiSink{jc: jc, key: key, job: job} }
	inf.Jobs.AddHandler(framework.Handler[batchv1.Job](jc.queue))
	inf.Pods.AddHandler(framework.ClaimingPodHandler(
		func(p *corev1.Pod) (string, bool) { return framework.OwnerKey(p, "Job") }, jc.matching, jc.queue, jc.expect))
	return jc
}

// matching returns the keys of the unfinished Jobs whose selector matches
// p: the ones that may adopt it.
func (jc *Controller) matching(p *corev1.Pod) []string {
	return framework.MatchingKeys(jc.inf.Jobs, p, func(j *batchv1.Job) labels.Selector {
		if _, finished := Finished(j.Status); finished {
			return nil
		}
		sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector)
		if err != nil {
			return nil
		}
		return sel
	})
}

// Run processes Jobs until ctx ends.
func (jc *Controller) Run(ctx context.Context, workers int) {
	framework.RunWorkers(ctx, jc.queue, workers, jc.sync, func(key string, err error) {
		jc.log.Warn("sync failed", "job", key, "err", err)
	})
}

func (jc *Controller) sync(ctx context.Context, key string) (framework.Result, error) {
	ns, name := framework.SplitKey(key)
	job, ok := jc.inf.Jobs.Store().Get(ns, name)
	if !ok {
		jc.expect.Delete(key)
		return framework.Result{}, nil
	}
	if job.DeletionTimestamp != nil {
		return framework.Result{}, nil
	}
	if !jc.expect.Satisfied(key) {
		return framework.Result{}, nil // the informer has not caught up with our writes
	}
	// Its pods, and the orphans of the namespace it may adopt.
	pods := jc.inf.Pods.Store().ByIndex(framework.ControllerUIDIndex, string(job.UID))
	for _, p := range jc.inf.Pods.Store().ByIndex(framework.ControllerUIDIndex, "") {
		if p.Namespace == ns {
			pods = append(pods, p)
		}
	}
	out := Plan(job, pods, jc.clock.Now())
	if adds, uids := podChanges(out.Actions); adds > 0 || len(uids) > 0 {
		// Before any is issued: the informer may see them at once.
		jc.expect.Expect(key, adds, uids)
	}
	// A failed action does not end the others: after failed creates or
	// deletes the status is written all the same, as in Kubernetes.
	err := framework.ExecuteAll(ctx, &statusFirst{Sink: jc.sink(key, job), expect: jc.expect, key: key}, out.Actions)
	return framework.Result{RequeueAfter: out.RequeueAfter}, err
}

// statusFirst holds back a DeletePods AfterStatus whose status write
// failed (no longer expecting those deletions): the next sync plans
// again from pods that still exist.
type statusFirst struct {
	framework.Sink[Action]
	expect    *framework.Expectations
	key       string
	statusErr error
}

func (s *statusFirst) Do(ctx context.Context, a Action) error {
	if a.AfterStatus && s.statusErr != nil {
		for _, p := range a.Delete {
			s.expect.DeletionObserved(s.key, p.UID)
		}
		return fmt.Errorf("pods kept until the Job's failure is recorded: %w", s.statusErr)
	}
	err := s.Sink.Do(ctx, a)
	if a.Type == UpdateStatus {
		s.statusErr = err
	}
	return err
}

// podChanges returns the pods actions create and the UIDs they delete.
func podChanges(actions []Action) (adds int, uids []types.UID) {
	for _, a := range actions {
		adds += len(a.Create)
		for _, p := range a.Delete {
			uids = append(uids, p.UID)
		}
	}
	return adds, uids
}

// apiSink performs the actions of one sync of job through the apiserver,
// with their events.
type apiSink struct {
	jc  *Controller
	key string
	job *batchv1.Job
	// failedCreates counts the pods CreatePods could not create: they do
	// not run, so the status written next does not count them.
	failedCreates int
}

func (s *apiSink) Do(ctx context.Context, a Action) error {
	jc, job := s.jc, s.job
	switch a.Type {
	case AdoptPod:
		refs := framework.AdoptedRefs(a.Pod, framework.ControllerRef(job, "batch/v1", "Job"))
		return framework.IgnoreNotFound(framework.PatchOwnerRefs(ctx, jc.c, a.Pod, refs))
	case ReleasePod:
		return framework.IgnoreNotFound(framework.PatchOwnerRefs(ctx, jc.c, a.Pod, framework.ReleasedRefs(a.Pod, job.UID)))
	case DeleteJob:
		fg := metav1.DeletePropagationForeground
		uid := job.UID
		jc.log.Info("deleting finished job after ttlSecondsAfterFinished", "job", s.key)
		err := jc.c.Jobs().Delete(ctx, job.Namespace, job.Name, metav1.DeleteOptions{PropagationPolicy: &fg, Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	case CreatePods:
		failed, err := jc.createPods(ctx, s.key, job, a.Create)
		s.failedCreates += failed
		return err
	case DeletePods:
		return framework.DeletePods(ctx, jc.c, jc.rec, job, s.key, jc.expect, a.Delete)
	case UpdateStatus:
		return s.updateStatus(ctx, *a.Status)
	}
	return nil
}

// updateStatus writes st, less the failed creates, if it differs from
// the Job's, and reports the Job's failure or completion.
func (s *apiSink) updateStatus(ctx context.Context, st batchv1.JobStatus) error {
	jc, job := s.jc, s.job
	st.Active -= int32(s.failedCreates)
	if apiequality.Semantic.DeepEqual(job.Status, st) {
		return nil
	}
	cp := job.DeepCopy()
	cp.Status = st
	_, err := jc.c.Jobs().UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	for _, c := range st.Conditions {
		if c.Type == batchv1.JobFailed && hasConditionIn(job.Status, batchv1.JobFailed) == nil {
			jc.rec.Eventf(job, corev1.EventTypeWarning, c.Reason, "%s", c.Message)
		}
		if c.Type == batchv1.JobComplete && hasConditionIn(job.Status, batchv1.JobComplete) == nil {
			jc.rec.Eventf(job, corev1.EventTypeNormal, "Completed", "Job completed")
		}
	}
	return err
}

func hasConditionIn(st batchv1.JobStatus, t batchv1.JobConditionType) *batchv1.JobCondition {
	return hasCondition(st, t)
}

// createPods creates the pods of specs at once and returns how many
// creations failed.
func (jc *Controller) createPods(ctx context.Context, key string, job *batchv1.Job, specs []PodToCreate) (int, error) {
	var wg sync.WaitGroup
	errc := make(chan error, len(specs))
	for _, spec := range specs {
		wg.Go(func() {
			p, err := jc.c.Pods().Create(ctx, NewPod(job, spec), metav1.CreateOptions{})
			if err != nil {
				jc.expect.CreationObserved(key)
				jc.rec.Eventf(job, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
				errc <- err
				return
			}
			jc.rec.Eventf(job, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", p.Name)
		})
	}
	wg.Wait()
	close(errc)
	var errs []error
	for err := range errc {
		errs = append(errs, err)
	}
	return len(errs), errors.Join(errs...)
}
