// Package replication is the ReplicationController controller: the
// ReplicaSet controller's step and driver, adapted to the older kind,
// whose selector is a plain map and whose template may be nil.
package replication

import (
	"errors"
	"log/slog"

	appsv1 "k8s.io/api/apps/v1"
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
				TemplateLabels: rc.Spec.Template.Labels, MinReadySeconds: rc.Spec.MinReadySeconds, Generation: rc.Generation}, nil
		},
		Template: func(rc *corev1.ReplicationController) *corev1.PodTemplateSpec { return rc.Spec.Template },
		Status:   func(rc *corev1.ReplicationController) appsv1.ReplicaSetStatus { return toReplicaSetStatus(rc.Status) },
		WithStatus: func(rc *corev1.ReplicationController, st appsv1.ReplicaSetStatus) *corev1.ReplicationController {
			cp := rc.DeepCopy()
			cp.Status = fromReplicaSetStatus(st)
			return cp
		},
	}, c, inf, rec, clk, log)
}

// toReplicaSetStatus converts a ReplicationController's status to a
// ReplicaSet's, which has the same fields (as Kubernetes' replication
// manager converts ReplicationControllers to run the ReplicaSet code).
func toReplicaSetStatus(s corev1.ReplicationControllerStatus) appsv1.ReplicaSetStatus {
	out := appsv1.ReplicaSetStatus{Replicas: s.Replicas, FullyLabeledReplicas: s.FullyLabeledReplicas, ReadyReplicas: s.ReadyReplicas,
		AvailableReplicas: s.AvailableReplicas, ObservedGeneration: s.ObservedGeneration}
	for _, c := range s.Conditions {
		out.Conditions = append(out.Conditions, appsv1.ReplicaSetCondition{Type: appsv1.ReplicaSetConditionType(c.Type),
			Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message})
	}
	return out
}

// fromReplicaSetStatus is the inverse of toReplicaSetStatus.
func fromReplicaSetStatus(s appsv1.ReplicaSetStatus) corev1.ReplicationControllerStatus {
	out := corev1.ReplicationControllerStatus{Replicas: s.Replicas, FullyLabeledReplicas: s.FullyLabeledReplicas, ReadyReplicas: s.ReadyReplicas,
		AvailableReplicas: s.AvailableReplicas, ObservedGeneration: s.ObservedGeneration}
	for _, c := range s.Conditions {
		out.Conditions = append(out.Conditions, corev1.ReplicationControllerCondition{Type: corev1.ReplicationControllerConditionType(c.Type),
			Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message})
	}
	return out
}
