package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"minik/client"
	"minik/client/informer"
	"minik/client/record"
	"minik/controller/framework"
	"minik/controller/internal/svcutil"
)

// errStale says the slice cache has not yet seen this controller's last
// writes for a Service; the sync is retried (as Kubernetes'
// StaleInformerCache), never acted on: a slice created but not yet seen
// would otherwise be created twice.
var errStale = errors.New("EndpointSlice cache is behind this controller's writes")

// Controller keeps the EndpointSlices of every Service with a selector.
type Controller struct {
	api      *client.Typed[discoveryv1.EndpointSlice]
	services *informer.Informer[corev1.Service]
	pods     *informer.Informer[corev1.Pod]
	nodes    *informer.Informer[corev1.Node]
	slices   *informer.Informer[discoveryv1.EndpointSlice]
	rec      *record.Recorder
	log      *slog.Logger
	queue    *framework.Queue
	maxPer   int
	tracker  *svcutil.SliceTracker
	// sink performs the writes of a sync of Service svc, queued as key
	// (a svcutil.SliceSink; a FakeSink in tests).
	sink func(key string, svc *corev1.Service) framework.Sink[Action]

	mu       sync.Mutex
	triggers map[string]*svcutil.TriggerState // by Service key
}

// New wires the controller to the shared informers, which must include
// the Service informers (framework.Informers.AddServiceInformers).
// maxPerSlice is --max-endpoints-per-slice (0: 100).
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, maxPerSlice int, log *slog.Logger) *Controller {
	ec := &Controller{api: client.For[discoveryv1.EndpointSlice](c, framework.EndpointSlicesResource),
		services: inf.Services, pods: inf.Pods, nodes: inf.Nodes, slices: inf.EndpointSlices, rec: rec,
		log: log.With("controller", Name), queue: framework.NewQueue(framework.QueueConfig{Name: Name}), maxPer: maxPerSlice,
		tracker: svcutil.NewSliceTracker(), triggers: map[string]*svcutil.TriggerState{}}
	ec.sink = func(key string, svc *corev1.Service) framework.Sink[Action] {
		return svcutil.SliceSink{API: ec.api, Tracker: ec.tracker, Key: key, Rec: rec, Object: svc}
	}
	inf.Services.AddHandler(informer.Handler[corev1.Service]{
		OnAdd:    func(s *corev1.Service) { ec.queue.Add(framework.KeyOf(s)) },
		OnUpdate: func(_, s *corev1.Service) { ec.queue.Add(framework.KeyOf(s)) },
		OnDelete: func(s *corev1.Service) { ec.queue.Add(framework.KeyOf(s)) },
	})
	inf.Pods.AddHandler(svcutil.PodHandler(inf.Services.Store(), ec.queue.Add))
	inf.EndpointSlices.AddHandler(svcutil.SliceHandler(ControllerName, ec.tracker, ec.queue.Add))
	return ec
}

func managed(s *discoveryv1.EndpointSlice) bool { return svcutil.ManagedBy(s, ControllerName) }

// Run processes the queue until ctx ends.
func (ec *Controller) Run(ctx context.Context, workers int) {
	framework.RunWorkers(ctx, ec.queue, workers, ec.sync, func(key string, err error) {
		if !errors.Is(err, errStale) {
			ec.log.Warn("sync failed", "service", key, "err", err)
		}
	})
}

func (ec *Controller) sync(ctx context.Context, key string) (framework.Result, error) {
	ns, name := framework.SplitKey(key)
	svc, ok := ec.services.Store().Get(ns, name)
	if !ok {
		// Its slices go with it: the garbage collector follows their
		// ownerReferences.
		ec.forget(key)
		return framework.Result{}, nil
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.Selector == nil {
		// Selectorless Services get the slices their users write (or the
		// mirroring controller's); ExternalName Services none.
		return framework.Result{}, nil
	}
	var existing []*discoveryv1.EndpointSlice
	for _, s := range ec.slices.Store().ByIndex(framework.ServiceNameIndex, key) {
		if managed(s) {
			existing = append(existing, s)
		}
	}
	if ec.tracker.Stale(key, existing) {
		return framework.Result{}, errStale
	}
	pods := svcutil.SelectedPods(ec.pods.Store(), svc)
	ec.mu.Lock()
	trigger, state := svcutil.TriggerTime(ec.triggers[key], svc, pods)
	ec.triggers[key] = state
	ec.mu.Unlock()

	// The nodes the plan finds missing are those of the pods it left out.
	missing := map[string]bool{}
	plan := Plan(Input{Service: svc, Pods: pods, Slices: existing, TriggerTime: trigger, MaxEndpointsPerSlice: ec.maxPer,
		Node: func(name string) *corev1.Node {
			n, ok := ec.nodes.Store().Get("", name)
			if !ok {
				missing[name] = true
			}
			return n
		}})
	err := framework.Execute(ctx, ec.sink(key, svc), plan.Actions)
	if errors.Is(err, svcutil.ErrNamespaceTerminating) {
		return framework.Result{}, nil // its namespace is going: so are the Service and the pods
	}
	if err != nil {
		ec.rec.Eventf(svc, corev1.EventTypeWarning, "FailedToUpdateEndpointSlices",
			"Error updating Endpoint Slices for Service %s/%s: %v", ns, name, err)
		return framework.Result{}, err
	}
	if len(missing) > 0 {
		return framework.Result{}, fmt.Errorf("pods on nodes %v left out: no such Node yet", slices.Sorted(maps.Keys(missing)))
	}
	return framework.Result{}, nil
}

func (ec *Controller) forget(key string) {
	ec.mu.Lock()
	delete(ec.triggers, key)
	ec.mu.Unlock()
	ec.tracker.ForgetService(key)
}
