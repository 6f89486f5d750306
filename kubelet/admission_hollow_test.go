package kubelet_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/internal/testcluster"
	"minik/kubelet"
	"minik/kubelet/runtime/fake"
)

// gate holds callers while it is shut, and counts those it holds.
type gate struct {
	mu      sync.Mutex
	ch      chan struct{}
	waiting atomic.Int32
}

func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
}

func (g *gate) pass(ctx context.Context) {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	if ch == nil {
		return
	}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

// gatedRuntime is the fake runtime with gates that hold the kubelet at
// one step of a pod's termination: stopping its containers, or removing
// its sandbox (after the kubelet has deleted the pod from the API).
type gatedRuntime struct {
	*fake.Runtime
	stop, remove gate
}

func (r *gatedRuntime) StopContainer(ctx context.Context, id string, grace int64) error {
	r.stop.pass(ctx)
	return r.Runtime.StopContainer(ctx, id, grace)
}

func (r *gatedRuntime) RemovePodSandbox(ctx context.Context, id string) error {
	r.remove.pass(ctx)
	return r.Runtime.RemovePodSandbox(ctx, id)
}

// TestHollowNodeAdmissionCountsTerminatingPods replays the seeds'
// preemption example on a hollow node: a pod that asks for all of the
// node's CPU is deleted (its preemption) and another asking the same
// lands on the node. While the victim's containers still stop, the node
// is full; once the kubelet has stopped them and deleted the victim from
// the API (when the scheduler binds the preemptor), it is not, even if
// the kubelet still removes the victim's sandbox.
func TestHollowNodeAdmissionCountsTerminatingPods(t *testing.T) {
	if testing.Short() {
		t.Skip("starts minik up; skipped with -short")
	}
	c := testcluster.Start(t)
	const node = "hollow-admit"
	rt := &gatedRuntime{Runtime: fake.New(fake.Config{Images: []string{"busybox"}})}
	startHollowKubelet(t, c, kubelet.Config{NodeName: node, Runtime: rt})
	// Cleanups run last first: the gates open before the kubelet stops.
	t.Cleanup(func() { rt.stop.open(); rt.remove.open() })
	cs := c.Clientset()
	bg := context.Background()

	n, err := cs.CoreV1().Nodes().Get(bg, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	allCPU := n.Status.Allocatable.Cpu().DeepCopy()
	create := func(t *testing.T, name string) {
		t.Helper()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "busybox",
				ImagePullPolicy: corev1.PullIfNotPresent,
				Resources:       corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: allCPU}}}}}}
		if _, err := cs.CoreV1().Pods("default").Create(bg, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	phase := func(name string) (corev1.PodPhase, string) {
		p, err := cs.CoreV1().Pods("default").Get(bg, name, metav1.GetOptions{})
		if err != nil {
			return "", err.Error()
		}
		return p.Status.Phase, p.Status.Reason
	}
	waitPhase := func(t *testing.T, name string, want corev1.PodPhase, reason string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			ph, r := phase(name)
			if ph == want && r == reason {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("pod %s: phase %q reason %q, want %q %q", name, ph, r, want, reason)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	gone := func(t *testing.T, name string) {
		t.Helper()
		waitUntil(t, 20*time.Second, func() bool {
			_, err := cs.CoreV1().Pods("default").Get(bg, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
	}
	if allCPU.Cmp(resource.MustParse("1")) < 0 {
		t.Fatalf("node allocatable cpu %s", allCPU.String())
	}

	t.Run("a pod whose containers are still stopping keeps its CPU", func(t *testing.T) {
		create(t, "victim-1")
		waitPhase(t, "victim-1", corev1.PodRunning, "")
		rt.stop.shut()
		if err := cs.CoreV1().Pods("default").Delete(bg, "victim-1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 10*time.Second, func() bool { return rt.stop.waiting.Load() > 0 })
		create(t, "too-early")
		waitPhase(t, "too-early", corev1.PodFailed, "OutOfcpu")
		rt.stop.open()
		gone(t, "victim-1")
	})

	t.Run("a pod the kubelet stopped and deleted from the API no longer counts", func(t *testing.T) {
		create(t, "victim-2")
		waitPhase(t, "victim-2", corev1.PodRunning, "")
		// The kubelet deletes the pod from the API, then removes its
		// sandbox: hold it there, where the scheduler binds the preemptor.
		rt.remove.shut()
		if err := cs.CoreV1().Pods("default").Delete(bg, "victim-2", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		gone(t, "victim-2")
		if rt.remove.waiting.Load() == 0 {
			waitUntil(t, 10*time.Second, func() bool { return rt.remove.waiting.Load() > 0 })
		}
		create(t, "preemptor")
		waitPhase(t, "preemptor", corev1.PodRunning, "")
		rt.remove.open()
	})
}
