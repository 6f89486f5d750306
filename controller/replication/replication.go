// Package replication is the ReplicationController controller: the
// ReplicaSet controller's step and driver, adapted to the older kind,
// whose selector is a plain map and whose template may be nil.
package replication

import (
	"errors"
	"log/slog"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"

	"minik/client"
	"minik/client/record"
	"minik/controller/framework"
	"minik/controller/replicaset"
)

// Name is the controller's name.
const Name = "replicationcontroller"

// New returns the ReplicationController controller.
func New(c *client.Client, inf *framework.Informers, rec *record.Recorder, clk clock.Clock, log *slog.Logger) *replicaset.Controller[corev1.ReplicationController] {
	return replicaset.NewController(replicaset.Kind[corev1.ReplicationController]{
		Name: Name, APIVersion: "v1", Kind: "ReplicationController",
		Informer: inf.ReplicationControllers, API: c.ReplicationControllers(),
		Workload: func(rc *corev1.ReplicationController) (replicaset.Workload, error) {
			if len(rc.Spec.Selector) == 0 || rc.Spec.Template == nil {
				return replicaset.Workload{}, errors.New("replicationcontroller has no selector or template")
			}
			replicas := int32(1)
			if rc.Spec.Replicas != nil {
				replicas = *rc.Spec.Replicas
			}
			return replicaset.Workload{Meta: rc, Replicas: replicas, Selector: labels.SelectorFromSet(rc.Spec.Selector),
				TemplateLabels: rc.Spec.Template.Labels, MinReadySeconds: rc.Spec.MinReadySeconds, Generation: rc.Generation,
				ReplicaFailure: replicaFailure(rc.Status.Conditions)}, nil
		},
		Template:  func(rc *corev1.ReplicationController) *corev1.PodTemplateSpec { return rc.Spec.Template },
		SetStatus: setStatus,
	}, c, inf, rec, clk, log)
}

// setStatus returns a copy of rc with st, and whether that changed
// anything.
func setStatus(rc *corev1.ReplicationController, st replicaset.Status) (*corev1.ReplicationController, bool) {
	s := rc.Status
	sameFailure := replicaset.EqualReplicaFailures(replicaFailure(s.Conditions), st.ReplicaFailure)
	if s.Replicas == st.Replicas && s.FullyLabeledReplicas == st.FullyLabeledReplicas && s.ReadyReplicas == st.ReadyReplicas &&
		s.AvailableReplicas == st.AvailableReplicas && s.ObservedGeneration == st.ObservedGeneration && sameFailure {
		return rc, false
	}
	cp := rc.DeepCopy()
	cp.Status.Replicas, cp.Status.FullyLabeledReplicas, cp.Status.ReadyReplicas = st.Replicas, st.FullyLabeledReplicas, st.ReadyReplicas
	cp.Status.AvailableReplicas, cp.Status.ObservedGeneration = st.AvailableReplicas, st.ObservedGeneration
	cp.Status.Conditions = slices.DeleteFunc(cp.Status.Conditions, func(c corev1.ReplicationControllerCondition) bool {
		return c.Type == corev1.ReplicationControllerReplicaFailure
	})
	if f := st.ReplicaFailure; f != nil {
		cp.Status.Conditions = append(cp.Status.Conditions, corev1.ReplicationControllerCondition{Type: corev1.ReplicationControllerReplicaFailure,
			Status: corev1.ConditionTrue, LastTransitionTime: f.LastTransitionTime, Reason: f.Reason, Message: f.Message})
	}
	return cp, true
}

// replicaFailure returns a ReplicationController's ReplicaFailure
// condition, if True.
func replicaFailure(conds []corev1.ReplicationControllerCondition) *replicaset.ReplicaFailure {
	for _, c := range conds {
		if c.Type == corev1.ReplicationControllerReplicaFailure && c.Status == corev1.ConditionTrue {
			return &replicaset.ReplicaFailure{Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime}
		}
	}
	return nil
}
