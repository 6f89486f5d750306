package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"minik/client/kubeconfig"
	"minik/deploy/images"
	"minik/internal/pki"
	"minik/internal/testcluster"
	ctdrt "minik/kubelet/runtime/containerd"
)

// The controller's node timings in TestController. A kubelet renews its
// Lease every 10s, so the grace period must be longer than that.
const (
	nodeGracePeriod   = 15 * time.Second
	nodeMonitorPeriod = 500 * time.Millisecond
)

// ctlEnv is the cluster of TestController: `minik up` with neither
// controller nor kubelets, a `minik controller` process with short node
// grace periods and one `minik kubelet` process per node, all sharing one
// containerd, so that a test can stop one node's kubelet.
type ctlEnv struct {
	*env
	archive    string
	containerd string // containerd's address
	daemon     *ctdrt.Daemon
	ctrl       *proc
	mu         sync.Mutex
	kubelets   map[string]*proc
}

// proc is a child process of the test with its log in a file.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

func startProc(t *testing.T, name, logPath string, args ...string) *proc {
	t.Helper()
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(testcluster.Binary(t), args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p
}

// stop sends sig and waits; after 15s it kills the process.
func (p *proc) stop(sig syscall.Signal) {
	if p == nil {
		return
	}
	testcluster.StopProcess(p.cmd.Process, p.done, sig, 15*time.Second)
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// tail returns the last n lines of the process's log.
func (p *proc) tail(n int) string {
	b, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// startControllerCluster starts the control plane, the controller, a
// containerd and the two kubelets, and waits until both nodes are Ready
// with a podCIDR.
func startControllerCluster(t *testing.T) *ctlEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs root and containerd; skipped under -short")
	}
	if os.Geteuid() != 0 {
		t.Fatal("the end-to-end tests run containers and must run as root")
	}
	id := fmt.Sprintf("%x", os.Getpid()&0xffff)
	began := time.Now()
	c := testcluster.Start(t, "--controller=false")
	t.Logf("control plane up in %v (with the build of minik, if it is the first)", time.Since(began).Round(time.Millisecond))
	e := &ctlEnv{
		env:      &env{c: c, cs: c.Clientset(), nodes: [2]string{"ctl-" + id + "-a", "ctl-" + id + "-b"}, dataDir: c.DataDir},
		archive:  filepath.Join(c.DataDir, "busybox.tar"),
		kubelets: map[string]*proc{},
	}
	t.Cleanup(func() { e.cleanup(t) })
	if err := images.BuildBusybox(e.archive, images.DefaultBusyboxPath); err != nil {
		t.Fatal(err)
	}

	// The controller, as system:kube-controller-manager, with short node
	// grace periods and a pod range of its own.
	cidr := fmt.Sprintf("10.%d.0.0/16", 100+os.Getpid()%100)
	kc := e.writeKubeconfig(t, "controller.kubeconfig", pki.ControllerUser, nil)
	e.ctrl = startProc(t, "controller", filepath.Join(c.DataDir, "controller.log"), "controller", "--kubeconfig", kc,
		"--node-monitor-grace-period", nodeGracePeriod.String(), "--node-monitor-period", nodeMonitorPeriod.String(),
		"--node-startup-grace-period", "30s", "--cluster-cidr", cidr)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var err error
	e.containerd, e.daemon, err = ctdrt.Ensure(ctx, filepath.Join(c.DataDir, "containerd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range e.nodes {
		e.writeKubeconfig(t, "kubelet-"+n+".kubeconfig", pki.NodeUser(n), []string{pki.NodesGroup})
		e.startKubelet(t, n)
	}
	for _, n := range e.nodes {
		e.waitNodeReady(t, n)
		waitFor(t, 30*time.Second, "node "+n+" has a podCIDR", func() (bool, string) {
			node, err := e.cs.CoreV1().Nodes().Get(context.Background(), n, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return node.Spec.PodCIDR != "", "no podCIDR"
		})
	}
	return e
}

// writeKubeconfig issues a client certificate of the cluster CA for user
// and writes a kubeconfig with it under the data dir.
func (e *ctlEnv) writeKubeconfig(t *testing.T, name, user string, groups []string) string {
	t.Helper()
	ca, err := pki.LoadCA(filepath.Join(e.dataDir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueClient(user, groups)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.dataDir, name)
	if err := kubeconfig.Write(path, "https://"+e.c.Listen, ca.CertPEM(), certPEM, keyPEM, user); err != nil {
		t.Fatal(err)
	}
	return path
}

// startKubelet runs `minik kubelet` for node on the shared containerd.
func (e *ctlEnv) startKubelet(t *testing.T, node string) {
	t.Helper()
	p := startProc(t, "kubelet "+node, filepath.Join(e.dataDir, "kubelet-"+node+".log"), "kubelet",
		"--node-name", node, "--kubeconfig", filepath.Join(e.dataDir, "kubelet-"+node+".kubeconfig"),
		"--root-dir", filepath.Join(e.dataDir, "kubelet", node), "--containerd-address", e.containerd,
		"--node-ip", "127.0.0.1", "--port", "0", "--preload-images", e.archive)
	e.mu.Lock()
	e.kubelets[node] = p
	e.mu.Unlock()
}

// killKubelet ends node's kubelet with SIGKILL, as a lost node: its
// containers keep running.
func (e *ctlEnv) killKubelet(node string) {
	e.mu.Lock()
	p := e.kubelets[node]
	e.mu.Unlock()
	p.stop(syscall.SIGKILL)
}

// cleanup stops the controller (nothing is recreated any more), deletes
// every pod while the kubelets still run, then stops the processes and
// removes what is left: shims, mounts, bridges.
func (e *ctlEnv) cleanup(t *testing.T) {
	if t.Failed() {
		procs := []*proc{e.ctrl}
		for _, n := range e.nodes {
			procs = append(procs, e.kubelets[n])
		}
		for _, p := range procs {
			if p != nil {
				t.Logf("--- last lines of %s (%s):\n%s", p.name, p.logPath, p.tail(40))
			}
		}
	}
	e.ctrl.stop(syscall.SIGTERM)
	ctx := context.Background()
	cidrs := map[string]string{}
	for _, n := range e.nodes {
		if node, err := e.cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{}); err == nil {
			cidrs[n] = node.Spec.PodCIDR
		}
	}
	zero := int64(0)
	_ = e.cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && len(e.shims()) > 0 {
		time.Sleep(200 * time.Millisecond)
	}
	for _, n := range e.nodes {
		e.kubelets[n].stop(syscall.SIGTERM)
	}
	e.c.Stop()
	for _, pid := range e.shims() {
		for _, child := range children(pid) {
			_ = syscall.Kill(child, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	e.daemon.Stop()
	unmountRuntime(e.dataDir, e.nodes[:]...)
	for _, n := range e.nodes {
		ctdrt.RemoveNodeNetwork(ctdrt.NamespaceFor(n), cidrs[n])
	}
}

const ns = "default"

// kubectl runs kubectl against the cluster, bounded by 90s.
func (e *ctlEnv) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := e.c.Kubectl(ctx, "", args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// makeDeployment returns a Deployment of busybox pods labelled app=name
// that exit on SIGTERM.
func makeDeployment(name string, replicas int32, mutate ...func(d *appsv1.Deployment)) *appsv1.Deployment {
	grace := int64(2)
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{Name: "main", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
						Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}}},
				},
			},
		},
	}
	for _, m := range mutate {
		m(d)
	}
	return d
}

// createDeployment creates d; at the end of the test it is deleted and
// its pods are waited for.
func (e *ctlEnv) createDeployment(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	if _, err := e.cs.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating deployment %s: %v", d.Name, err)
	}
	t.Cleanup(func() {
		bg := metav1.DeletePropagationBackground
		_ = e.cs.AppsV1().Deployments(ns).Delete(context.Background(), d.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
		e.waitGone(t, "app="+d.Name)
	})
}

// waitGone waits (at most 30s, without failing) until no pod matches selector.
func (e *ctlEnv) waitGone(t *testing.T, selector string) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if len(e.pods(t, selector)) == 0 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("pods %s still there 30s after the test", selector)
}

func (e *ctlEnv) pods(t *testing.T, selector string) []corev1.Pod {
	t.Helper()
	l, err := e.cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("listing pods %s: %v", selector, err)
	}
	return l.Items
}

func live(p *corev1.Pod) bool { return p.DeletionTimestamp == nil }

// available is what the deployment controller counts (minReadySeconds 0).
func available(p *corev1.Pod) bool {
	return live(p) && p.Status.Phase == corev1.PodRunning && podReady(p)
}

func describe(pods []corev1.Pod) string {
	var parts []string
	for _, p := range pods {
		s := fmt.Sprintf("%s@%s:%s", p.Name, p.Spec.NodeName, p.Status.Phase)
		if podReady(&p) {
			s += "/ready"
		}
		if p.DeletionTimestamp != nil {
			s += "/terminating"
		}
		parts = append(parts, s)
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d pods [%s]", len(pods), strings.Join(parts, " "))
}

// waitPods waits until cond holds for the pods matching selector.
func (e *ctlEnv) waitPods(t *testing.T, selector string, timeout time.Duration, what string, cond func(pods []corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	waitFor(t, timeout, what, func() (bool, string) {
		pods = e.pods(t, selector)
		return cond(pods), describe(pods)
	})
	return pods
}

// exactlyAvailable says there are n pods, all available, none terminating;
// with nodes given, all on those nodes.
func exactlyAvailable(n int, nodes ...string) func([]corev1.Pod) bool {
	return func(pods []corev1.Pod) bool {
		if len(pods) != n {
			return false
		}
		for i := range pods {
			if !available(&pods[i]) || (len(nodes) > 0 && !slices.Contains(nodes, pods[i].Spec.NodeName)) {
				return false
			}
		}
		return true
	}
}

// waitDeploymentStatus waits until d's status reports n replicas, all
// updated, ready and available, for its latest generation.
func (e *ctlEnv) waitDeploymentStatus(t *testing.T, name string, n int32) {
	t.Helper()
	waitFor(t, 30*time.Second, "deployment "+name+" status at "+fmt.Sprint(n), func() (bool, string) {
		d, err := e.cs.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		s := d.Status
		return s.ObservedGeneration == d.Generation && s.Replicas == n && s.UpdatedReplicas == n && s.ReadyReplicas == n &&
			s.AvailableReplicas == n && s.UnavailableReplicas == 0, fmt.Sprintf("generation %d, status %+v", d.Generation, s)
	})
}

// podWatch follows the pods of a selector through an informer and keeps
// what the tests assert on, computed at every event in order.
type podWatch struct {
	mu       sync.Mutex
	pods     map[types.UID]*corev1.Pod
	ever     map[types.UID]bool
	deleted  map[string]time.Time // pod name → when deletion was first seen
	minAvail int                  // fewest available pods at any event
	maxLive  int                  // most non-terminating pods at any event
	trace    []string
	stop     context.CancelFunc
}

func (e *ctlEnv) watchPods(t *testing.T, selector string) *podWatch {
	t.Helper()
	w := &podWatch{pods: map[types.UID]*corev1.Pod{}, ever: map[types.UID]bool{}, deleted: map[string]time.Time{}, minAvail: 1 << 30}
	factory := informers.NewSharedInformerFactoryWithOptions(e.cs, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	inf := factory.Core().V1().Pods().Informer()
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.observe(obj.(*corev1.Pod), false) },
		UpdateFunc: func(_, obj any) { w.observe(obj.(*corev1.Pod), false) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				w.observe(p, true)
			}
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	w.stop = func() { cancel(); factory.Shutdown() }
	t.Cleanup(w.stop)
	factory.Start(ctx.Done())
	if err != nil {
		t.Fatal(err)
	}
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced, reg.HasSynced) {
		t.Fatal("pod informer did not sync")
	}
	// The extremes count from now, not from the initial list's adds.
	w.mu.Lock()
	defer w.mu.Unlock()
	w.minAvail, w.maxLive = 1<<30, 0
	w.observeLocked(time.Now(), "synced")
	return w
}

func (w *podWatch) observe(p *corev1.Pod, gone bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	w.ever[p.UID] = true
	if gone {
		delete(w.pods, p.UID)
	} else {
		w.pods[p.UID] = p
	}
	if _, ok := w.deleted[p.Name]; !ok && (gone || p.DeletionTimestamp != nil) {
		w.deleted[p.Name] = now
	}
	w.observeLocked(now, p.Name)
}

// observeLocked updates the extremes after an event about what.
func (w *podWatch) observeLocked(now time.Time, what string) {
	nAvail, nLive := 0, 0
	for _, q := range w.pods {
		if available(q) {
			nAvail++
		}
		if live(q) {
			nLive++
		}
	}
	w.minAvail = min(w.minAvail, nAvail)
	w.maxLive = max(w.maxLive, nLive)
	w.trace = append(w.trace, fmt.Sprintf("%s %s: available %d, live %d", now.Format("15:04:05.000"), what, nAvail, nLive))
}

func (w *podWatch) deletedAt(name string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.deleted[name]
	return at, ok
}

func podTemplateHash(p *corev1.Pod) string { return p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] }

func uids(pods []corev1.Pod) map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, p := range pods {
		out[p.UID] = true
	}
	return out
}

func (e *ctlEnv) node(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n, err := e.cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func nodeHasTaint(n *corev1.Node, key string, effect corev1.TaintEffect) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}

func nodeReadyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// TestController is issue 5's end-to-end set: Deployments, rollouts, node
// loss, taint eviction, drain and cascading deletion, with minik's
// scheduler and controller and two real containerd kubelets.
func TestController(t *testing.T) {
	start := time.Now()
	e := startControllerCluster(t)
	a, b := e.nodes[0], e.nodes[1]
	t.Logf("cluster up in %v", time.Since(start).Round(time.Millisecond))

	// These leave the nodes alone and run side by side.
	t.Run("workloads", func(t *testing.T) {
		t.Run("a local-path claim keeps its data on one node across pods and is protected while in use", e.localPathVolume)
		t.Run("a Deployment scales from 3 to 10 to 2", func(t *testing.T) {
			t.Parallel()
			w := e.watchPods(t, "app=scale")
			e.createDeployment(t, makeDeployment("scale", 3))
			e.waitPods(t, "app=scale", 60*time.Second, "3 available pods", exactlyAvailable(3))
			e.waitDeploymentStatus(t, "scale", 3)

			e.kubectl(t, "scale", "deployment/scale", "--replicas=10")
			ten := e.waitPods(t, "app=scale", 60*time.Second, "10 available pods", exactlyAvailable(10))
			e.waitDeploymentStatus(t, "scale", 10)

			e.kubectl(t, "scale", "deployment/scale", "--replicas=2")
			two := e.waitPods(t, "app=scale", 60*time.Second, "the 8 excess pods gone and 2 left", exactlyAvailable(2))
			e.waitDeploymentStatus(t, "scale", 2)
			before := uids(ten)
			for _, p := range two {
				if !before[p.UID] {
					t.Errorf("pod %s was created while scaling down", p.Name)
				}
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if len(w.ever) != 10 || w.maxLive != 10 {
				t.Errorf("%d pods were created and at most %d were live at once; want 10 and 10", len(w.ever), w.maxLive)
			}
		})

		t.Run("a rolling update with maxSurge 1 and maxUnavailable 0 never has fewer than 3 available pods", func(t *testing.T) {
			t.Parallel()
			surge, unavailable := intstr.FromInt32(1), intstr.FromInt32(0)
			e.createDeployment(t, makeDeployment("roll", 3, func(d *appsv1.Deployment) {
				d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
					RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}}
				c := &d.Spec.Template.Spec.Containers[0]
				// Ready a second after start: availability is the kubelet's probe, not the container's start.
				c.Command = []string{"sh", "-c", "trap 'exit 0' TERM; sleep 1; touch /tmp/ready; sleep 3600 & wait"}
				c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-e", "/tmp/ready"}}},
					PeriodSeconds: 1, TimeoutSeconds: 5, FailureThreshold: 3}
			}))
			old := e.waitPods(t, "app=roll", 60*time.Second, "3 available pods", exactlyAvailable(3))
			e.waitDeploymentStatus(t, "roll", 3)
			oldHash := podTemplateHash(&old[0])

			w := e.watchPods(t, "app=roll")
			began := time.Now()
			e.kubectl(t, "rollout", "restart", "deployment/roll")
			e.kubectl(t, "rollout", "status", "deployment/roll", "--timeout=90s")
			pods := e.waitPods(t, "app=roll", 60*time.Second, "3 new available pods and no old one", func(pods []corev1.Pod) bool {
				return exactlyAvailable(3)(pods) && podTemplateHash(&pods[0]) != oldHash &&
					podTemplateHash(&pods[0]) == podTemplateHash(&pods[1]) && podTemplateHash(&pods[1]) == podTemplateHash(&pods[2])
			})
			w.stop()
			t.Logf("rollout took %v", time.Since(began).Round(time.Millisecond))
			if uids(old)[pods[0].UID] {
				t.Errorf("pod %s survived the rollout", pods[0].Name)
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.minAvail < 3 || w.maxLive > 4 {
				t.Errorf("during the rollout available pods fell to %d (want >= 3) and live pods rose to %d (want <= 4):\n%s",
					w.minAvail, w.maxLive, strings.Join(w.trace, "\n"))
			}
			if len(w.ever) != 6 {
				t.Errorf("%d pods seen during the rollout, want the 3 old and 3 new", len(w.ever))
			}
			rss, err := e.cs.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=roll"})
			if err != nil {
				t.Fatal(err)
			}
			for _, rs := range rss.Items {
				want := int32(3)
				if rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] == oldHash {
					want = 0
				}
				if *rs.Spec.Replicas != want {
					t.Errorf("replicaset %s has %d replicas, want %d", rs.Name, *rs.Spec.Replicas, want)
				}
			}
			if len(rss.Items) != 2 {
				t.Errorf("%d replicasets, want the old and the new", len(rss.Items))
			}
		})

		t.Run("the seeds' StatefulSet: ordered pods with their own claims, data kept, scale down, partitioned update", e.statefulSetKV)

		t.Run("a CronJob every minute starts a Job within 70s and Forbid skips the next while it runs", func(t *testing.T) {
			t.Parallel()
			testCronJobEveryMinute(t, e)
		})

		t.Run("kubectl delete cascades in the background, in the foreground and not at all with orphan", func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			for _, name := range []string{"cascade-bg", "cascade-fg", "cascade-orphan"} {
				e.createDeployment(t, makeDeployment(name, 2))
			}
			for _, name := range []string{"cascade-bg", "cascade-fg", "cascade-orphan"} {
				e.waitPods(t, "app="+name, 60*time.Second, "2 available "+name+" pods", exactlyAvailable(2))
			}
			replicaSets := func(name string) []appsv1.ReplicaSet {
				l, err := e.cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
				if err != nil {
					t.Fatal(err)
				}
				return l.Items
			}

			t.Run("background: the Deployment goes at once, then its ReplicaSet and pods", func(t *testing.T) {
				e.kubectl(t, "delete", "deployment", "cascade-bg", "--cascade=background", "--wait=false")
				if _, err := e.cs.AppsV1().Deployments(ns).Get(ctx, "cascade-bg", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("deployment still there right after a background delete: %v", err)
				}
				waitFor(t, 30*time.Second, "cascade-bg's replicaset and pods gone", func() (bool, string) {
					rss, pods := replicaSets("cascade-bg"), e.pods(t, "app=cascade-bg")
					return len(rss) == 0 && len(pods) == 0, fmt.Sprintf("%d replicasets, %s", len(rss), describe(pods))
				})
			})

			t.Run("foreground: the Deployment waits with the foregroundDeletion finalizer until its dependents are gone", func(t *testing.T) {
				e.kubectl(t, "delete", "deployment", "cascade-fg", "--cascade=foreground", "--wait=false")
				d, err := e.cs.AppsV1().Deployments(ns).Get(ctx, "cascade-fg", metav1.GetOptions{})
				if err != nil {
					t.Fatalf("deployment gone right after a foreground delete: %v", err)
				}
				if d.DeletionTimestamp == nil || !slices.Contains(d.Finalizers, metav1.FinalizerDeleteDependents) {
					t.Errorf("deployment deletionTimestamp %v finalizers %v, want a deletionTimestamp and %s", d.DeletionTimestamp, d.Finalizers, metav1.FinalizerDeleteDependents)
				}
				waitFor(t, 30*time.Second, "deployment cascade-fg gone", func() (bool, string) {
					_, err := e.cs.AppsV1().Deployments(ns).Get(ctx, "cascade-fg", metav1.GetOptions{})
					if !apierrors.IsNotFound(err) {
						return false, fmt.Sprint(err)
					}
					// The owner is gone only once its dependents are.
					if rss, pods := replicaSets("cascade-fg"), e.pods(t, "app=cascade-fg"); len(rss) != 0 || len(pods) != 0 {
						t.Errorf("deployment gone while %d replicasets and %s remain", len(rss), describe(pods))
					}
					return true, ""
				})
			})

			t.Run("orphan: the Deployment goes and its ReplicaSet and pods stay, without the owner reference", func(t *testing.T) {
				before := e.pods(t, "app=cascade-orphan")
				rss := replicaSets("cascade-orphan")
				if len(rss) != 1 {
					t.Fatalf("%d replicasets, want 1", len(rss))
				}
				t.Cleanup(func() {
					e.kubectl(t, "delete", "replicaset", rss[0].Name, "--cascade=background")
					e.waitGone(t, "app=cascade-orphan")
				})
				e.kubectl(t, "delete", "deployment", "cascade-orphan", "--cascade=orphan")
				if _, err := e.cs.AppsV1().Deployments(ns).Get(ctx, "cascade-orphan", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Fatalf("deployment still there after kubectl delete returned: %v", err)
				}
				waitFor(t, 20*time.Second, "replicaset without owner references", func() (bool, string) {
					rs, err := e.cs.AppsV1().ReplicaSets(ns).Get(ctx, rss[0].Name, metav1.GetOptions{})
					if err != nil {
						return false, err.Error()
					}
					return len(rs.OwnerReferences) == 0 && rs.DeletionTimestamp == nil, fmt.Sprintf("ownerReferences %v", rs.OwnerReferences)
				})
				time.Sleep(2 * time.Second) // let a wrong collector delete something
				after := e.pods(t, "app=cascade-orphan")
				if !exactlyAvailable(2)(after) || !maps.Equal(uids(before), uids(after)) {
					t.Errorf("pods before %s, after %s: want the same 2 running", describe(before), describe(after))
				}
				for _, p := range after {
					if ref := metav1.GetControllerOf(&p); ref == nil || ref.UID != rss[0].UID {
						t.Errorf("pod %s controller %v, want the replicaset %s", p.Name, ref, rss[0].Name)
					}
				}
			})
		})
	})
	t.Logf("workloads done at %v", time.Since(start).Round(time.Millisecond))

	t.Run("a NoExecute taint evicts a pod that does not tolerate it at once and one that does when its tolerationSeconds run out", func(t *testing.T) {
		const key = "e2e.minik.io/evict"
		tolerate := func(seconds *int64) func(p *corev1.Pod) {
			return func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}}
			}
		}
		five, ten := int64(5), int64(10)
		t.Cleanup(func() { e.waitGone(t, "test=taint") }) // runs after the pods' deletes
		for _, p := range []*corev1.Pod{
			makePod("intolerant", a).Label("test", "taint").Obj(),
			makePod("tolerates-5s", a).Label("test", "taint").With(tolerate(&five)).Obj(),
			makePod("tolerates-10s", a).Label("test", "taint").With(tolerate(&ten)).Obj(),
			makePod("tolerates-forever", a).Label("test", "taint").With(tolerate(nil)).Obj(),
		} {
			e.create(t, p)
		}
		e.waitPods(t, "test=taint", 60*time.Second, "4 running pods", func(pods []corev1.Pod) bool {
			return len(pods) == 4 && !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return !running(&p) })
		})
		w := e.watchPods(t, "test=taint")
		t.Cleanup(func() { _, _ = e.c.Kubectl(context.Background(), "", "taint", "nodes", a, key+"-") })
		t0 := time.Now()
		e.kubectl(t, "taint", "nodes", a, key+"=now:NoExecute")
		t1 := time.Now()
		waitFor(t, 15*time.Second, "intolerant and tolerates-5s evicted", func() (bool, string) {
			_, ok1 := w.deletedAt("intolerant")
			_, ok2 := w.deletedAt("tolerates-5s")
			return ok1 && ok2, fmt.Sprintf("intolerant %v, tolerates-5s %v", ok1, ok2)
		})
		at, _ := w.deletedAt("intolerant")
		if d := at.Sub(t1); d > 4*time.Second { // at once, well before tolerates-5s (slack for a loaded CI machine)
			t.Errorf("intolerant evicted %v after the taint, want at once", d)
		}
		at, _ = w.deletedAt("tolerates-5s")
		t.Logf("tolerates-5s evicted %v after the taint", at.Sub(t0).Round(time.Millisecond))
		if at.Sub(t0) < 4500*time.Millisecond || at.Sub(t1) > 8*time.Second {
			t.Errorf("tolerates-5s evicted %v..%v after the taint, want about 5s", at.Sub(t1), at.Sub(t0))
		}
		// Removing the taint in time cancels tolerates-10s's countdown.
		e.kubectl(t, "taint", "nodes", a, key+"-")
		removed := time.Now()
		if removed.Sub(t1) > 9*time.Second {
			t.Fatalf("the taint was removed %v after it was set: too late to test cancellation", removed.Sub(t1))
		}
		time.Sleep(time.Until(t0.Add(12 * time.Second)))
		for _, name := range []string{"tolerates-10s", "tolerates-forever"} {
			if _, ok := w.deletedAt(name); ok {
				t.Errorf("%s was evicted", name)
			}
			if p := e.get(t, name); !running(p) || p.DeletionTimestamp != nil {
				t.Errorf("%s is not running: phase %s, deletionTimestamp %v", name, p.Status.Phase, p.DeletionTimestamp)
			}
		}
		for _, name := range []string{"intolerant", "tolerates-5s"} {
			e.waitEvents(t, name, "TaintManagerEviction")
		}
	})
	t.Logf("taint done at %v", time.Since(start).Round(time.Millisecond))

	t.Run("kubectl drain moves a Deployment's pods to the other node and uncordon restores scheduling", func(t *testing.T) {
		ctx := context.Background()
		// Everything starts on a: b is cordoned meanwhile.
		e.kubectl(t, "cordon", b)
		t.Cleanup(func() { e.c.MustKubectl(t, "", "uncordon", b) })
		e.createDeployment(t, makeDeployment("drain", 4, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			d.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
		}))
		ds := &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: "drain-ds", Namespace: ns},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "drain-ds"}},
				Template: makeDeployment("drain-ds", 1).Spec.Template,
			},
		}
		if _, err := e.cs.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = e.cs.AppsV1().DaemonSets(ns).Delete(ctx, "drain-ds", metav1.DeleteOptions{})
			e.waitGone(t, "app=drain-ds")
		})
		bare := makePod("drain-bare", "").Label("app", "drain-bare").Obj()
		e.create(t, bare)
		e.waitPods(t, "app=drain", 60*time.Second, "4 available pods on "+a, exactlyAvailable(4, a))
		dsPods := e.waitPods(t, "app=drain-ds", 60*time.Second, "a daemon pod on each node", func(pods []corev1.Pod) bool {
			return exactlyAvailable(2)(pods) && pods[0].Spec.NodeName != pods[1].Spec.NodeName
		})
		e.waitPod(t, "drain-bare", 60*time.Second, "Running on "+a, func(p *corev1.Pod) bool { return running(p) && p.Spec.NodeName == a })
		e.kubectl(t, "uncordon", b)

		began := time.Now()
		e.kubectl(t, "drain", a, "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=90s")
		e.waitPods(t, "app=drain", 60*time.Second, "4 available pods on "+b, exactlyAvailable(4, b))
		t.Logf("drain and recreation took %v", time.Since(began).Round(time.Millisecond))
		if n := e.node(t, a); !n.Spec.Unschedulable {
			t.Errorf("node %s schedulable after drain", a)
		}
		waitFor(t, 10*time.Second, "the unschedulable taint on "+a, func() (bool, string) {
			n := e.node(t, a)
			return nodeHasTaint(n, corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule), fmt.Sprint(n.Spec.Taints)
		})
		if _, err := e.cs.CoreV1().Pods(ns).Get(ctx, "drain-bare", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the bare pod is still there after drain --force: %v", err)
		}
		if after := e.pods(t, "app=drain-ds"); !exactlyAvailable(2)(after) || !maps.Equal(uids(after), uids(dsPods)) {
			t.Errorf("daemon pods before %s, after %s: drain --ignore-daemonsets must leave them", describe(dsPods), describe(after))
		}

		e.kubectl(t, "uncordon", a)
		waitFor(t, 10*time.Second, a+" schedulable and untainted", func() (bool, string) {
			n := e.node(t, a)
			return !n.Spec.Unschedulable && !nodeHasTaint(n, corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule), fmt.Sprint(n.Spec.Taints)
		})
		// With b cordoned, new replicas can only go to a.
		e.kubectl(t, "cordon", b)
		e.kubectl(t, "scale", "deployment/drain", "--replicas=6")
		pods := e.waitPods(t, "app=drain", 60*time.Second, "6 available pods", exactlyAvailable(6))
		perNode := map[string]int{}
		for _, p := range pods {
			perNode[p.Spec.NodeName]++
		}
		if perNode[a] != 2 || perNode[b] != 4 {
			t.Errorf("pods per node %v, want 2 new ones on %s", perNode, a)
		}
	})
	t.Logf("drain done at %v", time.Since(start).Round(time.Millisecond))

	t.Run("a stopped kubelet's node goes Unknown, its pods are evicted after their tolerationSeconds and run again on the other node", func(t *testing.T) {
		five := int64(5)
		e.kubectl(t, "cordon", a)
		t.Cleanup(func() { e.c.MustKubectl(t, "", "uncordon", a) })
		e.createDeployment(t, makeDeployment("lost", 4, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Tolerations = []corev1.Toleration{
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &five},
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &five},
			}
		}))
		old := e.waitPods(t, "app=lost", 60*time.Second, "4 available pods on "+b, exactlyAvailable(4, b))
		e.kubectl(t, "uncordon", a)
		w := e.watchPods(t, "app=lost")

		killed := time.Now()
		e.killKubelet(b)
		t.Cleanup(func() {
			if e.kubelets[b].exited() {
				e.startKubelet(t, b)
			}
		})
		var unknownAt time.Time
		waitFor(t, nodeGracePeriod+15*time.Second, b+" Unknown with the unreachable NoExecute taint", func() (bool, string) {
			n := e.node(t, b)
			unknownAt = time.Now()
			return nodeReadyStatus(n) == corev1.ConditionUnknown && nodeHasTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
				fmt.Sprintf("Ready %s, taints %v", nodeReadyStatus(n), n.Spec.Taints)
		})
		t.Logf("%s Unknown %v after its kubelet stopped", b, unknownAt.Sub(killed).Round(time.Millisecond))
		waitFor(t, 10*time.Second, "evicted", func() (bool, string) {
			n := 0
			for _, p := range old {
				if _, ok := w.deletedAt(p.Name); ok {
					n++
				}
			}
			return n == len(old), fmt.Sprintf("%d of %d evicted", n, len(old))
		})
		var delays []string
		for _, p := range old {
			at, _ := w.deletedAt(p.Name)
			d := at.Sub(unknownAt)
			delays = append(delays, d.Round(time.Millisecond).String())
			// The test sees Unknown a little after the controller sets it
			// (its watch lags under load), hence the slack below 5s.
			if d < 3*time.Second || d > 10*time.Second {
				t.Errorf("pod %s evicted %v after its node was seen Unknown, want about its 5s tolerationSeconds", p.Name, d)
			}
		}
		t.Logf("pods evicted %v after %s was seen Unknown", delays, b)
		stuck := e.waitPods(t, "app=lost", 60*time.Second, "4 available pods on "+a, func(pods []corev1.Pod) bool {
			var fresh []corev1.Pod
			for _, p := range pods {
				if live(&p) {
					fresh = append(fresh, p)
				}
			}
			return exactlyAvailable(4, a)(fresh)
		})
		t.Logf("replicas running on %s %v after the kubelet stopped", a, time.Since(killed).Round(time.Millisecond))
		onB := 0
		for _, p := range stuck {
			if p.Spec.NodeName != b {
				continue
			}
			onB++
			// Nobody is there to finish the deletion, as in Kubernetes.
			if p.DeletionTimestamp == nil || podReady(&p) {
				t.Errorf("pod %s on the lost node: deletionTimestamp %v, ready %v; want terminating and not ready", p.Name, p.DeletionTimestamp, podReady(&p))
			}
		}

		if onB != len(old) {
			t.Errorf("%d pods left on the lost node, want its %d, terminating until its kubelet returns: %s", onB, len(old), describe(stuck))
		}

		// The kubelet comes back: the node is Ready again, untainted, and
		// the kubelet finishes the deletions.
		e.startKubelet(t, b)
		e.waitNodeReady(t, b)
		waitFor(t, 20*time.Second, b+" without the unreachable taints", func() (bool, string) {
			n := e.node(t, b)
			return !nodeHasTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) &&
				!nodeHasTaint(n, corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule), fmt.Sprint(n.Spec.Taints)
		})
		e.waitPods(t, "app=lost", 30*time.Second, "the evicted pods gone", exactlyAvailable(4, a))
	})
	t.Logf("node loss done at %v", time.Since(start).Round(time.Millisecond))
}
