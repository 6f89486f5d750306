package endpointslicemirroring

import (
	"context"
	"errors"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"minik/client"
	"minik/client/informer"
	"minik/client/record"
	"minik/controller/framework"
	"minik/controller/internal/svcutil"
)

var errStale = errors.New("EndpointSlice cache is behind this controller's writes")

// Controller mirrors user-written Endpoints into EndpointSlices.
type Controller struct {
	api       *client.Typed[discoveryv1.EndpointSlice]
	services  *informer.Informer[corev1.Service]
	endpoints *informer.Informer[corev1.Endpoints]
	slices    *informer.Informer[discoveryv1.EndpointSlice]
	rec       *record.Recorder
	log       *slog.Logger
	queue     *framework.Queue
	tracker   *svcutil.SliceTracker
	// sink performs the writes of a sync of key, whose Endpoints (nil if
	// gone) takes the events: a svcutil.SliceSink; a FakeSink in tests.
	sink func(key string, ep *corev1.Endpoints) framework.Sink[Action]
}

// New wires the controller to the shared informers, which must include
// the Service informers (framework.Informers.AddServiceInformers).
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, log *slog.Logger) *Controller {
	mc := &Controller{api: client.For[discoveryv1.EndpointSlice](c, framework.EndpointSlicesResource),
		services: inf.Services, endpoints: inf.Endpoints, slices: inf.EndpointSlices, rec: rec,
		log: log.With("controller", Name), queue: framework.NewQueue(framework.QueueConfig{Name: Name}), tracker: svcutil.NewSliceTracker()}
	mc.sink = func(key string, ep *corev1.Endpoints) framework.Sink[Action] {
		return svcutil.SliceSink{API: mc.api, Tracker: mc.tracker, Key: key, Rec: rec, Object: ep}
	}
	// Only selectorless Services matter, and a Service whose selector
	// comes or goes.
	inf.Services.AddHandler(informer.Handler[corev1.Service]{
		OnAdd: func(s *corev1.Service) {
			if s.Spec.Selector == nil {
				mc.queue.Add(framework.KeyOf(s))
			}
		},
		OnUpdate: func(old, s *corev1.Service) {
			if (old.Spec.Selector == nil) != (s.Spec.Selector == nil) {
				mc.queue.Add(framework.KeyOf(s))
			}
		},
		OnDelete: func(s *corev1.Service) {
			if s.Spec.Selector == nil {
				mc.queue.Add(framework.KeyOf(s))
			}
		},
	})
	inf.Endpoints.AddHandler(informer.Handler[corev1.Endpoints]{
		OnAdd: func(e *corev1.Endpoints) {
			if ShouldMirror(e) {
				mc.queue.Add(framework.KeyOf(e))
			}
		},
		OnUpdate: func(old, e *corev1.Endpoints) {
			if ShouldMirror(old) || ShouldMirror(e) {
				mc.queue.Add(framework.KeyOf(e))
			}
		},
		OnDelete: func(e *corev1.Endpoints) {
			if ShouldMirror(e) {
				mc.queue.Add(framework.KeyOf(e))
			}
		},
	})
	inf.EndpointSlices.AddHandler(svcutil.SliceHandler(ControllerName, mc.tracker, mc.queue.Add))
	return mc
}

func managed(s *discoveryv1.EndpointSlice) bool { return svcutil.ManagedBy(s, ControllerName) }

// Run processes the queue until ctx ends.
func (mc *Controller) Run(ctx context.Context, workers int) {
	framework.RunWorkers(ctx, mc.queue, workers, mc.sync, func(key string, err error) {
		if !errors.Is(err, errStale) {
			mc.log.Warn("sync failed", "endpoints", key, "err", err)
		}
	})
}

func (mc *Controller) sync(ctx context.Context, key string) (framework.Result, error) {
	ns, name := framework.SplitKey(key)
	ep, _ := mc.endpoints.Store().Get(ns, name)
	svc, _ := mc.services.Store().Get(ns, name)
	var existing []*discoveryv1.EndpointSlice
	for _, s := range mc.slices.Store().ByIndex(framework.ServiceNameIndex, key) {
		if managed(s) {
			existing = append(existing, s)
		}
	}
	if ep == nil && len(existing) == 0 {
		mc.tracker.ForgetService(key)
		return framework.Result{}, nil
	}
	if mc.tracker.Stale(key, existing) {
		return framework.Result{}, errStale
	}
	out := Plan(Input{Endpoints: ep, Service: svc, Slices: existing})
	err := framework.Execute(ctx, mc.sink(key, ep), out.Actions)
	if errors.Is(err, svcutil.ErrNamespaceTerminating) {
		return framework.Result{}, nil // its namespace is going: so are the Endpoints
	}
	return framework.Result{}, err
}
