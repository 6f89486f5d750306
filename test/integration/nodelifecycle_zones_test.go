package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"minik/controller"
	"minik/internal/testcluster"
)

// zonedNode registers node name in zone, Ready or not, and renews its
// Lease until the test ends, as a kubelet that reports its readiness.
func zonedNode(t *testing.T, ctx context.Context, cs kubernetes.Interface, name, zone string, ready bool) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelTopologyZone: zone}}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	updateNode(t, ctx, cs, name, true, func(n *corev1.Node) {
		n.Status.Capacity = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}
		n.Status.Allocatable = n.Status.Capacity
	})
	setNodeReady(t, ctx, cs, name, ready)
	renewLease(t, ctx, cs, name)
}

// setNodeReady posts node name's Ready condition, as its kubelet would.
func setNodeReady(t *testing.T, ctx context.Context, cs kubernetes.Interface, name string, ready bool) {
	t.Helper()
	st, reason := corev1.ConditionFalse, "KubeletNotReady"
	if ready {
		st, reason = corev1.ConditionTrue, "KubeletReady"
	}
	updateNode(t, ctx, cs, name, true, func(n *corev1.Node) {
		now := metav1.Now()
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st, Reason: reason, LastHeartbeatTime: now, LastTransitionTime: now}}
	})
}

// TestNodeLifecycleZoneEvictionRateLimiting checks the zone-aware rate
// limiting of NoExecute taints: zone a has all its nodes NotReady
// (FullDisruption, tainted at --node-eviction-rate since zone b is not
// fully down), zone b has 3 of 4 NotReady (PartialDisruption in a small
// cluster: never tainted); once every node is NotReady, no NoExecute taint
// is left anywhere; once one node is Ready again, zone a is tainted again.
func TestNodeLifecycleZoneEvictionRateLimiting(t *testing.T) {
	c := testcluster.StartAPIOnly(t)
	cs := c.Clientset()
	ctx := ctxT(t)
	zonedNode(t, ctx, cs, "a1", "a", false)
	zonedNode(t, ctx, cs, "a2", "a", false)
	zonedNode(t, ctx, cs, "b1", "b", true)
	for _, n := range []string{"b2", "b3", "b4"} {
		zonedNode(t, ctx, cs, n, "b", false)
	}
	const interval = 4 * time.Second
	startController(t, c, controller.Config{NodeMonitorPeriod: 200 * time.Millisecond, Eviction: evictionAtRate(0.25)})

	noExecute := func(name string) bool {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err == nil && hasTaint(n, corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)
	}
	partialZoneUntainted := func() {
		t.Helper()
		for _, n := range []string{"b1", "b2", "b3", "b4"} {
			if noExecute(n) {
				t.Fatalf("node %s of the partially disrupted zone b got a NoExecute taint", n)
			}
		}
	}
	// taintTimes waits until a1 and a2 are tainted and returns when each
	// was first seen tainted.
	taintTimes := func(timeout time.Duration) map[string]time.Time {
		t.Helper()
		seen := map[string]time.Time{}
		eventually(t, timeout, "a1 and a2 tainted NoExecute", func() (bool, string) {
			for _, n := range []string{"a1", "a2"} {
				if _, ok := seen[n]; !ok && noExecute(n) {
					seen[n] = time.Now()
				}
			}
			partialZoneUntainted()
			return len(seen) == 2, fmt.Sprint(seen)
		})
		return seen
	}
	gap := func(seen map[string]time.Time) time.Duration {
		d := seen["a1"].Sub(seen["a2"])
		if d < 0 {
			d = -d
		}
		return d
	}

	t.Run("the fully disrupted zone is tainted one node per 1/rate, the small partially disrupted one not at all", func(t *testing.T) {
		seen := taintTimes(20 * time.Second)
		if g := gap(seen); g < interval-time.Second {
			t.Fatalf("a1 and a2 tainted %v apart, want about %v (rate 0.25/s)", g, interval)
		}
		time.Sleep(2 * time.Second)
		partialZoneUntainted()
	})
	t.Run("with every node NotReady the NoExecute taints come off", func(t *testing.T) {
		setNodeReady(t, ctx, cs, "b1", false)
		eventually(t, 10*time.Second, "no NoExecute taint left", func() (bool, string) {
			return !noExecute("a1") && !noExecute("a2"), "still tainted"
		})
		time.Sleep(2 * interval)
		for _, n := range []string{"a1", "a2", "b1", "b2", "b3", "b4"} {
			if noExecute(n) {
				t.Fatalf("node %s tainted while the whole cluster is down", n)
			}
		}
		b2, _ := cs.CoreV1().Nodes().Get(ctx, "b2", metav1.GetOptions{})
		if !hasTaint(b2, corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule) {
			t.Fatalf("the NoSchedule taint is not rate limited and stays: %+v", b2.Spec.Taints)
		}
	})
	t.Run("once a node is Ready again, the fully disrupted zone is tainted again at the rate", func(t *testing.T) {
		setNodeReady(t, ctx, cs, "b1", true)
		seen := taintTimes(20 * time.Second)
		if g := gap(seen); g < interval-time.Second {
			t.Fatalf("a1 and a2 tainted %v apart, want about %v", g, interval)
		}
	})
}

// TestNodeLifecycleEvictionRateZero runs `minik controller
// --node-eviction-rate 0`, as users do: a not-ready node gets its
// NoSchedule taint, but never the NoExecute taint that would evict its
// pods. (Any other rate taints the first not-ready node of a zone at once:
// its bucket starts with a token.)
func TestNodeLifecycleEvictionRateZero(t *testing.T) {
	c := testcluster.StartAPIOnly(t)
	cs := c.Clientset()
	ctx := ctxT(t)
	zonedNode(t, ctx, cs, "up", "a", true)
	zonedNode(t, ctx, cs, "down", "a", false)
	startMinikProcess(t, c, "controller", "--node-eviction-rate", "0", "--node-monitor-period", "200ms")

	down := func() *corev1.Node {
		n, err := cs.CoreV1().Nodes().Get(ctx, "down", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	eventually(t, 20*time.Second, "the not-ready NoSchedule taint", func() (bool, string) {
		n := down()
		return hasTaint(n, corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule), fmt.Sprint(n.Spec.Taints)
	})
	// The zone is judged every 200ms: 3s gives a wrong rate every chance.
	time.Sleep(3 * time.Second)
	if n := down(); hasTaint(n, corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute) {
		t.Fatalf("a NoExecute taint with --node-eviction-rate 0: %v", n.Spec.Taints)
	}
}
