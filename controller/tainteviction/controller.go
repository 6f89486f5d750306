package tainteviction

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"minik/client"
	"minik/client/informer"
	"minik/client/record"
	"minik/controller/framework"
)

// Name is the controller's name.
const Name = "taint-eviction-controller"

// Controller evicts pods from NoExecute-tainted nodes.
type Controller struct {
	c     *client.Client
	inf   *framework.Informers
	rec   *record.Recorder
	log   *slog.Logger
	clock clock.Clock
	queue *framework.Queue

	mu        sync.Mutex
	countdown map[string]time.Time // pod key → when its countdown began

	// sink performs the actions (apiSink; a FakeSink in tests).
	sink framework.Sink[Action]
}

// New registers the controller.
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, clk clock.Clock, log *slog.Logger) *Controller {
	tc := &Controller{c: c, inf: inf, rec: rec, log: log.With("controller", Name), clock: clk,
		queue: framework.NewQueue(framework.QueueConfig{Name: Name, Clock: clk}), countdown: map[string]time.Time{}}
	tc.sink = apiSink{tc}
	inf.Pods.AddHandler(informer.Handler[corev1.Pod]{
		OnAdd: func(p *corev1.Pod) {
			if p.Spec.NodeName != "" {
				tc.queue.Add(framework.KeyOf(p))
			}
		},
		OnUpdate: func(old, p *corev1.Pod) {
			if p.Spec.NodeName != "" && (old.Spec.NodeName != p.Spec.NodeName || !slices.Equal(old.Spec.Tolerations, p.Spec.Tolerations) || old == p) {
				tc.queue.Add(framework.KeyOf(p))
			}
		},
		OnDelete: func(p *corev1.Pod) { tc.queue.Add(framework.KeyOf(p)) },
	})
	inf.Nodes.AddHandler(informer.Handler[corev1.Node]{
		OnAdd:    func(n *corev1.Node) { tc.nodeChanged(nil, n) },
		OnUpdate: tc.nodeChanged,
	})
	return tc
}

func noExecute(n *corev1.Node) []corev1.Taint {
	if n == nil {
		return nil
	}
	var out []corev1.Taint
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}

// nodeChanged queues the pods of a node whose NoExecute taints changed.
func (tc *Controller) nodeChanged(old, n *corev1.Node) {
	oldT, newT := noExecute(old), noExecute(n)
	if old != nil && slices.EqualFunc(oldT, newT, func(a, b corev1.Taint) bool { return a.MatchTaint(&b) }) {
		return
	}
	for _, p := range tc.inf.Pods.Store().ByIndex(informer.NodeNameIndex, n.Name) {
		tc.queue.Add(framework.KeyOf(p))
	}
}

// Run processes pods until ctx ends.
func (tc *Controller) Run(ctx context.Context, workers int) {
	framework.RunWorkers(ctx, tc.queue, workers, tc.sync, func(key string, err error) {
		tc.log.Warn("eviction failed", "pod", key, "err", err)
	})
}

func (tc *Controller) sync(ctx context.Context, key string) (framework.Result, error) {
	ns, name := framework.SplitKey(key)
	pod, _ := tc.inf.Pods.Store().Get(ns, name) // nil: gone
	var taints []corev1.Taint
	if pod != nil && pod.Spec.NodeName != "" {
		if n, found := tc.inf.Nodes.Store().Get("", pod.Spec.NodeName); found {
			taints = n.Spec.Taints
		}
	}
	tc.mu.Lock()
	since := tc.countdown[key]
	tc.mu.Unlock()
	out, keep := Plan(pod, taints, since, tc.clock.Now())
	// The countdown changes once the actions are done: a failed delete
	// is retried with the countdown that ran out.
	if err := framework.Execute(ctx, tc.sink, out.Actions); err != nil {
		return framework.Result{}, err
	}
	tc.mu.Lock()
	if keep.IsZero() {
		delete(tc.countdown, key)
	} else {
		tc.countdown[key] = keep
	}
	tc.mu.Unlock()
	return framework.Result{RequeueAfter: out.RequeueAfter}, nil
}

// apiSink performs the actions through the apiserver. An eviction of a
// pod gone or replaced meanwhile is done.
type apiSink struct{ tc *Controller }

func (s apiSink) Do(ctx context.Context, a Action) error {
	tc, pod := s.tc, a.Pod
	key := pod.Namespace + "/" + pod.Name
	switch a.Type {
	case CancelEviction:
		tc.rec.Eventf(pod, corev1.EventTypeNormal, "TaintManagerEviction", "Cancelling deletion of Pod %s", key)
	case MarkForDeletion:
		tc.log.Info("evicting pod from tainted node", "pod", key, "node", pod.Spec.NodeName)
		tc.rec.Eventf(pod, corev1.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod %s", key)
	case SetDisruptionTarget:
		if _, err := tc.c.Pods().UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			tc.log.Debug("could not set DisruptionTarget", "pod", key, "err", err)
		}
	case DeletePod:
		uid := pod.UID
		err := tc.c.Pods().Delete(ctx, pod.Namespace, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}
