package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"minik/controller"
)

// fakeNode registers node name as a kubelet would: the Node with Ready,
// then a Lease in kube-node-lease, renewed until stop is called (the node
// goes silent) or the test ends.
func fakeNode(t *testing.T, ctx context.Context, cs kubernetes.Interface, name string) (stop func()) {
	t.Helper()
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	updateNode(t, ctx, cs, name, true, func(n *corev1.Node) {
		now := metav1.Now()
		n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
			corev1.ResourcePods: resource.MustParse("110")}
		n.Status.Allocatable = n.Status.Capacity
		n.Status.Conditions = []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: now, LastTransitionTime: now},
		}
	})
	return renewLease(t, ctx, cs, name)
}

// updateNode applies change to the latest node (its status if status),
// retrying on conflicts with the controllers.
func updateNode(t *testing.T, ctx context.Context, cs kubernetes.Interface, name string, status bool, change func(*corev1.Node)) {
	t.Helper()
	for range 20 {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		change(n)
		if status {
			_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		} else {
			_, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		}
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
	}
	t.Fatalf("node %s: too many conflicts", name)
}

func bindPod(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns string, pod *corev1.Pod, node string) *corev1.Pod {
	t.Helper()
	p, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, _ = cs.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
	setRunningReady(ctx, cs, p)
	return p
}

func hasTaint(n *corev1.Node, key string, effect corev1.TaintEffect) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}

func nodeCondition(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func podGone(ctx context.Context, cs kubernetes.Interface, ns, name string) (bool, string) {
	p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, ""
	}
	if err != nil {
		return false, err.Error()
	}
	return p.DeletionTimestamp != nil, fmt.Sprintf("pod %s still running", name)
}

func tolerate(key string, seconds int64) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds}
}

func TestControllerNodeLifecycleAndTaintEviction(t *testing.T) {
	// A high eviction rate: this test is about the taints, not their pace
	// (see TestNodeLifecycleZoneEvictionRateLimiting).
	_, cs, ctx := startWithController(t, controller.Config{NodeMonitorGracePeriod: 2 * time.Second, NodeMonitorPeriod: 200 * time.Millisecond, Eviction: evictionAtRate(10)})
	ns := "default"
	fakeNode(t, ctx, cs, "node-a")
	stopB := fakeNode(t, ctx, cs, "node-b")

	t.Run("node IPAM gives each node a 10.244.N.0/24 podCIDR", func(t *testing.T) {
		eventually(t, 10*time.Second, "podCIDRs", func() (bool, string) {
			a, _ := cs.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
			b, _ := cs.CoreV1().Nodes().Get(ctx, "node-b", metav1.GetOptions{})
			got := map[string]bool{a.Spec.PodCIDR: true, b.Spec.PodCIDR: true}
			return got["10.244.0.0/24"] && got["10.244.1.0/24"] && len(b.Spec.PodCIDRs) == 1, fmt.Sprintf("%q %q", a.Spec.PodCIDR, b.Spec.PodCIDR)
		})
	})

	// A third node that stays Ready: with every node down, the cluster
	// would look fully disrupted and get no NoExecute taint at all.
	fakeNode(t, ctx, cs, "node-c")

	short := makePod("short", nil)
	short.Spec.Tolerations = []corev1.Toleration{tolerate(corev1.TaintNodeUnreachable, 1)}
	short = bindPod(t, ctx, cs, ns, short, "node-b")
	long := bindPod(t, ctx, cs, ns, makePod("long", nil), "node-b") // gets the default 300s tolerations
	healthy := bindPod(t, ctx, cs, ns, makePod("healthy", nil), "node-a")

	t.Run("a node whose lease stops being renewed goes Unknown and gets the unreachable taints", func(t *testing.T) {
		stopB()
		eventually(t, 15*time.Second, "node-b Unknown and tainted", func() (bool, string) {
			b, _ := cs.CoreV1().Nodes().Get(ctx, "node-b", metav1.GetOptions{})
			r := nodeCondition(b, corev1.NodeReady)
			return r.Status == corev1.ConditionUnknown && r.Reason == "NodeStatusUnknown" &&
					nodeCondition(b, corev1.NodeMemoryPressure).Status == corev1.ConditionUnknown &&
					hasTaint(b, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) && hasTaint(b, corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule),
				fmt.Sprintf("conditions %+v taints %+v", b.Status.Conditions, b.Spec.Taints)
		})
		a, _ := cs.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		if nodeCondition(a, corev1.NodeReady).Status != corev1.ConditionTrue || len(a.Spec.Taints) != 0 {
			t.Fatalf("healthy node-a changed: %+v %+v", a.Status.Conditions, a.Spec.Taints)
		}
	})
	t.Run("pods on the unreachable node are marked not ready", func(t *testing.T) {
		eventually(t, 10*time.Second, "long not ready", func() (bool, string) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, long.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return !podReady(p), "still ready"
		})
	})
	t.Run("a pod tolerating unreachable for 1s is evicted, one with the default 300s is not", func(t *testing.T) {
		eventually(t, 10*time.Second, "short evicted", func() (bool, string) { return podGone(ctx, cs, ns, short.Name) })
		p, err := cs.CoreV1().Pods(ns).Get(ctx, long.Name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil {
			t.Fatalf("long was evicted: %v", err)
		}
		evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=TaintManagerEviction"})
		if err != nil || len(evs.Items) == 0 {
			eventually(t, 15*time.Second, "a TaintManagerEviction event", func() (bool, string) {
				evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, err.Error()
				}
				for _, e := range evs.Items {
					if e.Reason == "TaintManagerEviction" && e.InvolvedObject.Name == short.Name {
						return true, ""
					}
				}
				return false, fmt.Sprintf("%d events", len(evs.Items))
			})
		}
	})
	t.Run("a kubelet reporting NotReady and MemoryPressure gets not-ready and memory-pressure taints", func(t *testing.T) {
		updateNode(t, ctx, cs, "node-a", true, func(a *corev1.Node) {
			now := metav1.Now()
			for i := range a.Status.Conditions {
				cond := &a.Status.Conditions[i]
				cond.LastHeartbeatTime, cond.LastTransitionTime = now, now
				switch cond.Type {
				case corev1.NodeReady:
					cond.Status, cond.Reason = corev1.ConditionFalse, "KubeletNotReady"
				case corev1.NodeMemoryPressure:
					cond.Status = corev1.ConditionTrue
				}
			}
		})
		eventually(t, 10*time.Second, "node-a tainted", func() (bool, string) {
			a, _ := cs.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
			return hasTaint(a, corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute) && hasTaint(a, corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule) &&
				!hasTaint(a, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute), fmt.Sprintf("%+v", a.Spec.Taints)
		})
		// Ready again: the taints go, and the healthy pod (300s toleration) stayed.
		updateNode(t, ctx, cs, "node-a", true, func(a *corev1.Node) {
			for i := range a.Status.Conditions {
				a.Status.Conditions[i].Status = corev1.ConditionFalse
				if a.Status.Conditions[i].Type == corev1.NodeReady {
					a.Status.Conditions[i].Status, a.Status.Conditions[i].Reason = corev1.ConditionTrue, "KubeletReady"
				}
			}
		})
		eventually(t, 10*time.Second, "node-a untainted", func() (bool, string) {
			a, _ := cs.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
			return len(a.Spec.Taints) == 0, fmt.Sprintf("%+v %+v", a.Spec.Taints, a.Status.Conditions)
		})
		if gone, _ := podGone(ctx, cs, ns, healthy.Name); gone {
			t.Fatal("pod with the default toleration was evicted")
		}
	})
	t.Run("a NoExecute taint evicts intolerant pods at once and a removal in time cancels a countdown", func(t *testing.T) {
		tolerant := makePod("tolerant", nil)
		tolerant.Spec.Tolerations = []corev1.Toleration{tolerate("example.com/maint", 3)}
		tolerant = bindPod(t, ctx, cs, ns, tolerant, "node-a")
		intolerant := bindPod(t, ctx, cs, ns, makePod("intolerant", nil), "node-a")
		updateNode(t, ctx, cs, "node-a", false, func(a *corev1.Node) {
			a.Spec.Taints = append(a.Spec.Taints, corev1.Taint{Key: "example.com/maint", Effect: corev1.TaintEffectNoExecute})
		})
		eventually(t, 5*time.Second, "intolerant evicted", func() (bool, string) { return podGone(ctx, cs, ns, intolerant.Name) })
		updateNode(t, ctx, cs, "node-a", false, func(a *corev1.Node) {
			var kept []corev1.Taint
			for _, tt := range a.Spec.Taints {
				if tt.Key != "example.com/maint" {
					kept = append(kept, tt)
				}
			}
			a.Spec.Taints = kept
		})
		time.Sleep(4 * time.Second)
		if gone, _ := podGone(ctx, cs, ns, tolerant.Name); gone {
			t.Fatal("the countdown was not cancelled when the taint went away")
		}
	})
}

// TestControllerWithSchedulerReplacesPodsOfALostNode runs the controller
// with minik's scheduler: when a node stops renewing its Lease, its pods
// are evicted once their (shortened) toleration runs out, and the
// Deployment's replacements are scheduled on the node that is left.
func TestControllerWithSchedulerReplacesPodsOfALostNode(t *testing.T) {
	c, cs, ctx := startWithController(t, controller.Config{NodeMonitorGracePeriod: 2 * time.Second, NodeMonitorPeriod: 200 * time.Millisecond})
	runSchedulerInProcess(t, c)
	ns := "default"
	fakeKubelet(t, cs, ns)
	fakeNode(t, ctx, cs, "n1")
	stopN2 := fakeNode(t, ctx, cs, "n2")

	d := makeDeployment("web", 4, "busybox")
	d.Spec.Template.Spec.Tolerations = []corev1.Toleration{tolerate(corev1.TaintNodeUnreachable, 2), tolerate(corev1.TaintNodeNotReady, 2)}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	onNode := func() map[string]int {
		_, pods := countPods(ctx, cs, ns, "app=web")
		m := map[string]int{}
		for _, p := range pods {
			if podReady(&p) {
				m[p.Spec.NodeName]++
			}
		}
		return m
	}
	t.Run("the scheduler places all 4 replicas on the two nodes", func(t *testing.T) {
		eventually(t, 30*time.Second, "4 ready pods on n1 and n2", func() (bool, string) {
			m := onNode()
			// Both nodes are empty and alike: spreading puts pods on each.
			return m["n1"]+m["n2"] == 4 && m["n2"] > 0 && m[""] == 0, fmt.Sprint(m)
		})
	})
	t.Run("after n2 goes silent its pods are evicted and replaced on n1", func(t *testing.T) {
		stopN2()
		eventually(t, 30*time.Second, "4 ready pods, all on n1", func() (bool, string) {
			m := onNode()
			return m["n1"] == 4 && m["n2"] == 0, fmt.Sprint(m)
		})
		// The recorder writes events asynchronously.
		eventually(t, 15*time.Second, "a TaintManagerEviction event", func() (bool, string) {
			evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, e := range evs.Items {
				if e.Reason == "TaintManagerEviction" {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d events", len(evs.Items))
		})
	})
}
