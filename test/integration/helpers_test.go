package integration

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"minik/controller"
	"minik/controller/nodelifecycle"
	"minik/internal/pki"
	"minik/internal/testcluster"
	"minik/kubelet"
	"minik/kubelet/runtime/fake"
	"minik/scheduler"
)

// The scaffolding the controller tests share: components run in this
// process against a `minik up` that serves only the API, so that tests can
// set short grace periods `minik up` has no flags for, and stand in for
// kubelets and nodes where a real one is not needed.

// runInBackground runs run in a goroutine until stop is called or the
// test ends; stop returns once run has.
func runInBackground(t *testing.T, run func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx)
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// testLogger logs warnings (everything with MINIK_TEST_DEBUG set).
func testLogger(level slog.Level) *slog.Logger {
	if os.Getenv("MINIK_TEST_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// rbacDenial is how the apiserver words a request RBAC refused.
var rbacDenial = regexp.MustCompile(`cannot [a-z]+ resource "`)

// failOnDenial fails the test when a controller logs that RBAC refused it
// a request: its role lacks a right, which a test of another behaviour
// would not notice.
type failOnDenial struct {
	slog.Handler
	t *testing.T
}

func (h *failOnDenial) Handle(ctx context.Context, r slog.Record) error {
	var text strings.Builder
	text.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		text.WriteString(" " + a.Value.String())
		return true
	})
	if rbacDenial.MatchString(text.String()) {
		h.t.Errorf("a controller was refused a request by RBAC: %s", text.String())
	}
	return h.Handler.Handle(ctx, r)
}

func (h *failOnDenial) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &failOnDenial{Handler: h.Handler.WithAttrs(attrs), t: h.t}
}

func (h *failOnDenial) WithGroup(name string) slog.Handler {
	return &failOnDenial{Handler: h.Handler.WithGroup(name), t: h.t}
}

// startController runs the controller manager with cfg against c, a
// cluster started with StartAPIOnly, until the test ends.
func startController(t *testing.T, c *testcluster.Cluster, cfg controller.Config) {
	t.Helper()
	// As minik up runs it: its own identity, each controller as its
	// service account, so every test here checks the controllers' roles.
	cfg.Client = c.ClientAs(pki.ControllerUser)
	cfg.UseServiceAccountCredentials = true
	if cfg.Logger == nil {
		cfg.Logger = testLogger(slog.LevelWarn)
	}
	cfg.Logger = slog.New(&failOnDenial{Handler: cfg.Logger.Handler(), t: t})
	runInBackground(t, func(ctx context.Context) {
		if err := controller.Run(ctx, cfg); err != nil {
			t.Errorf("controller.Run: %v", err)
		}
	})
}

// evictionAtRate is Kubernetes' eviction policy with a rate of rate nodes
// per second.
func evictionAtRate(rate float64) *nodelifecycle.EvictionConfig {
	eviction := nodelifecycle.DefaultEvictionConfig()
	eviction.Rate = rate
	return &eviction
}

// startWithController starts the apiserver alone with the controller
// manager (cfg) beside it, and returns the cluster, a client-go clientset
// and the test's context.
func startWithController(t *testing.T, cfg controller.Config) (*testcluster.Cluster, *kubernetes.Clientset, context.Context) {
	t.Helper()
	c := testcluster.StartAPIOnly(t)
	startController(t, c, cfg)
	return c, c.Clientset(), ctxT(t)
}

// runSchedulerInProcess runs minik's scheduler against c until the test ends.
func runSchedulerInProcess(t *testing.T, c *testcluster.Cluster) {
	t.Helper()
	cfg := scheduler.Config{Client: c.Client(), Logger: testLogger(slog.LevelWarn)}
	runInBackground(t, func(ctx context.Context) { _ = scheduler.Run(ctx, cfg) })
}

// hollowNode is a real kubelet on the fake runtime, run in this process.
type hollowNode struct {
	runtime *fake.Runtime
	// stop ends the kubelet as if the machine died (no goodbye).
	stop func()
}

// runHollowKubelet runs a kubelet for node on a fake runtime that has the
// busybox image, until the test ends or the node's stop is called.
func runHollowKubelet(t *testing.T, c *testcluster.Cluster, node string) *hollowNode {
	t.Helper()
	rt := fake.New(fake.Config{Images: []string{"busybox"}})
	cfg := kubelet.Config{NodeName: node, Client: c.Client(), Runtime: rt, RootDir: filepath.Join(t.TempDir(), node),
		NodeIP: "127.0.0.1", LeaseRenewInterval: 500 * time.Millisecond, Logger: testLogger(slog.LevelError)}
	stop := runInBackground(t, func(ctx context.Context) { _ = kubelet.Run(ctx, cfg) })
	return &hollowNode{runtime: rt, stop: stop}
}

// startWithHollowNodes is startWithController with minik's scheduler and a
// hollow kubelet for each of nodes beside it.
func startWithHollowNodes(t *testing.T, cfg controller.Config, nodes ...string) (*testcluster.Cluster, *kubernetes.Clientset, context.Context, map[string]*hollowNode) {
	t.Helper()
	c, cs, ctx := startWithController(t, cfg)
	runSchedulerInProcess(t, c)
	hollow := map[string]*hollowNode{}
	for _, name := range nodes {
		hollow[name] = runHollowKubelet(t, c, name)
	}
	return c, cs, ctx, hollow
}

// exitContainer makes container name of pod exit with code, as if its
// process ended.
func (h *hollowNode) exitContainer(t *testing.T, ctx context.Context, pod *corev1.Pod, name string, code int32) {
	t.Helper()
	sandboxes, err := h.runtime.ListPodSandbox(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range sandboxes {
		if sb.Metadata.GetName() != pod.Name || sb.Metadata.GetNamespace() != pod.Namespace {
			continue
		}
		containers, err := h.runtime.ListContainers(ctx, sb.Id)
		if err != nil {
			t.Fatal(err)
		}
		for _, ctr := range containers {
			if ctr.Metadata.GetName() == name {
				if err := h.runtime.Exit(ctr.Id, code); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
	}
	t.Fatalf("no container %s of pod %s in the runtime", name, pod.Name)
}

// renewLease creates node name's Lease in kube-node-lease and renews it
// every 200ms, as its kubelet would, until stop is called or the test
// ends.
func renewLease(t *testing.T, ctx context.Context, cs kubernetes.Interface, name string) (stop func()) {
	t.Helper()
	leases := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	holder := name
	renew := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: int32p(40), RenewTime: &renew}}
	if _, err := leases.Create(ctx, lease, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return runInBackground(t, func(ctx context.Context) {
		for ctx.Err() == nil {
			if l, err := leases.Get(ctx, name, metav1.GetOptions{}); err == nil {
				r := metav1.NewMicroTime(time.Now())
				l.Spec.RenewTime = &r
				_, _ = leases.Update(ctx, l, metav1.UpdateOptions{})
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
}

// minikProc is a minik component (`minik scheduler`, `minik controller`)
// run as its own process, as users run it.
type minikProc struct {
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan struct{}
}

// startMinikProcess runs `minik component --kubeconfig ADMIN args...`
// until the test ends, and shows its log if the test failed.
func startMinikProcess(t *testing.T, c *testcluster.Cluster, component string, args ...string) *minikProc {
	t.Helper()
	p := &minikProc{log: &bytes.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(testcluster.Binary(t), append([]string{component, "--kubeconfig", c.Kubeconfig}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop(os.Interrupt)
		if strings.Contains(p.log.String(), "DATA RACE") { // a binary built with -race
			t.Errorf("minik %s reported a data race", component)
		}
		if t.Failed() {
			t.Logf("minik %s %v log:\n%s", component, args, p.log.String())
		}
	})
	return p
}

// stop sends sig and waits for the process to exit (killing it after 10s).
func (p *minikProc) stop(sig os.Signal) {
	testcluster.StopProcess(p.cmd.Process, p.done, sig, 10*time.Second)
}

// eventually polls cond every 50ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s; last: %s", timeout, what, last)
}
