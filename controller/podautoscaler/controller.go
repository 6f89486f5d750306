package podautoscaler

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"minik/client"
	"minik/client/informer"
	"minik/client/record"
	"minik/controller/framework"
	"minik/internal/resourcemetrics"
)

// Name is the controller's name.
const Name = "horizontalpodautoscaling"

// Controller reconciles HorizontalPodAutoscalers.
type Controller struct {
	c     *client.Client
	hpas  *informer.Informer[autoscalingv2.HorizontalPodAutoscaler]
	inf   *framework.Informers
	rec   *record.Recorder
	log   *slog.Logger
	clock clock.Clock
	cfg   Config
	queue *framework.Queue

	mu     sync.Mutex
	states map[string]State // by HPA key: the step's own state

	// sink performs a sync's actions on an HPA whose target's scale was
	// read at path (apiSink; a FakeSink in tests).
	sink func(hpa *autoscalingv2.HorizontalPodAutoscaler, path string, scale *autoscalingv1.Scale) framework.Sink[Action]
}

// New registers the controller on the shared informers (HPAs and pods).
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, clk clock.Clock, cfg Config, log *slog.Logger) *Controller {
	cfg.defaults()
	hc := &Controller{c: c, inf: inf, rec: rec, log: log.With("controller", Name), clock: clk, cfg: cfg,
		queue: framework.NewQueue(framework.QueueConfig{Name: Name, Clock: clk}), hpas: inf.HorizontalPodAutoscalers,
		states: map[string]State{}}
	hc.sink = func(hpa *autoscalingv2.HorizontalPodAutoscaler, path string, scale *autoscalingv1.Scale) framework.Sink[Action] {
		return apiSink{hc: hc, hpa: hpa, path: path, scale: scale}
	}
	// A new HPA or a changed spec is synced at once; the status updates
	// the controller itself makes wait for the next period, as upstream's
	// queue delays every HPA by the sync period.
	add := func(h *autoscalingv2.HorizontalPodAutoscaler) { hc.queue.Add(framework.KeyOf(h)) }
	hc.hpas.AddHandler(informer.Handler[autoscalingv2.HorizontalPodAutoscaler]{OnAdd: add, OnDelete: add,
		OnUpdate: func(old, h *autoscalingv2.HorizontalPodAutoscaler) {
			if old.Generation != h.Generation {
				add(h)
			}
		}})
	return hc
}

// Run reconciles every HPA each sync period until ctx ends (the shared
// informers have synced).
func (hc *Controller) Run(ctx context.Context, workers int) {
	framework.RunWorkers(ctx, hc.queue, workers, hc.sync, func(key string, err error) {
		hc.log.Warn("sync failed", "hpa", key, "err", err)
	})
}

func (hc *Controller) sync(ctx context.Context, key string) (framework.Result, error) {
	ns, name := framework.SplitKey(key)
	cached, ok := hc.hpas.Store().Get(ns, name)
	if !ok {
		hc.mu.Lock()
		delete(hc.states, key)
		hc.mu.Unlock()
		return framework.Result{}, nil
	}
	hpa := cached.DeepCopy()
	hpa.APIVersion, hpa.Kind = "autoscaling/v2", "HorizontalPodAutoscaler"
	in := Input{HPA: hpa, Now: hc.clock.Now(), Config: hc.cfg}
	hc.mu.Lock()
	in.State = hc.states[key]
	hc.mu.Unlock()

	scalePath, err := scalePath(hpa)
	var scale autoscalingv1.Scale
	if err == nil {
		err = hc.c.Do(ctx, http.MethodGet, scalePath, nil, nil, &scale)
	}
	in.ScaleErr = err
	in.SpecReplicas, in.StatusReplicas = scale.Spec.Replicas, scale.Status.Replicas
	switch sel, err := labels.Parse(scale.Status.Selector); {
	case in.ScaleErr != nil:
		// Plan only reports it.
	case err != nil || scale.Status.Selector == "":
		in.UsageErr = fmt.Errorf("the target's scale has no valid selector %q", scale.Status.Selector)
	default:
		for _, p := range hc.inf.Pods.Store().ByIndex(informer.NamespaceIndex, ns) {
			if sel.Matches(labels.Set(p.Labels)) {
				in.Pods = append(in.Pods, p)
			}
		}
		in.Usage, in.UsageErr = hc.podUsage(ctx, ns, sel.String())
	}
	out, state := Plan(in)
	hc.mu.Lock()
	hc.states[key] = state
	hc.mu.Unlock()
	sink, actions := hc.sink(hpa, scalePath, &scale), out.Actions
	if len(actions) > 0 && actions[0].Type == Rescale {
		// A failed rescale does not end the sync: its outcome goes into
		// the status and events that follow, as upstream reports it.
		actions = Rescaled(in, actions[0], actions[1:], sink.Do(ctx, actions[0]))
	}
	return framework.Result{RequeueAfter: out.RequeueAfter}, framework.Execute(ctx, sink, actions)
}

// apiSink performs one sync's actions on hpa through the apiserver; the
// target's scale, as read at path, is what a Rescale writes back.
type apiSink struct {
	hc    *Controller
	hpa   *autoscalingv2.HorizontalPodAutoscaler
	path  string
	scale *autoscalingv1.Scale
}

func (s apiSink) Do(ctx context.Context, a Action) error {
	switch a.Type {
	case Rescale:
		scale := s.scale.DeepCopy()
		scale.Spec.Replicas = a.Replicas
		return s.hc.c.Do(ctx, http.MethodPut, s.path, nil, scale, nil)
	case RecordEvent:
		s.hc.rec.Eventf(s.hpa, a.Event.Type, a.Event.Reason, "%s", a.Event.Message)
	case UpdateStatus:
		hpa := s.hpa.DeepCopy()
		hpa.Status = *a.Status
		_, err := client.For[autoscalingv2.HorizontalPodAutoscaler](s.hc.c, client.HorizontalPodAutoscalers).UpdateStatus(ctx, hpa, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil // deleted, or changed meanwhile: the next sync sees it
		}
		return err
	}
	return nil
}

// podUsage reads the selected pods' usage from metrics.k8s.io: per pod
// the sum over its containers, cpu in millicores and memory in
// milli-bytes (Quantity.MilliValue), as upstream's metrics client.
func (hc *Controller) podUsage(ctx context.Context, ns, selector string) (map[corev1.ResourceName]map[string]PodUsage, error) {
	var list resourcemetrics.PodMetricsList
	q := url.Values{"labelSelector": {selector}}
	path := "/apis/" + resourcemetrics.GroupVersion + "/namespaces/" + url.PathEscape(ns) + "/pods"
	if err := hc.c.Do(ctx, http.MethodGet, path, q, nil, &list); err != nil {
		return nil, err
	}
	out := map[corev1.ResourceName]map[string]PodUsage{}
	for _, m := range list.Items {
		sums := map[corev1.ResourceName]int64{}
		for _, c := range m.Containers {
			for res, q := range c.Usage {
				sums[res] += q.MilliValue()
			}
		}
		for res, v := range sums {
			if out[res] == nil {
				out[res] = map[string]PodUsage{}
			}
			out[res][m.Name] = PodUsage{Value: v, Timestamp: m.Timestamp.Time, Window: m.Window.Duration}
		}
	}
	return out, nil
}

// scalePath is the scale subresource of the HPA's target: its kind's
// plural (Deployment, ReplicaSet, StatefulSet, ReplicationController) in
// the group of its apiVersion.
func scalePath(hpa *autoscalingv2.HorizontalPodAutoscaler) (string, error) {
	ref := hpa.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "", fmt.Errorf("invalid API version in scale target reference: %w", err)
	}
	if gv.Version == "" {
		return "", fmt.Errorf("the scale target reference %s/%s has no apiVersion", ref.Kind, ref.Name)
	}
	plural := strings.ToLower(ref.Kind) + "s"
	prefix := "/apis/" + gv.Group + "/" + gv.Version
	if gv.Group == "" {
		prefix = "/api/" + gv.Version
	}
	return prefix + "/namespaces/" + url.PathEscape(hpa.Namespace) + "/" + plural + "/" + url.PathEscape(ref.Name) + "/scale", nil
}
