package cronjob

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"minik/client"
	"minik/client/informer"
	"minik/client/record"
	"minik/controller/framework"
)

// Name is the controller's name.
const Name = "cronjob"

// Controller is the CronJob controller.
type Controller struct {
	c     *client.Client
	inf   *framework.Informers
	rec   *record.Recorder
	log   *slog.Logger
	clock clock.Clock
	queue *framework.Queue
}

// New registers the controller's handlers.
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, clk clock.Clock, log *slog.Logger) *Controller {
	cc := &Controller{c: c, inf: inf, rec: rec, log: log.With("controller", Name), clock: clk,
		queue: framework.NewQueue(framework.QueueConfig{Name: Name, Clock: clk})}
	inf.CronJobs.AddHandler(framework.Handler[batchv1.CronJob](cc.queue))
	owner := func(j *batchv1.Job) {
		if ref := metav1.GetControllerOfNoCopy(j); ref != nil && ref.Kind == "CronJob" {
			cc.queue.Add(informer.Key(j.Namespace, ref.Name))
		}
	}
	inf.Jobs.AddHandler(informer.Handler[batchv1.Job]{
		OnAdd: owner, OnUpdate: func(_, j *batchv1.Job) { owner(j) }, OnDelete: owner,
	})
	return cc
}

// Run processes CronJobs until ctx ends.
func (cc *Controller) Run(ctx context.Context, workers int) {
	framework.RunWorkers(ctx, cc.queue, workers, cc.sync, func(key string, err error) {
		cc.log.Warn("sync failed", "cronjob", key, "err", err)
	})
}

func (cc *Controller) sync(ctx context.Context, key string) (framework.Result, error) {
	ns, name := framework.SplitKey(key)
	cj, ok := cc.inf.CronJobs.Store().Get(ns, name)
	if !ok {
		return framework.Result{}, nil
	}
	jobs := cc.inf.Jobs.Store().ByIndex(framework.ControllerUIDIndex, string(cj.UID))
	plan := Plan(cj, jobs, cc.clock.Now())
	for _, ev := range plan.Events {
		cc.rec.Eventf(cj, ev.Type, ev.Reason, "%s", ev.Message)
	}
	var errs []error
	background := metav1.DeletePropagationBackground
	deleteJob := func(j *batchv1.Job) {
		uid := j.UID
		err := cc.c.Jobs().Delete(ctx, j.Namespace, j.Name, metav1.DeleteOptions{PropagationPolicy: &background,
			Preconditions: &metav1.Preconditions{UID: &uid}})
		switch {
		case err == nil:
			cc.rec.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", j.Name)
		case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
			errs = append(errs, fmt.Errorf("delete job %s: %w", j.Name, err))
		}
	}
	for _, j := range plan.ReplaceJobs {
		deleteJob(j)
	}
	st := plan.Status
	if plan.Create != nil {
		created, err := cc.c.Jobs().Create(ctx, plan.Create, metav1.CreateOptions{})
		switch {
		case err == nil:
			cc.rec.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %v", created.Name)
			st.Active = append(st.Active, jobRef(created))
			st.LastScheduleTime = &metav1.Time{Time: plan.Scheduled}
		case apierrors.IsAlreadyExists(err):
			// Made by an earlier sync whose status write was lost: the
			// Job's informer event adds it to the active list.
		default:
			cc.rec.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
			errs = append(errs, err)
		}
	}
	if !apiequality.Semantic.DeepEqual(st, cj.Status) {
		cp := cj.DeepCopy()
		cp.Status = st
		if _, err := cc.c.CronJobs().UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("update status: %w", err))
		}
	}
	for _, j := range plan.HistoryJobs {
		deleteJob(j)
	}
	return framework.Result{RequeueAfter: plan.RequeueAfter}, errors.Join(errs...)
}
