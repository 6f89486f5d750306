package disruption

import (
	"context"
	"log/slog"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"minik/client"
	"minik/client/informer"
	"minik/client/record"
	"minik/controller/framework"
)

// Name is the controller's name.
const Name = "disruption"

// Controller maintains PodDisruptionBudget status.
type Controller struct {
	c     *client.Client
	inf   *framework.Informers
	rec   *record.Recorder
	log   *slog.Logger
	clock clock.Clock
	queue *framework.Queue
	// sink performs the actions (apiSink; a FakeSink in tests).
	sink framework.Sink[Action]
}

// New registers the controller.
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, clk clock.Clock, log *slog.Logger) *Controller {
	dc := &Controller{c: c, inf: inf, rec: rec, log: log.With("controller", Name), clock: clk,
		queue: framework.NewQueue(framework.QueueConfig{Name: Name, Clock: clk})}
	dc.sink = apiSink{dc}
	inf.PodDisruptionBudgets.AddHandler(framework.Handler[policyv1.PodDisruptionBudget](dc.queue))
	onPod := func(p *corev1.Pod) { dc.enqueueFor(p.Namespace, p.Labels) }
	inf.Pods.AddHandler(informer.Handler[corev1.Pod]{OnAdd: onPod, OnDelete: onPod,
		OnUpdate: func(old, p *corev1.Pod) {
			if !labels.Equals(old.Labels, p.Labels) {
				onPod(old)
			}
			onPod(p)
		}})
	// Scale changes of the controllers change expectedPods.
	inf.ReplicaSets.AddHandler(informer.Handler[appsv1.ReplicaSet]{OnUpdate: func(_, rs *appsv1.ReplicaSet) {
		dc.enqueueFor(rs.Namespace, rs.Spec.Template.Labels)
	}})
	inf.Deployments.AddHandler(informer.Handler[appsv1.Deployment]{OnUpdate: func(_, d *appsv1.Deployment) {
		dc.enqueueFor(d.Namespace, d.Spec.Template.Labels)
	}})
	return dc
}

func (dc *Controller) enqueueFor(ns string, lbls map[string]string) {
	for _, pdb := range dc.inf.PodDisruptionBudgets.Store().ByIndex(informer.NamespaceIndex, ns) {
		if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err == nil && sel.Matches(labels.Set(lbls)) {
			dc.queue.Add(framework.KeyOf(pdb))
		}
	}
}

// Run processes budgets until ctx ends.
func (dc *Controller) Run(ctx context.Context, workers int) {
	framework.RunWorkers(ctx, dc.queue, workers, dc.sync, func(key string, err error) {
		dc.log.Warn("sync failed", "pdb", key, "err", err)
	})
}

func (dc *Controller) sync(ctx context.Context, key string) (framework.Result, error) {
	ns, name := framework.SplitKey(key)
	pdb, ok := dc.inf.PodDisruptionBudgets.Store().Get(ns, name)
	if !ok {
		return framework.Result{}, nil
	}
	var pods []*corev1.Pod
	if pdb.Spec.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			return framework.Result{}, nil
		}
		for _, p := range dc.inf.Pods.Store().ByIndex(informer.NamespaceIndex, ns) {
			if sel.Matches(labels.Set(p.Labels)) {
				pods = append(pods, p)
			}
		}
	}
	scale, scaleErr := dc.controllerScale(pods)
	out := Plan(Input{PDB: pdb, Pods: pods, ControllerScale: scale, ScaleErr: scaleErr, Now: dc.clock.Now()})
	return framework.Result{RequeueAfter: out.RequeueAfter}, framework.Execute(ctx, dc.sink, out.Actions)
}

// apiSink performs the actions through the apiserver.
type apiSink struct{ dc *Controller }

func (s apiSink) Do(ctx context.Context, a Action) error {
	switch a.Type {
	case RecordNoControllers:
		s.dc.rec.Eventf(a.PDB, corev1.EventTypeWarning, "NoControllers", "%s", a.Message)
	case UpdateStatus:
		if _, err := s.dc.c.PodDisruptionBudgets().UpdateStatus(ctx, a.PDB, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// controllerScale sums spec.replicas over the distinct controllers of
// pods: ReplicationControllers, ReplicaSets, or the Deployment owning one.
func (dc *Controller) controllerScale(pods []*corev1.Pod) (int32, error) {
	seen := map[types.UID]bool{}
	var total int32
	for _, p := range pods {
		ref := metav1.GetControllerOfNoCopy(p)
		if ref == nil {
			return 0, errNoController(p)
		}
		var uid types.UID
		var n int32
		switch ref.Kind {
		case "ReplicaSet":
			rs, ok := dc.inf.ReplicaSets.Store().Get(p.Namespace, ref.Name)
			if !ok || rs.UID != ref.UID {
				return 0, errNoController(p)
			}
			uid, n = rs.UID, replicas(rs.Spec.Replicas)
			if dref := metav1.GetControllerOfNoCopy(rs); dref != nil && dref.Kind == "Deployment" {
				if d, ok := dc.inf.Deployments.Store().Get(p.Namespace, dref.Name); ok && d.UID == dref.UID {
					uid, n = d.UID, replicas(d.Spec.Replicas)
				}
			}
		case "ReplicationController":
			rc, ok := dc.inf.ReplicationControllers.Store().Get(p.Namespace, ref.Name)
			if !ok || rc.UID != ref.UID {
				return 0, errNoController(p)
			}
			uid, n = rc.UID, replicas(rc.Spec.Replicas)
		default:
			return 0, errNoController(p)
		}
		if !seen[uid] {
			seen[uid] = true
			total += n
		}
	}
	return total, nil
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}
