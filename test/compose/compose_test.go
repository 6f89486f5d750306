// Package compose tests the cluster in containers (deploy/compose.yaml) on
// the real Docker engine: the steps, each printed as it runs.
package compose

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const project = "minik"

var root = func() string { r, _ := filepath.Abs("../.."); return r }()

// cluster is the running compose cluster as the test drives it.
type cluster struct {
	t  *testing.T
	cs *kubernetes.Clientset
	// untimed has no client timeout: it waits for the apiserver's own.
	untimed *kubernetes.Clientset
	start   time.Time
}

// step prints a step with the time since the test began.
func (c *cluster) step(format string, args ...any) {
	c.t.Helper()
	c.t.Logf("[%6.1fs] %s", time.Since(c.start).Seconds(), fmt.Sprintf(format, args...))
}

func run(t *testing.T, dir string, timeout time.Duration, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (c *cluster) compose(args ...string) {
	c.t.Helper()
	full := append([]string{"-f", "deploy/compose.yaml", "-p", project}, args...)
	if out, err := run(c.t, root, 3*time.Minute, "docker-compose", full...); err != nil {
		c.t.Fatalf("docker-compose %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// eventually polls cond every 500ms until it holds or d passes.
func (c *cluster) eventually(d time.Duration, what string, cond func() (bool, string)) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	last := ""
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(500 * time.Millisecond)
	}
	c.t.Fatalf("timed out after %v waiting for %s; last: %s", d, what, last)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// ctx is a context that ends after d (its timer frees it then).
func ctx(d time.Duration) context.Context {
	c, cancel := context.WithTimeout(context.Background(), d)
	time.AfterFunc(d, cancel)
	return c
}

// TestComposeCluster builds the images with no registry, brings the
// compose cluster up and runs the steps: scheduling with
// anti-affinity and the master's taint, a page fetched across nodes by
// pod IP, a node's credential refused a Secret, node loss and return, etcd
// members lost (one: writes go on; two: requests fail in time, then
// recover), an apiserver restart, the leading scheduler stopped, and
// compose-down leaving nothing. Bounded to 10 minutes.
func TestComposeCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds images and runs a cluster in Docker; skipped with -short")
	}
	for _, tool := range []string{"docker", "kubectl"} { // images.sh installs docker-compose and debootstrap
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (CI installs it: deploy/deps.sh)", tool)
		}
	}
	c := &cluster{t: t, start: time.Now()}
	deadline := time.AfterFunc(10*time.Minute, func() {
		fmt.Fprintln(os.Stderr, "compose test: 10 minutes passed; taking the cluster down")
		_, _ = run(t, root, 2*time.Minute, "make", "compose-down")
		os.Exit(1)
	})
	defer deadline.Stop()
	_, _ = run(t, root, 2*time.Minute, "make", "compose-down") // what an earlier run left
	t.Cleanup(func() {
		if t.Failed() {
			// What explains most failures first (CI shows a failure's
			// first lines): the pods, who leads, the schedulers' and the
			// controller's last words; then every container's.
			kc := filepath.Join(root, "deploy/.kube/config")
			for _, args := range [][]string{{"get", "pods", "-A", "-o", "wide"}, {"get", "leases", "-n", "kube-system"},
				{"get", "events", "-A", "--sort-by=.lastTimestamp"}} {
				out, _ := run(t, root, 30*time.Second, "kubectl", append([]string{"--kubeconfig", kc, "--request-timeout", "10s"}, args...)...)
				t.Logf("kubectl %s:\n%s", strings.Join(args, " "), lastLines(out, 8))
			}
			for _, svc := range []string{"scheduler", "scheduler2", "controller"} {
				out, _ := run(t, root, time.Minute, "docker-compose", "-f", "deploy/compose.yaml", "-p", project, "logs", "--no-color", "--tail", "10", svc)
				t.Logf("%s's last logs:\n%s", svc, out)
			}
			out, _ := run(t, root, time.Minute, "docker-compose", "-f", "deploy/compose.yaml", "-p", project, "logs", "--no-color", "--tail", "30")
			t.Logf("last logs:\n%s", out)
			_, _ = run(t, root, 2*time.Minute, "make", "compose-down")
		}
	})

	c.step("1. build the images (no registry) and bring the cluster up")
	// make compose-up's steps, with the binary the test run shares
	// (MINIK_BIN) rather than rebuilding bin/minik under other tests.
	if out, err := run(t, root, 6*time.Minute, "bash", "deploy/compose/images.sh"); err != nil {
		t.Fatalf("building the images: %v\n%s", err, out)
	}
	c.step("   images built")
	up := time.Now()
	c.compose("up", "-d")
	if out, err := run(t, root, 3*time.Minute, "bash", "deploy/compose/wait.sh"); err != nil {
		t.Fatalf("waiting for 3 Ready nodes: %v\n%s", err, out)
	}
	if took := time.Since(up); took > 60*time.Second {
		t.Fatalf("3 Ready nodes took %v after compose up, want at most 60s", took)
	}
	kc := filepath.Join(root, "deploy/.kube/config")
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	c.untimed = kubernetes.NewForConfigOrDie(cfg)
	cfg.Timeout = 20 * time.Second
	c.cs = kubernetes.NewForConfigOrDie(cfg)
	c.step("   3 nodes Ready")

	c.antiAffinity()
	c.acrossNodes()
	c.nodeCannotReadOtherSecrets()
	c.nodeLost()
	c.etcdMembersLost()
	c.apiserverRestarted()
	c.leaderSchedulerStopped()

	c.step("5. make compose-down leaves no container, network or volume")
	if out, err := run(t, root, 2*time.Minute, "make", "compose-down"); err != nil {
		t.Fatalf("make compose-down: %v\n%s", err, out)
	}
	label := "label=com.docker.compose.project=" + project
	for _, what := range [][]string{{"ps", "-a", "-q", "--filter", label}, {"network", "ls", "-q", "--filter", label}, {"volume", "ls", "-q", "--filter", label}} {
		out, err := run(t, root, time.Minute, "docker", what...)
		if err != nil || strings.TrimSpace(out) != "" {
			t.Fatalf("docker %s after compose-down: %q (%v)", strings.Join(what, " "), out, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "deploy/.pki")); !os.IsNotExist(err) {
		t.Fatalf("deploy/.pki is still there (%v)", err)
	}
	c.step("done")
}

func int32p(v int32) *int32 { return &v }
func int64p(v int64) *int64 { return &v }

func deployment(name string, replicas int32, spec corev1.PodSpec) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: int32p(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}},
	}
}

func sleeper() []corev1.Container {
	return []corev1.Container{{Name: "c", Image: "busybox", ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"}}}
}

func (c *cluster) pods(app string) []corev1.Pod {
	l, err := c.cs.CoreV1().Pods("default").List(ctx(20*time.Second), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return nil
	}
	return l.Items
}

func (c *cluster) antiAffinity() {
	c.step("2. a Deployment of 4 with required anti-affinity on the host name: 2 run (node01, node02), 2 stay Pending")
	aff := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}}, TopologyKey: corev1.LabelHostname}}}}
	if _, err := c.cs.AppsV1().Deployments("default").Create(ctx(20*time.Second),
		deployment("spread", 4, corev1.PodSpec{Affinity: aff, Containers: sleeper()}), metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	c.eventually(90*time.Second, "2 running pods on node01 and node02, 2 pending", func() (bool, string) {
		var running, pending []string
		for _, p := range c.pods("spread") {
			switch p.Status.Phase {
			case corev1.PodRunning:
				running = append(running, p.Spec.NodeName)
			case corev1.PodPending:
				if p.Spec.NodeName == "" {
					pending = append(pending, p.Name)
				}
			}
		}
		ok := len(running) == 2 && len(pending) == 2 && strings.Contains(strings.Join(running, ","), "node01") && strings.Contains(strings.Join(running, ","), "node02")
		return ok, fmt.Sprintf("running on %v, pending %v", running, pending)
	})
	c.eventually(60*time.Second, "a FailedScheduling event naming the untolerated taint and the anti-affinity rule", func() (bool, string) {
		evs, err := c.cs.CoreV1().Events("default").List(ctx(20*time.Second), metav1.ListOptions{FieldSelector: "reason=FailedScheduling"})
		if err != nil {
			return false, err.Error()
		}
		var msgs []string
		for _, e := range evs.Items {
			if strings.HasPrefix(e.InvolvedObject.Name, "spread-") {
				if strings.Contains(e.Message, "1 node(s) had untolerated taint(s)") && strings.Contains(e.Message, "2 node(s) didn't match pod anti-affinity rules") {
					c.step("   FailedScheduling: %s", e.Message)
					return true, ""
				}
				msgs = append(msgs, e.Message)
			}
		}
		return false, strings.Join(msgs, " | ")
	})
	if err := c.cs.AppsV1().Deployments("default").Delete(ctx(20*time.Second), "spread", metav1.DeleteOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) acrossNodes() {
	c.step("3. a pod on node01 fetches a page from a busybox httpd pod on node02 by pod IP")
	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "node02", Containers: []corev1.Container{{Name: "httpd", Image: "busybox", ImagePullPolicy: corev1.PullNever,
			Command: []string{"sh", "-c", "echo hello-from-node02 > /tmp/index.html; exec httpd -f -p 8080 -h /tmp"}}}}}
	if _, err := c.cs.CoreV1().Pods("default").Create(ctx(20*time.Second), web, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	var ip string
	c.eventually(60*time.Second, "the httpd pod running on node02", func() (bool, string) {
		p, err := c.cs.CoreV1().Pods("default").Get(ctx(20*time.Second), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ip = p.Status.PodIP
		return p.Status.Phase == corev1.PodRunning && ip != "", string(p.Status.Phase)
	})
	// busybox's nc: Debian's static wget needs NSS pieces a minimal image lacks.
	client := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fetch", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "node01", RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox",
			ImagePullPolicy: corev1.PullNever, Command: []string{"sh", "-c", fmt.Sprintf(`printf 'GET /index.html HTTP/1.0\r\n\r\n' | nc -w 5 %s 8080`, ip)}}}}}
	if _, err := c.cs.CoreV1().Pods("default").Create(ctx(20*time.Second), client, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	c.eventually(60*time.Second, "the client pod on node01 to finish", func() (bool, string) {
		p, err := c.cs.CoreV1().Pods("default").Get(ctx(20*time.Second), "fetch", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, string(p.Status.Phase)
	})
	logs, err := c.cs.CoreV1().Pods("default").GetLogs("fetch", &corev1.PodLogOptions{}).DoRaw(ctx(20 * time.Second))
	if err != nil || !strings.Contains(string(logs), "hello-from-node02") {
		c.t.Fatalf("the page from %s (node02) read on node01: %q (%v)", ip, logs, err)
	}
	c.step("   node01 read %q from %s on node02 (kubectl logs through node01's kubelet)", "hello-from-node02", ip)

	c.step("   the same page through a Service, by name and by FQDN (the cluster DNS container, the node proxy's nftables on node01)")
	svc, err := c.cs.CoreV1().Services("default").Create(ctx(20*time.Second), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}},
		metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	viaSvc := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fetch-svc", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "node01", RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{{Name: "c", Image: "busybox",
			ImagePullPolicy: corev1.PullNever, Command: []string{"sh", "-c",
				`timeout 5 wget -qO- http://web/index.html | grep hello-from-node02 && timeout 5 wget -qO- http://web.default.svc.cluster.local/index.html | grep hello-from-node02`}}}}}
	if _, err := c.cs.CoreV1().Pods("default").Create(ctx(20*time.Second), viaSvc, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	c.eventually(90*time.Second, "the page through the Service's name", func() (bool, string) {
		p, err := c.cs.CoreV1().Pods("default").Get(ctx(20*time.Second), "fetch-svc", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodSucceeded, string(p.Status.Phase)
	})
	c.step("   node01 read it from http://web and http://web.default.svc.cluster.local (ClusterIP %s)", svc.Spec.ClusterIP)

	c.step("   kubectl exec and port-forward to the pod on node02")
	kc := "--kubeconfig=" + filepath.Join(root, "deploy/.kube/config")
	if out, err := run(c.t, root, 30*time.Second, "kubectl", kc, "exec", "web", "--", "cat", "/tmp/index.html"); err != nil || !strings.Contains(out, "hello-from-node02") {
		c.t.Fatalf("kubectl exec web: %q (%v)", out, err)
	}
	pf := exec.Command("kubectl", kc, "port-forward", "pod/web", "18080:8080")
	var pfOut bytes.Buffer
	pf.Stdout, pf.Stderr = &pfOut, &pfOut
	if err := pf.Start(); err != nil {
		c.t.Fatal(err)
	}
	defer func() { _ = pf.Process.Kill(); _ = pf.Wait() }()
	c.eventually(30*time.Second, "a page through kubectl port-forward", func() (bool, string) {
		resp, err := http.Get("http://127.0.0.1:18080/index.html")
		if err != nil {
			return false, err.Error() + " " + pfOut.String()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), "hello-from-node02"), string(b)
	})
}

func (c *cluster) nodeCannotReadOtherSecrets() {
	c.step("   node01's credential cannot read a Secret no pod of node01 uses")
	if _, err := c.cs.CoreV1().Secrets("default").Create(ctx(20*time.Second), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "not-node01s"},
		StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("https://127.0.0.1:6443", filepath.Join(root, "deploy/.pki/node-node01/kubelet.kubeconfig"))
	if err != nil {
		c.t.Fatal(err)
	}
	node01 := kubernetes.NewForConfigOrDie(cfg)
	_, err = node01.CoreV1().Secrets("default").Get(ctx(20*time.Second), "not-node01s", metav1.GetOptions{})
	if !apierrors.IsForbidden(err) {
		c.t.Fatalf("node01 reading a Secret no pod of it uses: err = %v, want Forbidden", err)
	}
	c.step("   refused: %v", err)
}

func nodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status
		}
	}
	return corev1.ConditionUnknown
}

func (c *cluster) node(name string) *corev1.Node {
	n, err := c.cs.CoreV1().Nodes().Get(ctx(20*time.Second), name, metav1.GetOptions{})
	if err != nil {
		return &corev1.Node{}
	}
	return n
}

func (c *cluster) nodeLost() {
	c.step("4a. node02 stopped: NotReady, the unreachable NoExecute taint, its pods recreated on node01 after 10s tolerations")
	tolerate := []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: int64p(10)},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: int64p(10)},
	}
	one := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
		Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "mover"}}, TopologyKey: corev1.LabelHostname}}}}}
	if _, err := c.cs.AppsV1().Deployments("default").Create(ctx(20*time.Second),
		deployment("mover", 2, corev1.PodSpec{Affinity: one, Tolerations: tolerate, Containers: sleeper()}), metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	c.eventually(60*time.Second, "a mover pod running on node01 and one on node02", func() (bool, string) {
		nodes := map[string]bool{}
		for _, p := range c.pods("mover") {
			if p.Status.Phase == corev1.PodRunning {
				nodes[p.Spec.NodeName] = true
			}
		}
		return nodes["node01"] && nodes["node02"], fmt.Sprint(nodes)
	})
	stopped := time.Now()
	c.compose("stop", "node02")
	c.eventually(90*time.Second, "node02 NotReady (Unknown) with the unreachable NoExecute taint", func() (bool, string) {
		n := c.node("node02")
		tainted := false
		for _, tn := range n.Spec.Taints {
			tainted = tainted || tn.Key == corev1.TaintNodeUnreachable && tn.Effect == corev1.TaintEffectNoExecute
		}
		return nodeReady(n) != corev1.ConditionTrue && tainted, fmt.Sprintf("Ready=%s taints=%v", nodeReady(n), n.Spec.Taints)
	})
	c.step("   node02 NotReady and tainted after %v", time.Since(stopped).Round(time.Second))
	c.eventually(90*time.Second, "both mover pods running on node01", func() (bool, string) {
		var on []string
		for _, p := range c.pods("mover") {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				on = append(on, p.Spec.NodeName)
			}
		}
		return len(on) == 2 && on[0] == "node01" && on[1] == "node01", fmt.Sprint(on)
	})
	c.step("   recreated on node01 %v after the stop", time.Since(stopped).Round(time.Second))
	c.compose("start", "node02")
	c.eventually(120*time.Second, "node02 Ready again", func() (bool, string) {
		n := c.node("node02")
		return nodeReady(n) == corev1.ConditionTrue, string(nodeReady(n))
	})
	c.step("   node02 rejoined")
}

func (c *cluster) createConfigMap(name string, timeout time.Duration) error {
	_, err := c.cs.CoreV1().ConfigMaps("default").Create(ctx(timeout), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	return err
}

func (c *cluster) etcdMembersLost() {
	c.step("4b. one etcd member stopped: writes continue")
	if err := c.createConfigMap("acked-before", 20*time.Second); err != nil {
		c.t.Fatal(err)
	}
	c.compose("stop", "etcd2")
	c.eventually(30*time.Second, "a write with etcd2 stopped", func() (bool, string) {
		err := c.createConfigMap("with-two-members", 10*time.Second)
		return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err)
	})
	c.step("   two stopped: a write fails with the apiserver's error within its 15s request timeout")
	c.compose("stop", "etcd1")
	begin := time.Now()
	_, err := c.untimed.CoreV1().ConfigMaps("default").Create(ctx(45*time.Second),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "without-quorum"}}, metav1.CreateOptions{})
	took := time.Since(begin)
	// 15s, and slack for a loaded machine: what matters is that the
	// apiserver answers with its Status rather than hanging.
	if _, isStatus := err.(apierrors.APIStatus); err == nil || !isStatus || took > 30*time.Second {
		c.t.Fatalf("a write without quorum: err = %v after %v, want the apiserver's error Status within the timeout", err, took)
	}
	c.step("   failed after %v: %v", took.Round(100*time.Millisecond), err)
	c.compose("start", "etcd1")
	c.eventually(90*time.Second, "writes again once etcd1 is back", func() (bool, string) {
		err := c.createConfigMap("quorum-again", 10*time.Second)
		return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err)
	})
	c.compose("start", "etcd2")
	c.step("   writes succeed again")
}

func (c *cluster) apiserverRestarted() {
	c.step("4c. the apiserver restarted: components resume their watches, nothing acknowledged is lost")
	c.compose("restart", "apiserver")
	c.eventually(60*time.Second, "the acknowledged ConfigMaps after the restart", func() (bool, string) {
		for _, n := range []string{"acked-before", "with-two-members", "quorum-again"} {
			if _, err := c.cs.CoreV1().ConfigMaps("default").Get(ctx(10*time.Second), n, metav1.GetOptions{}); err != nil {
				return false, n + ": " + err.Error()
			}
		}
		return true, ""
	})
	c.runsAPod("after-restart", 90*time.Second)
	c.step("   a new pod was scheduled and started (scheduler and kubelet watches resumed)")
}

// runsAPod creates a pod and waits until it runs.
func (c *cluster) runsAPod(name string, d time.Duration) {
	c.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{Containers: sleeper()}}
	if _, err := c.cs.CoreV1().Pods("default").Create(ctx(20*time.Second), p, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	c.eventually(d, "pod "+name+" running", func() (bool, string) {
		p, err := c.cs.CoreV1().Pods("default").Get(ctx(10*time.Second), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning, fmt.Sprintf("%s on %q", p.Status.Phase, p.Spec.NodeName)
	})
}

func (c *cluster) leaderSchedulerStopped() {
	c.step("4d. the leading scheduler stopped: the standby takes over")
	lease, err := c.cs.CoordinationV1().Leases("kube-system").Get(ctx(20*time.Second), "kube-scheduler", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		c.t.Fatalf("the scheduler's Lease: %v", err)
	}
	holder := *lease.Spec.HolderIdentity
	leader := ""
	for _, svc := range []string{"scheduler", "scheduler2"} {
		out, err := run(c.t, root, time.Minute, "docker-compose", "-f", "deploy/compose.yaml", "-p", project, "ps", "-q", svc)
		if err != nil {
			c.t.Fatal(err)
		}
		if id := strings.TrimSpace(out); len(id) >= 12 && strings.HasPrefix(holder, id[:12]) {
			leader = svc
		}
	}
	if leader == "" {
		c.t.Fatalf("no scheduler container holds the Lease (holder %q)", holder)
	}
	c.step("   %s leads (%s); stopping it", leader, holder)
	c.compose("stop", leader)
	c.runsAPod("after-failover", 90*time.Second)
	lease, err = c.cs.CoordinationV1().Leases("kube-system").Get(ctx(20*time.Second), "kube-scheduler", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == holder {
		c.t.Fatalf("the Lease after the failover: %v, holder %v", err, lease.Spec.HolderIdentity)
	}
	c.step("   the standby (%s) scheduled a new pod", *lease.Spec.HolderIdentity)
	c.compose("start", leader)
}
