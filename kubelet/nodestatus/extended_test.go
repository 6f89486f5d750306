package nodestatus

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"

	"minik/kubelet/runtime/fake"
)

// The kubelet owns only the resources it measures: an extended resource
// someone else advertised in the Node's status (a device plugin, an
// admin's patch, upstream's e2e suite) stays in capacity and allocatable
// across the kubelet's status updates, as upstream's kubelet keeps it.
// Dropping it made the scheduler preempt on the wrong node.
func TestExtendedResourcesOthersAdvertiseAreKept(t *testing.T) {
	m := New(Config{NodeName: "n1", MaxPods: 110, RootDir: t.TempDir(), Runtime: fake.New(fake.Config{}),
		Pressure: func() []corev1.NodeConditionType { return nil }, Clock: clocktesting.NewFakeClock(time.Now())})
	foo := resource.MustParse("5")
	old := corev1.NodeStatus{
		Capacity:    corev1.ResourceList{"example.com/foo": foo, corev1.ResourceCPU: resource.MustParse("64"), "kubernetes.io/bogus": foo},
		Allocatable: corev1.ResourceList{"example.com/foo": foo},
	}
	s := m.nodeStatus(context.Background(), old)
	for _, l := range []corev1.ResourceList{s.Capacity, s.Allocatable} {
		if q, ok := l["example.com/foo"]; !ok || !q.Equal(foo) {
			t.Errorf("example.com/foo: %v (present %v), want 5", q.String(), ok)
		}
		if _, ok := l["kubernetes.io/bogus"]; ok {
			t.Error("a kubernetes.io/ resource the kubelet does not measure was kept")
		}
		if cpu := l[corev1.ResourceCPU]; cpu.Value() == 64 {
			t.Error("the kubelet kept an old cpu capacity instead of measuring it")
		}
	}
}
