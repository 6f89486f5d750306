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
	apiequality "k8s.io/apimachinery/pkg/api/equality"
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
}

// New registers the controller. Its HPA informer is its own (only it
// reads HPAs); the pods come from the shared informers.
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, clk clock.Clock, cfg Config, log *slog.Logger) *Controller {
	cfg.defaults()
	hc := &Controller{c: c, inf: inf, rec: rec, log: log.With("controller", Name), clock: clk, cfg: cfg,
		queue:  framework.NewQueue(framework.QueueConfig{Name: Name, Clock: clk}),
		hpas:   informer.New(client.For[autoscalingv2.HorizontalPodAutoscaler](c, client.HorizontalPodAutoscalers), informer.Config{Logger: log}),
		states: map[string]State{}}
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

// Run reconciles every HPA each sync period until ctx ends.
func (hc *Controller) Run(ctx context.Context, workers int) {
	go func() { _ = hc.hpas.Run(ctx) }()
	select {
	case <-hc.hpas.Synced():
	case <-ctx.Done():
		return
	}
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
	next := framework.Result{RequeueAfter: hc.cfg.SyncPeriod}
	now := hc.clock.Now()

	scalePath, err := scalePath(hpa)
	var scale autoscalingv1.Scale
	if err == nil {
		err = hc.c.Do(ctx, http.MethodGet, scalePath, nil, nil, &scale)
	}
	if err != nil {
		hc.rec.Eventf(hpa, corev1.EventTypeWarning, "FailedGetScale", "%v", err)
		st := hpa.Status.DeepCopy()
		setCondition(st, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale",
			"the HPA controller was unable to get the target's current scale: "+err.Error(), metav1.NewTime(now))
		return next, hc.updateStatus(ctx, hpa, *st)
	}
	in := Input{HPA: hpa, SpecReplicas: scale.Spec.Replicas, StatusReplicas: scale.Status.Replicas, Now: now, Config: hc.cfg}
	hc.mu.Lock()
	in.State = hc.states[key]
	hc.mu.Unlock()
	sel, err := labels.Parse(scale.Status.Selector)
	if err != nil || scale.Status.Selector == "" {
		in.UsageErr = fmt.Errorf("the target's scale has no valid selector %q", scale.Status.Selector)
	} else {
		for _, p := range hc.inf.Pods.Store().ByIndex(informer.NamespaceIndex, ns) {
			if sel.Matches(labels.Set(p.Labels)) {
				in.Pods = append(in.Pods, p)
			}
		}
		in.Usage, in.UsageErr = hc.podUsage(ctx, ns, sel.String())
	}
	out := Plan(in)
	hc.mu.Lock()
	hc.states[key] = out.State
	hc.mu.Unlock()
	status := out.Status
	if out.Rescale {
		scale.Spec.Replicas = out.Replicas
		err := hc.c.Do(ctx, http.MethodPut, scalePath, nil, &scale, nil)
		ScaleUpdated(&status, out.Replicas, err, now)
		if err != nil {
			hc.rec.Eventf(hpa, corev1.EventTypeWarning, "FailedRescale", "New size: %d; reason: %s; error: %v", out.Replicas, out.Reason, err)
			status.DesiredReplicas, status.LastScaleTime = scale.Status.Replicas, hpa.Status.LastScaleTime
			out.Events = dropRescale(out.Events)
		}
	}
	for _, e := range out.Events {
		hc.rec.Eventf(hpa, e.Type, e.Reason, "%s", e.Message)
	}
	return next, hc.updateStatus(ctx, hpa, status)
}

func dropRescale(events []Event) []Event {
	var out []Event
	for _, e := range events {
		if e.Reason != "SuccessfulRescale" {
			out = append(out, e)
		}
	}
	return out
}

func (hc *Controller) updateStatus(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, st autoscalingv2.HorizontalPodAutoscalerStatus) error {
	if apiequality.Semantic.DeepEqual(hpa.Status, st) {
		return nil
	}
	hpa.Status = st
	_, err := client.For[autoscalingv2.HorizontalPodAutoscaler](hc.c, client.HorizontalPodAutoscalers).UpdateStatus(ctx, hpa, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // deleted, or changed meanwhile: the next sync sees it
	}
	return err
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
