package kubelet

import (
	"context"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"minik/client"
	"minik/client/informer"
	"minik/kubelet/envvars"
	"minik/kubelet/podstep"
)

// servicesResource is core/v1 services, which the kubelet lists and
// watches in every namespace for the pods' service variables.
var servicesResource = client.Resource{Version: "v1", Resource: "services", Namespaced: true}

// servicesWait is how long a container start waits for the first list of
// Services before it fails with CreateContainerConfigError (and is retried
// after its back-off). At kubelet start the list is on its way; this
// keeps the first pods from failing for it.
const servicesWait = 5 * time.Second

// serviceSource keeps the cluster's Services for the pods' environment:
// one list-watch (an informer) of all namespaces, as the kubelet's service
// lister, started only once the apiserver answers a list of services.
//
// An apiserver that does not serve services (404: the resource is not
// there) has no Services: the source is then ready with none, says so
// once in the log, and asks again with backoff (up to a minute), so that
// pods start without service variables rather than wait forever, as a
// kubelet without an API client does. Any other failure leaves it not
// ready: a pod's containers then wait for it (see serviceEnv).
type serviceSource struct {
	typed *client.Typed[corev1.Service]
	inf   *informer.Informer[corev1.Service]
	clock clock.Clock
	log   *slog.Logger

	ready     chan struct{} // closed once Services were listed, or are not served
	readyOnce sync.Once
}

func newServiceSource(c *client.Client, clock clock.Clock, log *slog.Logger) *serviceSource {
	typed := client.For[corev1.Service](c, servicesResource)
	inf := informer.New(typed, informer.Config{Logger: log})
	// The environment variables need the name, cluster IP and ports only.
	inf.SetTransform(TrimService)
	return &serviceSource{typed: typed, inf: inf, clock: clock, log: log, ready: make(chan struct{})}
}

// sharedServiceSource is a serviceSource on a child of a shared informer
// (Config.Shared), which trims the Services for every kubelet; it does no
// probe of its own.
func sharedServiceSource(inf *informer.Informer[corev1.Service], clock clock.Clock, log *slog.Logger) *serviceSource {
	return &serviceSource{inf: inf, clock: clock, log: log, ready: make(chan struct{})}
}

func (s *serviceSource) markReady() { s.readyOnce.Do(func() { close(s.ready) }) }

// TrimService drops what the pods' environment variables do not need of
// a Service (they need its name, cluster IP and ports), before it is cached.
func TrimService(svc *corev1.Service) *corev1.Service {
	svc.ManagedFields, svc.Annotations, svc.Labels, svc.Status = nil, nil, nil, corev1.ServiceStatus{}
	return svc
}

// run probes until the apiserver lists services (unless the informer is
// shared), then runs the informer until ctx ends.
func (s *serviceSource) run(ctx context.Context) error {
	if s.typed == nil {
		return s.runInformer(ctx)
	}
	backoff := informer.Backoff{Initial: time.Second, Max: time.Minute}
	saidNotServed, saidFailing := false, false
	for {
		_, err := s.typed.List(ctx, "", metav1.ListOptions{Limit: 1})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case apierrors.IsNotFound(err):
			s.markReady()
			if !saidNotServed {
				saidNotServed = true
				s.log.Info("the apiserver serves no services: pods start without service environment variables; asking again with backoff", "err", err)
			}
		case !saidFailing:
			saidFailing = true
			s.log.Warn("listing services for the pods' environment; retrying with backoff", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.clock.After(backoff.Next()):
		}
	}
	if saidNotServed {
		s.log.Info("the apiserver serves services now")
	}
	return s.runInformer(ctx)
}

// runInformer runs the informer until ctx ends; the source is ready once
// the informer is synced.
func (s *serviceSource) runInformer(ctx context.Context) error {
	go func() {
		select {
		case <-s.inf.Synced():
			s.markReady()
		case <-ctx.Done():
		}
	}()
	return s.inf.Run(ctx)
}

// forNamespace returns the Services of ns and of default (where the
// kubernetes Service is), from the cache.
func (s *serviceSource) forNamespace(ns string) []*corev1.Service {
	store := s.inf.Store()
	list := store.ByIndex(informer.NamespaceIndex, ns)
	if ns != metav1.NamespaceDefault {
		list = append(list, store.ByIndex(informer.NamespaceIndex, metav1.NamespaceDefault)...)
	}
	return list
}

// serviceEnv returns the service variables of pod's containers
// (envvars.ForPod). As in the kubelet, a pod that is not static waits
// until the Services have been read once, so that its variables are
// complete; here at most servicesWait, then the container fails with the
// kubelet's message and is retried. A static pod, which may run before
// any apiserver does, takes what is known.
func (k *Kubelet) serviceEnv(ctx context.Context, pod *corev1.Pod) ([]corev1.EnvVar, error) {
	s := k.services
	if s == nil {
		return nil, nil
	}
	if pod.Annotations[annotationConfigSource] != "file" {
		select {
		case <-s.ready:
		default:
			select {
			case <-s.ready:
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-k.cfg.Clock.After(servicesWait):
				return nil, podstep.ConfigErrorf("services have not yet been read at least once, cannot construct envvars")
			}
		}
	}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	return envvars.ForPod(s.forNamespace(pod.Namespace), pod.Namespace, links), nil
}
