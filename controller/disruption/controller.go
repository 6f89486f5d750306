package disruption

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	inf.StatefulSets.AddHandler(informer.Handler[appsv1.StatefulSet]{OnUpdate: func(_, ss *appsv1.StatefulSet) {
		dc.enqueueFor(ss.Namespace, ss.Spec.Template.Labels)
	}})
	inf.ReplicationControllers.AddHandler(informer.Handler[corev1.ReplicationController]{OnUpdate: func(_, rc *corev1.ReplicationController) {
		if rc.Spec.Template != nil {
			dc.enqueueFor(rc.Namespace, rc.Spec.Template.Labels)
		}
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
	scale, scaleErr := dc.controllerScale(ctx, pods)
	out := Plan(Input{PDB: pdb, Pods: pods, ControllerScale: scale, ScaleErr: scaleErr, Now: dc.clock.Now()})
	err := framework.Execute(ctx, dc.sink, out.Actions)
	if re := (*readError)(nil); errors.As(scaleErr, &re) {
		// Failed safe above; the scale is read again after a backoff.
		err = errors.Join(err, re)
	}
	return framework.Result{RequeueAfter: out.RequeueAfter}, err
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
// pods, looked for as upstream's finders do, in order: a
// ReplicationController, the Deployment of a ReplicaSet, a ReplicaSet, a
// StatefulSet (all from the caches: one missing there is gone), else any
// kind with a scale subresource (live reads: the kind's group version in
// discovery, then its object's scale, which must have the owner's UID).
func (dc *Controller) controllerScale(ctx context.Context, pods []*corev1.Pod) (int32, error) {
	scales := map[types.UID]int32{}
	looked := map[types.UID]bool{} // the pods' controllers found already
	discovery := map[schema.GroupVersion]*metav1.APIResourceList{}
	for _, p := range pods {
		ref := metav1.GetControllerOfNoCopy(p)
		if ref == nil {
			return 0, errNoController(p)
		}
		if looked[ref.UID] {
			continue
		}
		uid, n, found, cached := dc.cachedScale(p.Namespace, ref)
		if !cached {
			var err error
			if uid, n, found, err = dc.liveScale(ctx, p.Namespace, ref, discovery); err != nil {
				return 0, err
			}
		}
		if !found {
			return 0, errNoController(p)
		}
		looked[ref.UID] = true
		scales[uid] = n
	}
	var total int32
	for _, n := range scales {
		total += n
	}
	return total, nil
}

// cachedScale finds the scale of ref, a pod's controller, in the caches:
// the UID and spec.replicas of the ReplicationController, the
// ReplicaSet's Deployment (or the ReplicaSet, if it has none), or the
// StatefulSet it names. cached is false for the other kinds; for these,
// found is false when the cache holds no such object (the controller is
// gone).
func (dc *Controller) cachedScale(ns string, ref *metav1.OwnerReference) (uid types.UID, n int32, found, cached bool) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "", 0, false, false
	}
	apps := gv.Group == appsv1.GroupName || gv.Group == "extensions"
	switch {
	case ref.Kind == "ReplicationController" && gv.Group == corev1.GroupName:
		if rc, ok := dc.inf.ReplicationControllers.Store().Get(ns, ref.Name); ok && rc.UID == ref.UID {
			return rc.UID, replicas(rc.Spec.Replicas), true, true
		}
	case ref.Kind == "ReplicaSet" && apps:
		rs, ok := dc.inf.ReplicaSets.Store().Get(ns, ref.Name)
		if !ok || rs.UID != ref.UID {
			return "", 0, false, true
		}
		if dref := metav1.GetControllerOfNoCopy(rs); dref != nil && dref.Kind == "Deployment" {
			if d, ok := dc.inf.Deployments.Store().Get(ns, dref.Name); ok && d.UID == dref.UID {
				return d.UID, replicas(d.Spec.Replicas), true, true
			}
		}
		return rs.UID, replicas(rs.Spec.Replicas), true, true
	case ref.Kind == "StatefulSet" && gv.Group == appsv1.GroupName:
		if ss, ok := dc.inf.StatefulSets.Store().Get(ns, ref.Name); ok && ss.UID == ref.UID {
			return ss.UID, replicas(ss.Spec.Replicas), true, true
		}
	default:
		return "", 0, false, false
	}
	return "", 0, false, true
}

// liveScale reads the scale subresource of ref, a pod's controller of a
// kind the caches do not hold: found is false when the object is gone or
// is another one of that name. discovery keeps the group versions read
// during one sync. A kind its group version does not serve, or serves
// without a scale subresource, is an error, as upstream's; so is a read
// that failed (a *readError: the sync is retried).
func (dc *Controller) liveScale(ctx context.Context, ns string, ref *metav1.OwnerReference,
	discovery map[schema.GroupVersion]*metav1.APIResourceList) (uid types.UID, n int32, found bool, err error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "", 0, false, err
	}
	list, ok := discovery[gv]
	if !ok {
		list = &metav1.APIResourceList{}
		path := "/apis/" + gv.String()
		if gv.Group == "" {
			path = "/api/" + gv.Version
		}
		if err := dc.c.Do(ctx, http.MethodGet, path, nil, nil, list); err != nil && !apierrors.IsNotFound(err) {
			return "", 0, false, &readError{fmt.Errorf("discovery of %s: %w", gv, err)}
		}
		discovery[gv] = list
	}
	var res *client.Resource
	scalable := false
	for _, ar := range list.APIResources {
		if ar.Kind == ref.Kind && !strings.Contains(ar.Name, "/") {
			res = &client.Resource{Group: gv.Group, Version: gv.Version, Resource: ar.Name, Namespaced: ar.Namespaced}
		}
	}
	if res == nil {
		return "", 0, false, fmt.Errorf("no matches for kind %q in version %q", ref.Kind, gv)
	}
	for _, ar := range list.APIResources {
		scalable = scalable || ar.Name == res.Resource+"/scale"
	}
	if !scalable {
		return "", 0, false, fmt.Errorf("%s does not implement the scale subresource", res.GroupResource())
	}
	var scale autoscalingv1.Scale
	if err := dc.c.Do(ctx, http.MethodGet, res.Path(ns, ref.Name, "scale"), nil, nil, &scale); err != nil {
		if apierrors.IsNotFound(err) {
			return "", 0, false, nil
		}
		return "", 0, false, &readError{fmt.Errorf("get %s %s/%s scale: %w", res.GroupResource(), ns, ref.Name, err)}
	}
	if scale.UID != ref.UID {
		return "", 0, false, nil
	}
	return scale.UID, scale.Spec.Replicas, true, nil
}

// readError is a live read of controllerScale that failed: the budget
// fails safe (SyncFailed) and its sync is retried with backoff.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}
