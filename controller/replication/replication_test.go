package replication

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/controller/internal/testutil"
	"minik/controller/replicaset"
)

func TestStatusCarriesReplicaFailure(t *testing.T) {
	rc := &corev1.ReplicationController{Status: corev1.ReplicationControllerStatus{Replicas: 1}}
	failure := &replicaset.ReplicaFailure{Reason: replicaset.ReasonFailedCreate, Message: `pods "web-x" is forbidden`, LastTransitionTime: metav1.NewTime(testutil.T0)}
	set, changed := setStatus(rc, replicaset.Status{Replicas: 1, ReplicaFailure: failure})
	if !changed || len(set.Status.Conditions) != 1 {
		t.Fatalf("changed %v conditions %+v", changed, set.Status.Conditions)
	}
	c := set.Status.Conditions[0]
	if c.Type != corev1.ReplicationControllerReplicaFailure || c.Status != corev1.ConditionTrue || c.Reason != "FailedCreate" || c.Message != failure.Message {
		t.Fatalf("condition %+v", c)
	}
	if got := replicaFailure(set.Status.Conditions); !replicaset.EqualReplicaFailures(got, failure) {
		t.Fatalf("read back %+v", got)
	}
	if _, changed := setStatus(set, replicaset.Status{Replicas: 1, ReplicaFailure: failure}); changed {
		t.Fatal("an unchanged condition must not cause a write")
	}
	if cleared, changed := setStatus(set, replicaset.Status{Replicas: 1}); !changed || len(cleared.Status.Conditions) != 0 {
		t.Fatalf("not cleared: %+v", cleared.Status.Conditions)
	}
}
