package cronjob

import (
	"context"
	"fmt"
	"log/slog"
	"time"

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
	// sink performs the actions of a sync of cj (apiSink; a FakeSink in
	// tests).
	sink func(cj *batchv1.CronJob) framework.Sink[Action]
}

// New registers the controller's handlers.
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, clk clock.Clock, log *slog.Logger) *Controller {
	cc := &Controller{c: c, inf: inf, rec: rec, log: log.With("controller", Name), clock: clk,
		queue: framework.NewQueue(framework.QueueConfig{Name: Name, Clock: clk})}
	cc.sink = func(cj *batchv1.CronJob) framework.Sink[Action] { return &apiSink{cc: cc, cj: cj} }
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
	out := Plan(cj, jobs, cc.clock.Now())
	// A failed create or delete holds back none of the others, and the
	// status is written whatever they did.
	err := framework.ExecuteAll(ctx, cc.sink(cj), out.Actions)
	return framework.Result{RequeueAfter: out.RequeueAfter}, err
}

// apiSink performs the actions of one sync of cj through the apiserver,
// and records their events.
type apiSink struct {
	cc *Controller
	cj *batchv1.CronJob
	// created is the Job this sync made, for scheduled; the status adds it.
	created   *batchv1.Job
	scheduled time.Time
}

func (s *apiSink) Do(ctx context.Context, a Action) error {
	cc, cj := s.cc, s.cj
	switch a.Type {
	case RecordEvent:
		cc.rec.Eventf(cj, a.Event.Type, a.Event.Reason, "%s", a.Event.Message)
		return nil
	case DeleteReplacedJob, DeleteFinishedJob:
		background := metav1.DeletePropagationBackground
		uid := a.Job.UID
		err := cc.c.Jobs().Delete(ctx, a.Job.Namespace, a.Job.Name, metav1.DeleteOptions{PropagationPolicy: &background,
			Preconditions: &metav1.Preconditions{UID: &uid}})
		switch {
		case err == nil:
			cc.rec.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", a.Job.Name)
		case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
			return err
		}
		return nil
	case CreateJob:
		created, err := cc.c.Jobs().Create(ctx, a.Job, metav1.CreateOptions{})
		switch {
		case err == nil:
			cc.rec.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %v", created.Name)
			s.created, s.scheduled = created, a.Scheduled
		case apierrors.IsAlreadyExists(err):
			// Made by an earlier sync whose status write was lost: the
			// Job's informer event adds it to the active list.
		default:
			cc.rec.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
			return err
		}
		return nil
	case UpdateStatus:
		st := *a.Status.DeepCopy()
		if s.created != nil {
			st.Active = append(st.Active, jobRef(s.created))
			st.LastScheduleTime = &metav1.Time{Time: s.scheduled}
		}
		if apiequality.Semantic.DeepEqual(st, cj.Status) {
			return nil
		}
		cp := cj.DeepCopy()
		cp.Status = st
		if _, err := cc.c.CronJobs().UpdateStatus(ctx, cp, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	}
	return fmt.Errorf("unknown action %s", a.Type)
}
