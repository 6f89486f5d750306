package kubelet_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/internal/testcluster"
	"minik/kubelet"
	"minik/kubelet/runtime/fake"
)

// brokenNetwork is the fake runtime with a pod network that fails while
// broken is set, as the containerd runtime's UpdatePodCIDR fails when no
// pod can get a network.
type brokenNetwork struct {
	*fake.Runtime
	broken atomic.Bool
}

func (b *brokenNetwork) UpdatePodCIDR(ctx context.Context, cidr string) error {
	if b.broken.Load() {
		return errors.New("bridge mkdeadbeef holds 10.244.7.1/24, not the gateway of the pod range 10.244.1.0/24")
	}
	return b.Runtime.UpdatePodCIDR(ctx, cidr)
}

// TestNodeIsNotReadyWhileItsPodNetworkIsBroken: a node whose runtime
// cannot give pods a network reports Ready=False with the runtime's
// reason, and Ready again once the network is fixed.
func TestNodeIsNotReadyWhileItsPodNetworkIsBroken(t *testing.T) {
	if testing.Short() {
		t.Skip("starts minik up; skipped with -short")
	}
	c := testcluster.Start(t)
	const node = "broken-net"
	rt := &brokenNetwork{Runtime: fake.New(fake.Config{Images: []string{"busybox"}})}
	rt.broken.Store(true)
	startHollowKubelet(t, c, kubelet.Config{NodeName: node, Runtime: rt, PodCIDR: "10.244.1.0/24"})
	cs := c.Clientset()
	ready := func() *corev1.NodeCondition {
		n, err := cs.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == corev1.NodeReady {
				return &n.Status.Conditions[i]
			}
		}
		return nil
	}
	waitUntil(t, 20*time.Second, func() bool { r := ready(); return r != nil })
	r := ready()
	if r.Status != corev1.ConditionFalse || r.Reason != "KubeletNotReady" ||
		!strings.Contains(r.Message, "NetworkReady=false") || !strings.Contains(r.Message, "not the gateway of the pod range") {
		t.Fatalf("Ready = %+v, want False with the network's reason", r)
	}
	// The node controller taints a NotReady node; after that nothing
	// changes the Node, and only the kubelet's own status pass can see the
	// network repaired (it once re-checked only on a Node seen or written).
	waitUntil(t, 20*time.Second, func() bool {
		n, err := cs.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == corev1.TaintNodeNotReady {
				return true
			}
		}
		return false
	})
	time.Sleep(time.Second) // the taint's watch event reaches the kubelet
	rt.broken.Store(false)
	// The next status pass (every 10s) checks the network again.
	waitUntil(t, 20*time.Second, func() bool { r := ready(); return r != nil && r.Status == corev1.ConditionTrue })
}
