package hollow_test

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
	"minik/client/kubeconfig"
	"minik/hollow"
	"minik/internal/testcluster"
)

// watchCounter counts the watch requests a client makes, by path.
type watchCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    map[string]int
}

func (w *watchCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Query().Get("watch") == "true" {
		w.mu.Lock()
		w.n[r.URL.Path]++
		w.mu.Unlock()
	}
	return w.next.RoundTrip(r)
}

func (w *watchCounter) count(path string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[path]
}

// TestHollowNodes runs three hollow nodes as the user rbac.yaml binds,
// against a control plane with its scheduler and controllers.
func TestHollowNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts minik up; skipped with -short")
	}
	c := testcluster.Start(t)
	c.MustKubectl(t, "", "apply", "-f", "rbac.yaml")
	kc, err := kubeconfig.Load(c.UserKubeconfig(hollow.User))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := client.ConfigFromKubeconfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	watches := &watchCounter{next: client.NewTransport(cfg.TLS), n: map[string]int{}}
	cfg.Transport = watches
	hc, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const nodes = 3
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	registered := make(chan struct{})
	go func() {
		done <- hollow.Run(ctx, hollow.Config{Client: hc, Nodes: nodes, Prefix: "h-", RootDir: t.TempDir(), StartSpread: 100 * time.Millisecond,
			Labels: map[string]string{"hollow": "true"}, Registered: registered,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("hollow.Run: %v", err)
		}
	})
	select {
	case <-registered:
	case err := <-done:
		t.Fatalf("hollow.Run returned before the nodes registered: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the hollow nodes did not register within 30s")
	}
	cs := c.Clientset()
	bg := context.Background()

	t.Run("every node is registered Ready with its labels, and holds its own Lease", func(t *testing.T) {
		for i := range nodes {
			name := hollow.NodeName("h-", i)
			n, err := cs.CoreV1().Nodes().Get(bg, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !nodeReady(n) || n.Labels["hollow"] != "true" || n.Status.NodeInfo.ContainerRuntimeVersion != "fake://0.1.0" {
				t.Errorf("node %s: labels %v, status %+v", name, n.Labels, n.Status)
			}
			waitUntil(t, 20*time.Second, func() bool {
				l, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(bg, name, metav1.GetOptions{})
				return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == name && l.Spec.RenewTime != nil
			})
		}
	})

	t.Run("a Deployment's pods are scheduled onto the hollow nodes and reach Running and Ready", func(t *testing.T) {
		labels := map[string]string{"app": "hollow"}
		replicas := int32(6)
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "hollow", Namespace: "default"}, Spec: appsv1.DeploymentSpec{
			Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
		if _, err := cs.AppsV1().Deployments("default").Create(bg, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 60*time.Second, func() bool {
			got, err := cs.AppsV1().Deployments("default").Get(bg, "hollow", metav1.GetOptions{})
			return err == nil && got.Status.AvailableReplicas == replicas
		})
		pods, err := cs.CoreV1().Pods("default").List(bg, metav1.ListOptions{LabelSelector: "app=hollow"})
		if err != nil {
			t.Fatal(err)
		}
		perNode := map[string]int{}
		for _, p := range pods.Items {
			perNode[p.Spec.NodeName]++
			if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != 1 || !p.Status.ContainerStatuses[0].Ready {
				t.Errorf("pod %s on %s: %+v", p.Name, p.Spec.NodeName, p.Status)
			}
		}
		if len(perNode) != nodes {
			t.Errorf("pods per node %v, want them spread over all %d nodes", perNode, nodes)
		}
	})

	t.Run("a deleted pod is terminated by its node and goes from the API", func(t *testing.T) {
		if err := cs.AppsV1().Deployments("default").Delete(bg, "hollow", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 60*time.Second, func() bool {
			pods, err := cs.CoreV1().Pods("default").List(bg, metav1.ListOptions{LabelSelector: "app=hollow"})
			return err == nil && len(pods.Items) == 0
		})
	})

	t.Run("the process holds one watch of pods, of nodes and of services, whatever the number of nodes", func(t *testing.T) {
		for _, path := range []string{"/api/v1/pods", "/api/v1/nodes", "/api/v1/services"} {
			if got := watches.count(path); got != 1 {
				t.Errorf("watches of %s: %d, want 1", path, got)
			}
		}
	})

	t.Run("the hollow identity cannot read a Secret's list, which no kubelet needs", func(t *testing.T) {
		_, err := hc.Secrets().List(bg, "default", metav1.ListOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("listing secrets as %s: %v, want Forbidden", hollow.User, err)
		}
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func waitUntil(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("condition not met within %v", d)
}
