package kubelet_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"minik/internal/testcluster"
	"minik/kubelet"
	"minik/kubelet/eviction"
	"minik/kubelet/runtime"
	"minik/kubelet/runtime/fake"
	"minik/proto/cri"
)

const gib = int64(1) << 30

// diskHog is the stats of a node with a 100Gi filesystem, 60Gi of it
// free when empty. A running container of a pod named "hog" fills 55Gi
// with its emptyDir; other pods use 10Mi; Outside is used by something
// that is not a pod.
type diskHog struct {
	rt      *fake.Runtime
	Outside atomic.Int64
}

func (d *diskHog) Summary(ctx context.Context, _ bool) (*eviction.Summary, error) {
	s := &eviction.Summary{
		Node: eviction.NodeStats{MemoryCapacityBytes: 8 * gib, MemoryWorkingSetBytes: gib,
			NodeFsCapacityBytes: 100 * gib, NodeFsAvailableBytes: 60*gib - d.Outside.Load(),
			NodeFsInodes: 1000000, NodeFsInodesFree: 900000, MaxPID: 32768, RunningProcesses: 100},
		Pods: map[types.UID]eviction.PodStats{},
	}
	sbs, err := d.rt.ListPodSandbox(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, sb := range sbs {
		s.Pods[types.UID(sb.Metadata.GetUid())] = eviction.PodStats{}
	}
	cs, err := d.rt.ListContainers(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		if c.State != cri.ContainerState_CONTAINER_RUNNING {
			continue
		}
		used := int64(10 << 20)
		if c.Labels[runtime.LabelPodName] == "hog" {
			used = 55 * gib
		}
		s.Node.NodeFsAvailableBytes -= used
		s.Pods[types.UID(c.Labels[runtime.LabelPodUID])] = eviction.PodStats{VolumeBytes: used}
	}
	return s, nil
}

// TestHollowNodeEviction drives disk pressure with fake stats: the kubelet
// reports DiskPressure, evicts the pod using most disk (and only it while
// that relieves the pressure), rejects new pods while the pressure lasts,
// and clears the condition after the transition period.
func TestHollowNodeEviction(t *testing.T) {
	if testing.Short() {
		t.Skip("starts minik up; skipped with -short")
	}
	c := testcluster.Start(t)
	const node = "hollow-evict"
	rt := fake.New(fake.Config{Images: []string{"busybox"}})
	stats := &diskHog{rt: rt}
	startHollowKubelet(t, c, kubelet.Config{NodeName: node, Runtime: rt, Stats: stats,
		EvictionMonitoringInterval: 100 * time.Millisecond, EvictionPressureTransitionPeriod: 3 * time.Second})
	cs := c.Clientset()
	bg := context.Background()

	waitDiskPressure(t, cs, node, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure")
	createPod(t, cs, "quiet", node)
	waitPod(t, cs, "quiet", "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })

	t.Run("the pod filling the disk is evicted, and only it", func(t *testing.T) {
		createPod(t, cs, "hog", node)
		waitDiskPressure(t, cs, node, corev1.ConditionTrue, "KubeletHasDiskPressure", "kubelet has disk pressure")
		hog := waitPod(t, cs, "hog", "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		// 10% of 100Gi as the kubelet computes it, through a float32.
		wantMsg := "The node was low on resource: ephemeral-storage. Threshold quantity: 10737418400, available: 5110Mi. " // 60Gi - 55Gi - 10Mi
		if hog.Status.Reason != "Evicted" || hog.Status.Message != wantMsg {
			t.Errorf("status reason %q message %q, want Evicted and %q", hog.Status.Reason, hog.Status.Message, wantMsg)
		}
		if !hasCondition(hog, corev1.DisruptionTarget, "TerminationByKubelet") {
			t.Errorf("conditions %+v lack DisruptionTarget/TerminationByKubelet", hog.Status.Conditions)
		}
		waitEvent(t, cs, "Pod", "hog", corev1.EventTypeWarning, "Evicted", wantMsg)
		waitEvent(t, cs, "Node", node, corev1.EventTypeWarning, "EvictionThresholdMet", "Attempting to reclaim ephemeral-storage")
		waitEvent(t, cs, "Node", node, corev1.EventTypeNormal, "NodeHasDiskPressure", "Node "+node+" status is now: NodeHasDiskPressure")
		waitDiskPressure(t, cs, node, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure")
		if q, err := cs.CoreV1().Pods("default").Get(bg, "quiet", metav1.GetOptions{}); err != nil || q.Status.Phase != corev1.PodRunning {
			t.Errorf("pod quiet: %v, phase %s; want it Running: evicting hog relieved the pressure", err, q.Status.Phase)
		}
	})

	t.Run("while the disk stays full, the rest is evicted and new pods are rejected", func(t *testing.T) {
		stats.Outside.Store(55 * gib)
		waitDiskPressure(t, cs, node, corev1.ConditionTrue, "KubeletHasDiskPressure", "kubelet has disk pressure")
		waitPod(t, cs, "quiet", "evicted", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted" })
		createPod(t, cs, "late", node)
		late := waitPod(t, cs, "late", "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		if late.Status.Reason != "Evicted" || late.Status.Message != "The node had condition: [DiskPressure]. " {
			t.Errorf("rejection reason %q message %q", late.Status.Reason, late.Status.Message)
		}
		stats.Outside.Store(0)
		waitDiskPressure(t, cs, node, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure")
	})
}

func createPod(t *testing.T, cs *kubernetes.Clientset, name, node string) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent}}}}
	if _, err := cs.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitPod(t *testing.T, cs *kubernetes.Clientset, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var err error
		if p, err = cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{}); err == nil && cond(p) {
			return p
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("pod %s not %s after 20s: %+v", name, what, p.Status)
	return nil
}

func waitDiskPressure(t *testing.T, cs *kubernetes.Clientset, node string, status corev1.ConditionStatus, reason, message string) {
	t.Helper()
	last := ""
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		n, err := cs.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err == nil {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeDiskPressure {
					if c.Status == status && c.Reason == reason && c.Message == message {
						return
					}
					last = fmt.Sprintf("%s %s %q", c.Status, c.Reason, c.Message)
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("DiskPressure not %s/%s after 20s; last %s", status, reason, last)
}

func hasCondition(p *corev1.Pod, typ corev1.PodConditionType, reason string) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue && c.Reason == reason {
			return true
		}
	}
	return false
}

func waitEvent(t *testing.T, cs *kubernetes.Clientset, kind, name, typ, reason, message string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		list, err := cs.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err == nil {
			for _, ev := range list.Items {
				o := ev.InvolvedObject
				if o.Kind == kind && o.Name == name && ev.Type == typ && ev.Reason == reason && ev.Message == message {
					return
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("no %s event %s %q about %s %s", typ, reason, message, kind, name)
}
