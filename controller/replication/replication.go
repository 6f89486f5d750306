// Package replication is the ReplicationController controller: the
// ReplicaSet controller's step and driver, adapted to the older kind,
// whose selector is a plain map and whose template may be nil.
package replication

import (
	"errors"
	"log/slog"

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
		SetStatus: func(rc *corev1.ReplicationController, st replicaset.Status) (*corev1.ReplicationController, bool) {
			s := rc.Status
			if s.Replicas == st.Replicas && s.FullyLabeledReplicas == st.FullyLabeledReplicas && s.ReadyReplicas == st.ReadyReplicas &&
				s.AvailableReplicas == st.AvailableReplicas && s.ObservedGeneration == st.ObservedGeneration {
				return rc, false
			}
			cp := rc.DeepCopy()
			cp.Status.Replicas, cp.Status.FullyLabeledReplicas, cp.Status.ReadyReplicas = st.Replicas, st.FullyLabeledReplicas, st.ReadyReplicas
			cp.Status.AvailableReplicas, cp.Status.ObservedGeneration = st.AvailableReplicas, st.ObservedGeneration
			return cp, true
		},
	}, c, inf, rec, clk, log)
}
