package replication

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/controller/internal/testutil"
)

func TestStatusConvertsToAReplicaSetsAndBack(t *testing.T) {
	rc := corev1.ReplicationControllerStatus{Replicas: 3, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 1, ObservedGeneration: 4,
		Conditions: []corev1.ReplicationControllerCondition{{Type: corev1.ReplicationControllerReplicaFailure, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(testutil.T0), Reason: "FailedCreate", Message: `pods "web-x" is forbidden`}}}
	rs := toReplicaSetStatus(rc)
	want := appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 1, ObservedGeneration: 4,
		Conditions: []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(testutil.T0), Reason: "FailedCreate", Message: `pods "web-x" is forbidden`}}}
	if !apiequality.Semantic.DeepEqual(rs, want) {
		t.Fatalf("as a ReplicaSet's: %+v, want %+v", rs, want)
	}
	if back := fromReplicaSetStatus(rs); !apiequality.Semantic.DeepEqual(back, rc) {
		t.Fatalf("back: %+v, want %+v", back, rc)
	}
}
