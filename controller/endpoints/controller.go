package endpoints

import (
	"context"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/client/informer"
	"minik/client/record"
	"minik/controller/framework"
	"minik/controller/internal/svcutil"
)

// leaderAnnotation marks the Endpoints older leader elections used as
// their lock; they have no Service and are not removed.
const leaderAnnotation = "control-plane.alpha.kubernetes.io/leader"

// Controller keeps the Endpoints of every Service with a selector.
type Controller struct {
	api       *client.Typed[corev1.Endpoints]
	svcAPI    *client.Typed[corev1.Service]
	services  *informer.Informer[corev1.Service]
	pods      *informer.Informer[corev1.Pod]
	endpoints *informer.Informer[corev1.Endpoints]
	rec       *record.Recorder
	log       *slog.Logger
	queue     *framework.Queue

	// sink performs a sync's write for Service svc (nil once deleted):
	// apiSink; a FakeSink in tests.
	sink func(svc *corev1.Service) framework.Sink[Action]

	mu       sync.Mutex
	triggers map[string]*svcutil.TriggerState
}

// New wires the controller to the shared informers, which must include
// the Service informers (framework.Informers.AddServiceInformers).
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, log *slog.Logger) *Controller {
	ec := &Controller{api: client.For[corev1.Endpoints](c, framework.EndpointsResource),
		svcAPI: client.For[corev1.Service](c, framework.ServicesResource), services: inf.Services,
		pods: inf.Pods, endpoints: inf.Endpoints, rec: rec, log: log.With("controller", Name),
		queue: framework.NewQueue(framework.QueueConfig{Name: Name}), triggers: map[string]*svcutil.TriggerState{}}
	ec.sink = func(svc *corev1.Service) framework.Sink[Action] { return apiSink{ec: ec, svc: svc} }
	inf.Services.AddHandler(informer.Handler[corev1.Service]{
		OnAdd:    func(s *corev1.Service) { ec.queue.Add(framework.KeyOf(s)) },
		OnUpdate: func(_, s *corev1.Service) { ec.queue.Add(framework.KeyOf(s)) },
		OnDelete: func(s *corev1.Service) { ec.queue.Add(framework.KeyOf(s)) },
	})
	inf.Pods.AddHandler(svcutil.PodHandler(inf.Services.Store(), ec.queue.Add))
	// A deleted Endpoints of a Service is written again; edits by others
	// are corrected at the Service's next change, as in Kubernetes.
	inf.Endpoints.AddHandler(informer.Handler[corev1.Endpoints]{
		OnDelete: func(e *corev1.Endpoints) { ec.queue.Add(framework.KeyOf(e)) },
	})
	return ec
}

// Run queues the Endpoints left without a Service (deleted while the
// controller was not running), then processes the queue until ctx ends.
func (ec *Controller) Run(ctx context.Context, workers int) {
	for _, e := range ec.endpoints.Store().List() {
		if _, ok := e.Annotations[leaderAnnotation]; ok {
			continue
		}
		if _, ok := ec.services.Store().Get(e.Namespace, e.Name); !ok {
			ec.queue.Add(framework.KeyOf(e))
		}
	}
	framework.RunWorkers(ctx, ec.queue, workers, ec.sync, func(key string, err error) {
		ec.log.Warn("sync failed", "service", key, "err", err)
	})
}

func (ec *Controller) sync(ctx context.Context, key string) (framework.Result, error) {
	ns, name := framework.SplitKey(key)
	cur, _ := ec.endpoints.Store().Get(ns, name)
	svc, ok := ec.services.Store().Get(ns, name)
	var pods []*corev1.Pod
	var trigger time.Time
	switch {
	case !ok:
		ec.mu.Lock()
		delete(ec.triggers, key)
		ec.mu.Unlock()
		svc = nil
	case svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.Selector == nil:
		// Selectorless Services have the Endpoints their users write;
		// ExternalName Services none.
		return framework.Result{}, nil
	default:
		pods = svcutil.SelectedPods(ec.pods.Store(), svc)
		ec.mu.Lock()
		var st *svcutil.TriggerState
		trigger, st = svcutil.TriggerTime(ec.triggers[key], svc, pods)
		ec.triggers[key] = st
		ec.mu.Unlock()
	}
	out := Plan(Input{Service: svc, Pods: pods, Current: cur, TriggerTime: trigger})
	return framework.Result{}, framework.Execute(ctx, ec.sink(svc), out.Actions)
}

// apiSink writes the Endpoints of Service svc through the apiserver and
// reports failed writes as events on it, as Kubernetes does.
type apiSink struct {
	ec  *Controller
	svc *corev1.Service
}

func (s apiSink) Do(ctx context.Context, a Action) error {
	api, ep := s.ec.api, a.Endpoints
	switch a.Type {
	case DeleteEndpoints:
		// The Service's absence comes from a cache, whose watch of
		// Services may lag the one of Endpoints (a Service and its
		// Endpoints made at once, as the controller starts): a user's
		// Endpoints is deleted only once the apiserver says the Service
		// is gone. Deletes are rare; this read is off the hot path.
		if _, err := s.ec.svcAPI.Get(ctx, ep.Namespace, ep.Name, metav1.GetOptions{}); err == nil {
			return nil // its add, when the cache sees it, syncs it again
		} else if !apierrors.IsNotFound(err) {
			return err
		}
		uid := ep.UID
		err := api.Delete(ctx, ep.Namespace, ep.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
	case CreateEndpoints:
		if _, err := api.Create(ctx, ep, metav1.CreateOptions{}); err != nil {
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil
			}
			s.ec.rec.Eventf(s.svc, corev1.EventTypeWarning, "FailedToCreateEndpoint",
				"Failed to create endpoint for service %s/%s: %v", ep.Namespace, ep.Name, err)
			return err
		}
	case UpdateEndpoints:
		if _, err := api.Update(ctx, ep, metav1.UpdateOptions{}); err != nil {
			if !apierrors.IsConflict(err) {
				s.ec.rec.Eventf(s.svc, corev1.EventTypeWarning, "FailedToUpdateEndpoint",
					"Failed to update endpoint %s/%s: %v", ep.Namespace, ep.Name, err)
			}
			return err
		}
	}
	return nil
}
