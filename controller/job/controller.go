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
}

// New registers the controller.
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, clk clock.Clock, log *slog.Logger) *Controller {
	jc := &Controller{c: c, inf: inf, rec: rec, log: log.With("controller", Name), clock: clk,
		queue: framework.NewQueue(framework.QueueConfig{Name: Name, Clock: clk}), expect: framework.NewExpectations(clk)}
	inf.Jobs.AddHandler(framework.Handler[batchv1.Job](jc.queue))
	inf.Pods.AddHandler(framework.OwnedPodHandler("Job", jc.queue, jc.expect))
	return jc
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
	pods := jc.inf.Pods.Store().ByIndex(framework.ControllerUIDIndex, string(job.UID))
	plan := Plan(job, pods, jc.clock.Now())
	res := framework.Result{RequeueAfter: plan.RequeueAfter}
	if plan.DeleteJob {
		fg := metav1.DeletePropagationForeground
		uid := job.UID
		jc.log.Info("deleting finished job after ttlSecondsAfterFinished", "job", key)
		err := jc.c.Jobs().Delete(ctx, ns, name, metav1.DeleteOptions{PropagationPolicy: &fg, Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			err = nil
		}
		return res, err
	}
	var errs []error
	if len(plan.Create) > 0 || len(plan.Delete) > 0 {
		failedCreates, err := jc.manage(ctx, key, job, plan)
		// Pods that could not be created do not run.
		plan.Status.Active -= int32(failedCreates)
		errs = append(errs, err)
	}
	if !apiequality.Semantic.DeepEqual(job.Status, plan.Status) {
		cp := job.DeepCopy()
		cp.Status = plan.Status
		if _, err := jc.c.Jobs().UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("update status: %w", err))
		}
		for _, c := range plan.Status.Conditions {
			if c.Type == batchv1.JobFailed && hasConditionIn(job.Status, batchv1.JobFailed) == nil {
				jc.rec.Eventf(job, corev1.EventTypeWarning, c.Reason, "%s", c.Message)
			}
			if c.Type == batchv1.JobComplete && hasConditionIn(job.Status, batchv1.JobComplete) == nil {
				jc.rec.Eventf(job, corev1.EventTypeNormal, "Completed", "Job completed")
			}
		}
	}
	return res, errors.Join(errs...)
}

func hasConditionIn(st batchv1.JobStatus, t batchv1.JobConditionType) *batchv1.JobCondition {
	return hasCondition(st, t)
}

// manage creates and deletes the plan's pods and returns how many
// creations failed.
func (jc *Controller) manage(ctx context.Context, key string, job *batchv1.Job, plan Output) (int, error) {
	uids := make([]types.UID, len(plan.Delete))
	for i, p := range plan.Delete {
		uids[i] = p.UID
	}
	jc.expect.Expect(key, len(plan.Create), uids)
	var wg sync.WaitGroup
	errc := make(chan error, len(plan.Create))
	for _, spec := range plan.Create {
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
	failedCreates := len(errc)
	errs := []error{framework.DeletePods(ctx, jc.c, jc.rec, job, key, jc.expect, plan.Delete)}
	for err := range errc {
		errs = append(errs, err)
	}
	return failedCreates, errors.Join(errs...)
}
