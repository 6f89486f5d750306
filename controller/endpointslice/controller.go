package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

	plan := Plan(Input{Service: svc, Pods: pods, Slices: existing, TriggerTime: trigger, MaxEndpointsPerSlice: ec.maxPer,
		Node: func(name string) *corev1.Node {
			n, _ := ec.nodes.Store().Get("", name)
			return n
		}})
	if err := ec.apply(ctx, key, plan); err != nil {
		ec.rec.Eventf(svc, corev1.EventTypeWarning, "FailedToUpdateEndpointSlices",
			"Error updating Endpoint Slices for Service %s/%s: %v", ns, name, err)
		return framework.Result{}, err
	}
	if len(plan.MissingNodes) > 0 {
		return framework.Result{}, fmt.Errorf("pods on nodes %v left out: no such Node yet", plan.MissingNodes)
	}
	return framework.Result{}, nil
}

// apply writes a plan: creates, then updates, then deletes, so the
// Service never lists fewer endpoints on the way.
func (ec *Controller) apply(ctx context.Context, key string, plan Output) error {
	for _, s := range plan.Create {
		got, err := ec.api.Create(ctx, s, metav1.CreateOptions{})
		if err != nil {
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil // its namespace is going: so are the Service and the pods
			}
			return fmt.Errorf("create slice: %w", err)
		}
		ec.tracker.Expect(key, got)
	}
	for _, s := range plan.Update {
		got, err := ec.api.Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("update slice %s: %w", s.Name, err)
		}
		ec.tracker.Expect(key, got)
	}
	for _, s := range plan.Delete {
		err := ec.api.Delete(ctx, s.Namespace, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete slice %s: %w", s.Name, err)
		}
		ec.tracker.ExpectDeletion(key, s)
	}
	return nil
}

func (ec *Controller) forget(key string) {
	ec.mu.Lock()
	delete(ec.triggers, key)
	ec.mu.Unlock()
	ec.tracker.ForgetService(key)
}
