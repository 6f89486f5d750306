package kubelet_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"minik/internal/testcluster"
	"minik/kubelet"
	"minik/kubelet/runtime"
	"minik/kubelet/runtime/fake"
	"minik/proto/cri"
)

// TestEventedPLEG: a container's exit behind the kubelet's back wakes its
// pod at once through the runtime's events; a lost event is caught by a
// relist (the periodic one, or the one after a resubscription); a runtime
// without events is relisted every FallbackRelistPeriod.
func TestEventedPLEG(t *testing.T) {
	if testing.Short() {
		t.Skip("starts minik up; skipped with -short")
	}
	c := testcluster.Start(t)
	cs := c.Clientset()
	// A relist period no test waits for: only events (and the relists
	// at a stream's break and resubscription) can see a change.
	const never = time.Hour
	newNode := func(name string, cfg kubelet.Config) *fake.Runtime {
		rt := fake.New(fake.Config{Images: []string{"busybox"}})
		cfg.NodeName, cfg.Runtime = name, rt
		startHollowKubelet(t, c, cfg)
		return rt
	}

	t.Run("an exit restarts the container at once, through the event stream", func(t *testing.T) {
		rt := newNode("pleg-events", kubelet.Config{RelistPeriod: never, FallbackRelistPeriod: never})
		id := runPod(t, cs, rt, "pleg-events", "ev")
		start := time.Now()
		if err := rt.Exit(id, 1); err != nil {
			t.Fatal(err)
		}
		waitRestarts(t, cs, "ev", 1, 10*time.Second)
		t.Logf("restart seen after %v", time.Since(start))
	})

	t.Run("a lost exit event is caught by the periodic relist", func(t *testing.T) {
		const period = 2 * time.Second
		rt := newNode("pleg-relist", kubelet.Config{RelistPeriod: period})
		id := runPod(t, cs, rt, "pleg-relist", "lost")
		rt.DropEvents(1)
		if err := rt.Exit(id, 1); err != nil {
			t.Fatal(err)
		}
		waitRestarts(t, cs, "lost", 1, period+10*time.Second)
	})

	t.Run("a lost exit event is caught by the relist after the stream breaks and is back", func(t *testing.T) {
		rt := newNode("pleg-resub", kubelet.Config{RelistPeriod: never, FallbackRelistPeriod: never})
		id := runPod(t, cs, rt, "pleg-resub", "resub")
		rt.DropEvents(1)
		if err := rt.Exit(id, 1); err != nil {
			t.Fatal(err)
		}
		rt.EndEventStreams()
		waitRestarts(t, cs, "resub", 1, 10*time.Second)
	})

	t.Run("a pod update that changes nothing in the runtime is stepped on the last observation", func(t *testing.T) {
		rt := &observeCounter{Runtime: fake.New(fake.Config{Images: []string{"busybox"}})}
		startHollowKubelet(t, c, kubelet.Config{NodeName: "pleg-cached", Runtime: rt, RelistPeriod: never, FallbackRelistPeriod: never})
		id := runPod(t, cs, rt, "pleg-cached", "cached")
		time.Sleep(time.Second) // the status echo and the start's events settle
		before := rt.observed.Load()
		patch := []byte(`{"metadata":{"labels":{"touched":"yes"}}}`)
		if _, err := cs.CoreV1().Pods("default").Patch(context.Background(), "cached", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // the worker syncs on the update
		if n := rt.observed.Load() - before; n != 0 {
			t.Errorf("the label update observed the runtime %d times, want 0", n)
		}
		if err := rt.Exit(id, 1); err != nil { // a runtime event still does
			t.Fatal(err)
		}
		waitRestarts(t, cs, "cached", 1, 10*time.Second)
		if rt.observed.Load() == before {
			t.Error("the exit was stepped without observing the runtime")
		}
	})

	t.Run("without an event stream the runtime is relisted every FallbackRelistPeriod", func(t *testing.T) {
		rt := fake.New(fake.Config{Images: []string{"busybox"}})
		rt.FailEvents(errors.New("no events here"))
		startHollowKubelet(t, c, kubelet.Config{NodeName: "pleg-noevents", Runtime: rt, RelistPeriod: never})
		id := runPod(t, cs, rt, "pleg-noevents", "noev")
		if err := rt.Exit(id, 1); err != nil {
			t.Fatal(err)
		}
		waitRestarts(t, cs, "noev", 1, 10*time.Second)
	})
}

// runPod runs a pod with one container on node and returns its
// container's runtime ID once the pod is Running.
func runPod(t *testing.T, cs kubernetes.Interface, rt runtime.Runtime, node, name string) string {
	t.Helper()
	bg := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent}}}}
	if _, err := cs.CoreV1().Pods("default").Create(bg, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = cs.CoreV1().Pods("default").Delete(bg, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	waitUntil(t, 20*time.Second, func() bool {
		p, err := cs.CoreV1().Pods("default").Get(bg, name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning
	})
	list, err := rt.ListContainers(bg, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, ctr := range list {
		if ctr.Labels[runtime.LabelPodName] == name {
			return ctr.Id
		}
	}
	t.Fatalf("no container of pod %s in the runtime", name)
	return ""
}

// waitRestarts waits until the pod's container shows n restarts, running.
func waitRestarts(t *testing.T, cs kubernetes.Interface, name string, n int32, d time.Duration) {
	t.Helper()
	waitUntil(t, d, func() bool {
		p, err := cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount == n &&
			p.Status.ContainerStatuses[0].State.Running != nil
	})
}

// observeCounter counts the kubelet's observations of one pod (a
// ListPodSandbox for its UID; the relist lists every container).
type observeCounter struct {
	*fake.Runtime
	observed atomic.Int64
}

func (c *observeCounter) ListPodSandbox(ctx context.Context, uid string) ([]*cri.PodSandbox, error) {
	if uid != "" {
		c.observed.Add(1)
	}
	return c.Runtime.ListPodSandbox(ctx, uid)
}
