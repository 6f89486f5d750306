// Package e2e runs pods on `minik up` with two real kubelets, containerd
// and runc: what Kubernetes users expect of a pod's lifecycle. It needs
// root, containerd, runc, Debian's busybox .deb and containernetworking-plugins
// (CI installs them); `minik up` starts its own containerd when
// /run/containerd/containerd.sock does not answer.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"minik/deploy/images"
	"minik/internal/testcluster"
)

// env is one cluster, started by each Test function that needs one and
// shared by its subtests.
type env struct {
	c       *testcluster.Cluster
	cs      *kubernetes.Clientset
	nodes   [2]string
	dataDir string
	// podCIDRs are read at cleanup, to remove the nodes' host rules.
	podCIDRs map[string]string
}

// startCluster runs `minik up` with two kubelets and the busybox image.
func startCluster(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs root and containerd; skipped under -short")
	}
	if os.Geteuid() != 0 {
		t.Fatal("the end-to-end tests run containers and must run as root")
	}
	archive := filepath.Join(t.TempDir(), "busybox.tar")
	if err := images.BuildBusybox(archive, images.DefaultBusyboxPath); err != nil {
		t.Fatal(err)
	}
	// Node names are unique per run: the containerd namespace is per node,
	// and a system containerd may be shared with other runs.
	id := fmt.Sprintf("%x", os.Getpid()&0xffff)
	e := &env{nodes: [2]string{"e2e-" + id + "-a", "e2e-" + id + "-b"}}
	// Reachable from pods at the host's address (busybox's wget, the pods'
	// HTTPS client, is served because minik sets tlssha1=1: see cmd/minik).
	e.c = testcluster.StartReachable(t, nil, "--kubelet=true", "--nodes", e.nodes[0]+","+e.nodes[1], "--preload-images", archive,
		"--horizontal-pod-autoscaler-sync-period", "2s")
	e.dataDir = e.c.DataDir
	e.cs = e.c.Clientset()
	t.Cleanup(func() { e.cleanup(t) })
	for _, n := range e.nodes {
		e.waitNodeReady(t, n)
	}
	return e
}

func (e *env) waitNodeReady(t *testing.T, name string) {
	t.Helper()
	waitFor(t, 60*time.Second, "node "+name+" Ready", func() (bool, string) {
		n, err := e.cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprintf("conditions %v", n.Status.Conditions)
	})
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("waited %v for %s; last: %s", timeout, what, last)
}

// podBuilder makes test pods: makePod("x").Cmd("echo hi").Obj().
type podBuilder struct{ p *corev1.Pod }

func makePod(name, node string) *podBuilder {
	grace := int64(1)
	return &podBuilder{&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "main", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sh", "-c", "sleep 3600"}}},
		},
	}}
}

func (b *podBuilder) Sh(script string) *podBuilder {
	b.p.Spec.Containers[0].Command = []string{"sh", "-c", script}
	return b
}
func (b *podBuilder) Restart(p corev1.RestartPolicy) *podBuilder {
	b.p.Spec.RestartPolicy = p
	return b
}
func (b *podBuilder) Label(k, v string) *podBuilder {
	if b.p.Labels == nil {
		b.p.Labels = map[string]string{}
	}
	b.p.Labels[k] = v
	return b
}
func (b *podBuilder) With(f func(p *corev1.Pod)) *podBuilder { f(b.p); return b }
func (b *podBuilder) Obj() *corev1.Pod                       { return b.p }

func (e *env) create(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	out, err := e.cs.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", p.Name, err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = e.cs.CoreV1().Pods(p.Namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	return out
}

func (e *env) get(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	p, err := e.cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting pod %s: %v", name, err)
	}
	return p
}

// waitPod waits until cond holds for the pod.
func (e *env) waitPod(t *testing.T, name string, timeout time.Duration, what string, cond func(p *corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	waitFor(t, timeout, "pod "+name+" "+what, func() (bool, string) {
		var err error
		p, err = e.cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cond(p), fmt.Sprintf("phase %s, containers %+v", p.Status.Phase, p.Status.ContainerStatuses)
	})
	return p
}

func phaseIs(ph corev1.PodPhase) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return p.Status.Phase == ph }
}

func running(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (e *env) logs(t *testing.T, name string, args ...string) string {
	t.Helper()
	return e.c.MustKubectl(t, "", append([]string{"logs", name}, args...)...)
}

func (e *env) events(t *testing.T, name string) map[string]int {
	t.Helper()
	list, err := e.cs.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, ev := range list.Items {
		if ev.InvolvedObject.Name == name {
			out[ev.Reason] += int(max(ev.Count, 1))
		}
	}
	return out
}

// waitEvents waits for an event of each reason about the named object:
// the recorder writes events after the status they go with.
func (e *env) waitEvents(t *testing.T, name string, reasons ...string) {
	t.Helper()
	waitFor(t, 15*time.Second, fmt.Sprintf("events %v about %s", reasons, name), func() (bool, string) {
		ev := e.events(t, name)
		for _, r := range reasons {
			if ev[r] == 0 {
				return false, fmt.Sprint(ev)
			}
		}
		return true, ""
	})
}

func TestKubelet(t *testing.T) {
	e := startCluster(t)
	a, b := e.nodes[0], e.nodes[1]

	t.Run("interactive", e.testInteractive)

	t.Run("pods", func(t *testing.T) {
		t.Run("a pod runs to Succeeded and its logs read back", func(t *testing.T) {
			t.Parallel()
			e.create(t, makePod("succeed", b).Sh("echo hello; echo world").Restart(corev1.RestartPolicyNever).Obj())
			p := e.waitPod(t, "succeed", 60*time.Second, "Succeeded", phaseIs(corev1.PodSucceeded))
			st := p.Status.ContainerStatuses[0].State.Terminated
			if st == nil || st.ExitCode != 0 || st.Reason != "Completed" {
				t.Errorf("terminated state %+v, want exit 0 Completed", st)
			}
			if got := e.logs(t, "succeed"); got != "hello\nworld\n" {
				t.Errorf("logs %q, want %q", got, "hello\nworld\n")
			}
			if got := e.logs(t, "succeed", "--tail", "1"); got != "world\n" {
				t.Errorf("logs --tail 1 = %q, want %q", got, "world\n")
			}
			if p.Status.PodIP == "" || p.Status.HostIP == "" || p.Status.StartTime == nil || p.Status.QOSClass != corev1.PodQOSBestEffort {
				t.Errorf("status lacks podIP, hostIP, startTime or qosClass: %+v", p.Status)
			}
			e.waitEvents(t, "succeed", "Pulled", "Created", "Started")
		})

		t.Run("kubectl logs --timestamps, --since-time, --since and --limit-bytes", func(t *testing.T) {
			t.Parallel()
			e.create(t, makePod("stamps", b).Sh("echo first; sleep 2; echo second; sleep 3600").Obj())
			waitFor(t, 60*time.Second, "both lines logged", func() (bool, string) {
				out, _ := e.c.Kubectl(context.Background(), "", "logs", "stamps")
				return out == "first\nsecond\n", out
			})
			lines := strings.Split(strings.TrimSuffix(e.logs(t, "stamps", "--timestamps"), "\n"), "\n")
			if len(lines) != 2 {
				t.Fatalf("--timestamps printed %q, want two lines", lines)
			}
			var at [2]time.Time
			for i, want := range []string{"first", "second"} {
				ts, text, _ := strings.Cut(lines[i], " ")
				var err error
				// The kubelet's format: RFC 3339 with always nine digits.
				if at[i], err = time.Parse(time.RFC3339Nano, ts); err != nil || len(ts) != len("2006-01-02T15:04:05.000000000Z") || text != want {
					t.Fatalf("line %q: want a fixed-width RFC 3339 time, then %q (%v)", lines[i], want, err)
				}
			}
			if d := at[1].Sub(at[0]); d < 1500*time.Millisecond || d > 10*time.Second {
				t.Errorf("the lines are stamped %v apart; the container slept 2s between them", d)
			}
			// kubectl sends --since-time to the second; the lines are 2s apart.
			if got := e.logs(t, "stamps", "--since-time", at[1].UTC().Format(time.RFC3339)); got != "second\n" {
				t.Errorf("--since-time of the second line: %q", got)
			}
			if got := e.logs(t, "stamps", "--limit-bytes", "3"); got != "fir" {
				t.Errorf("--limit-bytes 3: %q", got)
			}
			if got := e.logs(t, "stamps", "--since", "1h"); got != "first\nsecond\n" {
				t.Errorf("--since 1h: %q", got)
			}
			time.Sleep(time.Until(at[1].Add(2500 * time.Millisecond)))
			if got := e.logs(t, "stamps", "--since", "2s"); got != "" {
				t.Errorf("--since 2s, 2.5s after the last line: %q, want nothing", got)
			}
			zero := int64(0)
			err := e.cs.CoreV1().Pods("default").GetLogs("stamps", &corev1.PodLogOptions{LimitBytes: &zero}).Do(context.Background()).Error()
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "limitBytes") {
				t.Errorf("limitBytes=0: %v, want 422 Invalid about limitBytes", err)
			}
		})

		t.Run("kubectl exec runs commands with their output, input and exit code", func(t *testing.T) {
			t.Parallel()
			e.create(t, makePod("execme", a).Obj())
			e.waitPod(t, "execme", 60*time.Second, "Running", running)
			if got := e.c.MustKubectl(t, "", "exec", "execme", "--", "echo", "hi"); got != "hi\n" {
				t.Errorf("kubectl exec echo hi printed %q", got)
			}
			if got := e.c.MustKubectl(t, "hello\n", "exec", "-i", "execme", "--", "cat"); got != "hello\n" {
				t.Errorf("kubectl exec -i cat printed %q, want its input", got)
			}
			if got := e.c.MustKubectl(t, "", "exec", "execme", "-c", "main", "--", "sh", "-c", "echo oops >&2"); got != "oops\n" {
				t.Errorf("stderr came back as %q", got)
			}
			out, err := e.c.Kubectl(context.Background(), "", "exec", "execme", "--", "sh", "-c", "exit 3")
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 3 {
				t.Errorf("kubectl exec of exit 3: %v (%q), want kubectl to exit with 3", err, out)
			}
			// script (util-linux) gives kubectl a terminal, so that -t is honoured.
			tty, err := exec.Command("script", "-qec", "kubectl --kubeconfig "+e.c.Kubeconfig+" exec -it execme -- tty", "/dev/null").CombinedOutput()
			// script's own terminal may echo a stray ^@ as its input ends,
			// before or after the command's output.
			if err != nil || !strings.HasPrefix(strings.TrimPrefix(string(tty), "^@"), "/dev/pts/") {
				t.Errorf("kubectl exec -it tty: %v, %q; want a /dev/pts terminal", err, tty)
			}
		})

		t.Run("kubectl port-forward reaches the pod's localhost, over WebSocket and over SPDY", func(t *testing.T) {
			t.Parallel()
			// httpd on the pod's 127.0.0.1 only: no pod-IP route reaches it.
			e.create(t, makePod("forward", b).Sh("mkdir -p /tmp/w && echo hello from the pod > /tmp/w/index.html && exec httpd -f -p 127.0.0.1:8080 -h /tmp/w").Obj())
			e.waitPod(t, "forward", 60*time.Second, "Running", running)
			// kubectl 1.30+ tunnels SPDY in a WebSocket; with the feature
			// off it upgrades to SPDY itself.
			for _, websockets := range []string{"true", "false"} {
				local := portForward(t, e.c.Kubeconfig, websockets, "pod/forward", "8080")
				var body string
				waitFor(t, 20*time.Second, "the page through the forwarded port", func() (bool, string) {
					resp, err := http.Get("http://" + local + "/")
					if err != nil {
						return false, err.Error()
					}
					defer resp.Body.Close()
					data, _ := io.ReadAll(resp.Body)
					body = string(data)
					return resp.StatusCode == 200, resp.Status
				})
				if body != "hello from the pod\n" {
					t.Errorf("websockets=%s: page %q", websockets, body)
				}
			}
		})

		t.Run("a crashing pod reaches CrashLoopBackOff with a growing restartCount", func(t *testing.T) {
			t.Parallel()
			e.create(t, makePod("crash", a).Sh("echo boom; exit 2").Obj())
			p := e.waitPod(t, "crash", 60*time.Second, "in CrashLoopBackOff after 2 restarts", func(p *corev1.Pod) bool {
				if len(p.Status.ContainerStatuses) == 0 {
					return false
				}
				cs := p.Status.ContainerStatuses[0]
				return cs.RestartCount >= 2 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
			})
			cs := p.Status.ContainerStatuses[0]
			if lt := cs.LastTerminationState.Terminated; lt == nil || lt.ExitCode != 2 || lt.Reason != "Error" {
				t.Errorf("lastState.terminated = %+v, want exit 2 Error", lt)
			}
			if p.Status.Phase != corev1.PodRunning {
				t.Errorf("phase %s, want Running (restartPolicy Always)", p.Status.Phase)
			}
			if got := e.logs(t, "crash", "--previous"); got != "boom\n" {
				t.Errorf("logs --previous = %q", got)
			}
			// The recorder writes events after the status they go with.
			waitFor(t, 15*time.Second, "a BackOff event or two Started events about crash", func() (bool, string) {
				ev := e.events(t, "crash")
				return ev["BackOff"] > 0 || ev["Started"] >= 2, fmt.Sprint(ev)
			})
		})

		t.Run("a container killed behind the kubelet's back is restarted at once, through containerd's events", func(t *testing.T) {
			t.Parallel()
			// A unique command line finds the container's process on the host.
			marker := fmt.Sprintf("%d", 31000000+os.Getpid())
			e.create(t, makePod("killed", a).Sh("exec sleep "+marker).Obj())
			e.waitPod(t, "killed", 60*time.Second, "Running", running)
			pid := processWithArgs(t, "sleep", marker)
			start := time.Now()
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			e.waitPod(t, "killed", 20*time.Second, "running again after 1 restart", func(p *corev1.Pod) bool {
				return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount == 1 &&
					p.Status.ContainerStatuses[0].State.Running != nil
			})
			// The relist runs every 30s while events flow: a restart
			// this soon came from the exit event.
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the restart was seen after %v, want well under the 30s relist period", d)
			} else {
				t.Logf("restart seen after %v", d)
			}
			raw, err := e.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(`(?m)^kubelet_evented_pleg_connection_success_count [1-9]`).Match(raw) {
				t.Error("kubelet_evented_pleg_connection_success_count is not positive: the kubelets never subscribed to events")
			}
		})

		t.Run("with restartPolicy Never a failing pod goes Failed with its exit code", func(t *testing.T) {
			t.Parallel()
			e.create(t, makePod("fail", b).Sh("exit 3").Restart(corev1.RestartPolicyNever).Obj())
			p := e.waitPod(t, "fail", 60*time.Second, "Failed", phaseIs(corev1.PodFailed))
			st := p.Status.ContainerStatuses[0].State.Terminated
			if st == nil || st.ExitCode != 3 || st.Reason != "Error" {
				t.Errorf("terminated %+v, want exit 3 Error", st)
			}
			if p.Status.ContainerStatuses[0].RestartCount != 0 {
				t.Errorf("restartCount %d, want 0", p.Status.ContainerStatuses[0].RestartCount)
			}
		})

		t.Run("env and downward API values printed by the container are right", func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			if _, err := e.cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "e2e-cm"},
				Data: map[string]string{"color": "blue", "size": "L"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
			if _, err := e.cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "e2e-secret"},
				Data: map[string][]byte{"password": []byte("s3cret")}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
			field := func(path string) *corev1.EnvVarSource {
				return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
			}
			p := makePod("env", a).Label("tier", "web").Restart(corev1.RestartPolicyNever).
				Sh(`echo "PLAIN=$PLAIN"; echo "EXPANDED=$EXPANDED"; echo "NAME=$MY_NAME"; echo "NS=$MY_NS"; echo "UID=$MY_UID"; echo "TIER=$MY_TIER"; echo "NODE=$MY_NODE"; echo "SA=$MY_SA"; echo "POD_IP=$MY_POD_IP"; echo "HOST_IP=$MY_HOST_IP"; echo "MEM=$MEM_LIMIT_MI"; echo "CPU=$CPU_REQ_M"; echo "COLOR=$COLOR"; echo "PASSWORD=$PASSWORD"; echo "CM_size=$CM_size"; echo "LABELS=$(cat /etc/podinfo/labels)"; echo "VOLNAME=$(cat /etc/podinfo/name)"; echo "CMFILE=$(cat /etc/cm/color)"; echo "SECFILE=$(cat /etc/secret/password)"; echo "SECFS=$(grep ' /etc/secret ' /proc/mounts | cut -d' ' -f3)"; echo "SECSIZE=$(grep ' /etc/secret ' /proc/mounts | grep -o 'size=[0-9]*k')"; echo "IP_ADDR=$(ip -4 addr show eth0 | grep -o 'inet [0-9.]*' | cut -d' ' -f2)"`).
				With(func(p *corev1.Pod) {
					c := &p.Spec.Containers[0]
					c.Resources = corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
						Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
					}
					c.Env = []corev1.EnvVar{
						{Name: "PLAIN", Value: "plain value"},
						{Name: "EXPANDED", Value: "$(PLAIN)!"},
						{Name: "MY_NAME", ValueFrom: field("metadata.name")},
						{Name: "MY_NS", ValueFrom: field("metadata.namespace")},
						{Name: "MY_UID", ValueFrom: field("metadata.uid")},
						{Name: "MY_TIER", ValueFrom: field("metadata.labels['tier']")},
						{Name: "MY_NODE", ValueFrom: field("spec.nodeName")},
						{Name: "MY_SA", ValueFrom: field("spec.serviceAccountName")},
						{Name: "MY_POD_IP", ValueFrom: field("status.podIP")},
						{Name: "MY_HOST_IP", ValueFrom: field("status.hostIP")},
						{Name: "MEM_LIMIT_MI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
						{Name: "CPU_REQ_M", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}}},
						{Name: "COLOR", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "e2e-cm"}, Key: "color"}}},
						{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "e2e-secret"}, Key: "password"}}},
					}
					c.EnvFrom = []corev1.EnvFromSource{{Prefix: "CM_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "e2e-cm"}}}}
					c.VolumeMounts = []corev1.VolumeMount{{Name: "podinfo", MountPath: "/etc/podinfo"}, {Name: "cm", MountPath: "/etc/cm"}, {Name: "secret", MountPath: "/etc/secret"}}
					p.Spec.Volumes = []corev1.Volume{
						{Name: "podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
							{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
							{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
						}}}},
						{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "e2e-cm"}}}},
						{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "e2e-secret"}}},
					}
				}).Obj()
			created := e.create(t, p)
			done := e.waitPod(t, "env", 60*time.Second, "Succeeded", phaseIs(corev1.PodSucceeded))
			got := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(e.logs(t, "env")), "\n") {
				if k, v, ok := strings.Cut(line, "="); ok {
					got[k] = v
				}
			}
			sa := created.Spec.ServiceAccountName
			for k, want := range map[string]string{
				"PLAIN": "plain value", "EXPANDED": "plain value!", "NAME": "env", "NS": "default", "UID": string(created.UID),
				"TIER": "web", "NODE": a, "SA": sa, "POD_IP": done.Status.PodIP, "HOST_IP": done.Status.HostIP,
				"MEM": "64", "CPU": "250", "COLOR": "blue", "PASSWORD": "s3cret", "CM_size": "L",
				"LABELS": `tier="web"`, "VOLNAME": "env", "CMFILE": "blue", "IP_ADDR": done.Status.PodIP,
				// a secret volume is a tmpfs of the pod's memory limit, as in the kubelet
				"SECFILE": "s3cret", "SECFS": "tmpfs", "SECSIZE": "size=65536k",
			} {
				if got[k] != want {
					t.Errorf("%s = %q, want %q", k, got[k], want)
				}
			}
		})

		t.Run("hostAliases appear in /etc/hosts", func(t *testing.T) {
			t.Parallel()
			e.create(t, makePod("aliases", b).Sh("cat /etc/hosts").Restart(corev1.RestartPolicyNever).With(func(p *corev1.Pod) {
				p.Spec.HostAliases = []corev1.HostAlias{{IP: "10.9.8.7", Hostnames: []string{"foo.local", "bar.local"}}}
			}).Obj())
			p := e.waitPod(t, "aliases", 60*time.Second, "Succeeded", phaseIs(corev1.PodSucceeded))
			hosts := e.logs(t, "aliases")
			for _, want := range []string{"10.9.8.7\tfoo.local\tbar.local\n", p.Status.PodIP + "\taliases", "127.0.0.1\tlocalhost"} {
				if !strings.Contains(hosts, want) {
					t.Errorf("/etc/hosts lacks %q:\n%s", want, hosts)
				}
			}
		})

		t.Run("with runAsUser 1000 id -u prints 1000", func(t *testing.T) {
			t.Parallel()
			uid := int64(1000)
			e.create(t, makePod("runas", a).Sh("id -u").Restart(corev1.RestartPolicyNever).With(func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: &uid}
			}).Obj())
			e.waitPod(t, "runas", 60*time.Second, "Succeeded", phaseIs(corev1.PodSucceeded))
			if got := e.logs(t, "runas"); got != "1000\n" {
				t.Errorf("id -u printed %q, want 1000", got)
			}
		})

		t.Run("runAsNonRoot refuses an image that runs as root", func(t *testing.T) {
			t.Parallel()
			yes := true
			e.create(t, makePod("nonroot", b).With(func(p *corev1.Pod) {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: &yes}
			}).Obj())
			e.waitPod(t, "nonroot", 60*time.Second, "in CreateContainerConfigError", func(p *corev1.Pod) bool {
				return len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
					p.Status.ContainerStatuses[0].State.Waiting.Reason == "CreateContainerConfigError"
			})
		})

		t.Run("a failing exec liveness probe restarts the container", func(t *testing.T) {
			t.Parallel()
			e.create(t, makePod("liveness", a).With(func(p *corev1.Pod) {
				p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-e", "/tmp/never"}}},
					PeriodSeconds: 1, FailureThreshold: 2}
			}).Obj())
			e.waitPod(t, "liveness", 60*time.Second, "restarted", func(p *corev1.Pod) bool {
				return len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].RestartCount >= 1
			})
			e.waitEvents(t, "liveness", "Unhealthy", "Killing")
		})

		t.Run("kubectl set image restarts the container from its new spec, even under Never", func(t *testing.T) {
			t.Parallel()
			e.create(t, makePod("setimage", a).Restart(corev1.RestartPolicyNever).Obj())
			e.waitPod(t, "setimage", 60*time.Second, "running", running)
			// Another name of the same local image: the spec changes, the pull does not.
			if out, err := e.c.Kubectl(context.Background(), "", "set", "image", "pod/setimage", "main=busybox:latest"); err != nil {
				t.Fatalf("kubectl set image: %v: %s", err, out)
			}
			p := e.waitPod(t, "setimage", 30*time.Second, "restarted from busybox:latest", func(p *corev1.Pod) bool {
				return len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].RestartCount == 1 &&
					p.Status.ContainerStatuses[0].State.Running != nil
			})
			if p.Status.Phase != corev1.PodRunning {
				t.Errorf("phase %s, want Running", p.Status.Phase)
			}
			// The recorder writes events after the status they go with.
			waitFor(t, 15*time.Second, "a Killing event \"Container main definition changed, will be restarted\"", func() (bool, string) {
				evs, err := e.cs.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=setimage,reason=Killing"})
				return err == nil && len(evs.Items) > 0 && strings.Contains(evs.Items[0].Message, "Container main definition changed, will be restarted"),
					fmt.Sprintf("%v (%v)", evs, err)
			})
		})

		t.Run("readiness turns Ready on and off", func(t *testing.T) {
			t.Parallel()
			e.create(t, makePod("readiness", b).Sh("sleep 2; touch /tmp/ready; sleep 4; rm /tmp/ready; sleep 3600").With(func(p *corev1.Pod) {
				p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ready"}}},
					PeriodSeconds: 1, FailureThreshold: 1}
			}).Obj())
			e.waitPod(t, "readiness", 30*time.Second, "Running and not Ready", func(p *corev1.Pod) bool { return running(p) && !podReady(p) })
			p := e.waitPod(t, "readiness", 30*time.Second, "Ready", podReady)
			if !p.Status.ContainerStatuses[0].Ready {
				t.Error("pod Ready but its container is not")
			}
			e.waitPod(t, "readiness", 30*time.Second, "not Ready again", func(p *corev1.Pod) bool { return !podReady(p) && running(p) })
		})

		t.Run("a memory limit ends in OOMKilled", func(t *testing.T) {
			t.Parallel()
			e.create(t, makePod("oom", a).Sh(`x=aaaaaaaaaaaaaaaa; while true; do x="$x$x"; done`).Restart(corev1.RestartPolicyNever).With(func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("24Mi")}
			}).Obj())
			p := e.waitPod(t, "oom", 90*time.Second, "Failed", phaseIs(corev1.PodFailed))
			if st := p.Status.ContainerStatuses[0].State.Terminated; st == nil || st.Reason != "OOMKilled" || st.ExitCode != 137 {
				t.Errorf("terminated %+v, want OOMKilled with 137", st)
			}
		})

		t.Run("a graceful delete finishes within the grace period", func(t *testing.T) {
			t.Parallel()
			grace := int64(4)
			// sh as PID 1 ignores SIGTERM: the kubelet must SIGKILL after the grace period.
			e.create(t, makePod("graceful", b).With(func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = &grace }).Obj())
			e.waitPod(t, "graceful", 60*time.Second, "Running", running)
			start := time.Now()
			if err := e.cs.CoreV1().Pods("default").Delete(context.Background(), "graceful", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 30*time.Second, "pod graceful gone", func() (bool, string) {
				_, err := e.cs.CoreV1().Pods("default").Get(context.Background(), "graceful", metav1.GetOptions{})
				return apierrors.IsNotFound(err), fmt.Sprint(err)
			})
			if d := time.Since(start); d > time.Duration(grace)*time.Second+3*time.Second || d < time.Duration(grace-1)*time.Second {
				t.Errorf("delete took %v with a %ds grace period for a process ignoring SIGTERM", d, grace)
			}
			e.waitEvents(t, "graceful", "Killing")
		})

		t.Run("a pod that exits on SIGTERM is gone at once", func(t *testing.T) {
			t.Parallel()
			grace := int64(30)
			e.create(t, makePod("sigterm", a).Sh("trap 'exit 0' TERM; sleep 3600 & wait").With(func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = &grace }).Obj())
			e.waitPod(t, "sigterm", 60*time.Second, "Running", running)
			start := time.Now()
			if err := e.cs.CoreV1().Pods("default").Delete(context.Background(), "sigterm", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 30*time.Second, "pod sigterm gone", func() (bool, string) {
				_, err := e.cs.CoreV1().Pods("default").Get(context.Background(), "sigterm", metav1.GetOptions{})
				return apierrors.IsNotFound(err), fmt.Sprint(err)
			})
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("delete took %v though the container exits on SIGTERM", d)
			}
		})

		t.Run("a static pod runs and has its mirror pod, which survives deletion", func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(e.dataDir, "kubelet", b, "manifests")
			manifest := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: static\nspec:\n  containers:\n  - name: main\n    image: busybox\n    command: [sh, -c, 'echo static; sleep 3600']\n"
			if err := os.WriteFile(filepath.Join(dir, "static.yaml"), []byte(manifest), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(filepath.Join(dir, "static.yaml")) })
			name := "static-" + b
			p := e.waitPod(t, name, 60*time.Second, "Running", running)
			if p.Annotations["kubernetes.io/config.mirror"] == "" || p.Spec.NodeName != b {
				t.Errorf("mirror pod annotations %v node %s", p.Annotations, p.Spec.NodeName)
			}
			id := p.Status.ContainerStatuses[0].ContainerID
			// Running comes before the shell's echo.
			waitFor(t, 15*time.Second, "logs \"static\\n\"", func() (bool, string) {
				out, err := e.c.Kubectl(context.Background(), "", "logs", name)
				return err == nil && out == "static\n", fmt.Sprintf("%q %v", out, err)
			})
			if err := e.cs.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			p = e.waitPod(t, name, 60*time.Second, "recreated", func(np *corev1.Pod) bool { return np.UID != p.UID && running(np) })
			if got := p.Status.ContainerStatuses[0].ContainerID; got != id {
				t.Errorf("the static pod's container changed from %s to %s: deleting the mirror must not stop it", id, got)
			}
			// Removing the manifest stops the pod and deletes the mirror.
			os.Remove(filepath.Join(dir, "static.yaml"))
			waitFor(t, 60*time.Second, "mirror pod gone", func() (bool, string) {
				_, err := e.cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
				return apierrors.IsNotFound(err), fmt.Sprint(err)
			})
		})

		t.Run("a Memory emptyDir is a tmpfs of the pod's size, unmounted when the pod goes away", func(t *testing.T) {
			t.Parallel()
			memory := func(size string) *resource.Quantity { q := resource.MustParse(size); return &q }
			p := e.create(t, makePod("tmpfs", a).Sh("grep -E ' /(cache|scratch) ' /proc/mounts; sleep 3600").With(func(p *corev1.Pod) {
				c := &p.Spec.Containers[0]
				c.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
				c.VolumeMounts = []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}, {Name: "scratch", MountPath: "/scratch"}}
				p.Spec.Volumes = []corev1.Volume{
					{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: memory("16Mi")}}},
					{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
				}
			}).Obj())
			e.waitPod(t, "tmpfs", 60*time.Second, "Running", running)
			var mounts string
			waitFor(t, 10*time.Second, "both mounts printed", func() (bool, string) {
				mounts = e.logs(t, "tmpfs")
				return strings.Count(mounts, "\n") == 2, mounts
			})
			// The sizeLimit, and without one the pod's memory limit.
			for _, want := range []string{"tmpfs /cache tmpfs", "size=16384k", "tmpfs /scratch tmpfs", "size=65536k"} {
				if !strings.Contains(mounts, want) {
					t.Errorf("/proc/mounts of the container lacks %q:\n%s", want, mounts)
				}
			}
			host := filepath.Join(e.dataDir, "kubelet", a, "pods", string(p.UID), "volumes", "cache")
			if fstype := mountedAt(host); fstype != "tmpfs" {
				t.Errorf("the node has %q mounted at %s, want tmpfs", fstype, host)
			}
			if err := e.cs.CoreV1().Pods("default").Delete(context.Background(), "tmpfs", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 30*time.Second, "pod tmpfs gone", func() (bool, string) {
				_, err := e.cs.CoreV1().Pods("default").Get(context.Background(), "tmpfs", metav1.GetOptions{})
				return apierrors.IsNotFound(err), fmt.Sprint(err)
			})
			if fstype := mountedAt(host); fstype != "" {
				t.Errorf("%s is still mounted (%s) after the pod went away", host, fstype)
			}
		})

		t.Run("a missing image ends in ImagePullBackOff", func(t *testing.T) {
			t.Parallel()
			e.create(t, makePod("missing", a).With(func(p *corev1.Pod) {
				p.Spec.Containers[0].Image = "localhost:1/minik/missing:1"
				p.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
			}).Obj())
			e.waitPod(t, "missing", 60*time.Second, "in ImagePullBackOff", func(p *corev1.Pod) bool {
				return len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
					p.Status.ContainerStatuses[0].State.Waiting.Reason == "ImagePullBackOff"
			})
			e.waitEvents(t, "missing", "Pulling", "Failed", "BackOff")
		})

		t.Run("hostPort reaches the pod from the host", func(t *testing.T) {
			t.Parallel()
			port := int32(20000 + os.Getpid()%10000)
			e.create(t, makePod("hostport", a).Sh("echo hostport > /tmp/index.html; httpd -f -p 8080 -h /tmp").With(func(p *corev1.Pod) {
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: port}}
			}).Obj())
			e.waitPod(t, "hostport", 60*time.Second, "Running", running)
			url := fmt.Sprintf("http://127.0.0.1:%d/index.html", port)
			waitFor(t, 20*time.Second, "GET "+url, func() (bool, string) {
				resp, err := http.Get(url)
				if err != nil {
					return false, err.Error()
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return string(body) == "hostport\n", fmt.Sprintf("%d %q", resp.StatusCode, body)
			})
		})

		t.Run("pods on one node reach each other by IP", func(t *testing.T) {
			t.Parallel()
			e.create(t, makePod("server", b).Sh("echo pong > /tmp/index.html; httpd -f -p 8080 -h /tmp").Obj())
			srv := e.waitPod(t, "server", 60*time.Second, "Running", running)
			e.create(t, makePod("client", b).Restart(corev1.RestartPolicyNever).
				Sh(fmt.Sprintf("for i in 1 2 3 4 5; do wget -q -O - http://%s:8080/index.html && exit 0; sleep 1; done; exit 1", srv.Status.PodIP)).Obj())
			e.waitPod(t, "client", 60*time.Second, "Succeeded", phaseIs(corev1.PodSucceeded))
			if got := e.logs(t, "client"); got != "pong\n" {
				t.Errorf("client got %q", got)
			}
		})
	})

	// After the parallel pod tests: it takes all of a node's CPU.
	t.Run("a high-priority pod preempts a low-priority one and runs", e.testPreemption(a))

	t.Run("after a kubelet restart running containers are adopted, not duplicated", func(t *testing.T) {
		marker := fmt.Sprintf("%d", 40000+os.Getpid()%20000)
		e.create(t, makePod("adopt", a).Sh("exec sleep "+marker).Obj())
		before := e.waitPod(t, "adopt", 60*time.Second, "Running", running)
		processWithArgs(t, "sleep", marker) // exec'd, so that countProcs below finds it
		// A pod deleted while the kubelet is down is cleaned up on restart.
		e.create(t, makePod("orphan", a).Sh("exec sleep "+marker+"1").Obj())
		e.waitPod(t, "orphan", 60*time.Second, "Running", running)
		// Its output keeps reaching its log across the restart.
		e.create(t, makePod("chatty", a).Sh("while true; do echo tick; sleep 0.2; done").Obj())
		e.waitPod(t, "chatty", 60*time.Second, "Running", running)
		e.c.Stop()
		if n := countProcs("sleep", marker); n != 1 {
			t.Fatalf("%d `sleep %s` processes after minik stopped, want the 1 that keeps running", n, marker)
		}
		e.c.Restart()
		e.cs = e.c.Clientset()
		zero := int64(0)
		if err := e.cs.CoreV1().Pods("default").Delete(context.Background(), "orphan", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		// A new pod runs: the restarted kubelet is at work.
		e.create(t, makePod("after-restart", a).Obj())
		e.waitPod(t, "after-restart", 60*time.Second, "Running", running)
		time.Sleep(2 * time.Second) // let a wrong kubelet start a second copy
		after := e.get(t, "adopt")
		if got, want := after.Status.ContainerStatuses[0].ContainerID, before.Status.ContainerStatuses[0].ContainerID; got != want {
			t.Errorf("container %s after restart, want the adopted %s", got, want)
		}
		if after.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Errorf("restartCount %d after a kubelet restart, want 0", after.Status.ContainerStatuses[0].RestartCount)
		}
		if n := countProcs("sleep", marker); n != 1 {
			t.Errorf("%d `sleep %s` processes, want 1", n, marker)
		}
		waitFor(t, 30*time.Second, "chatty's new output in its log", func() (bool, string) {
			out, err := e.c.Kubectl(context.Background(), "", "logs", "chatty", "--since", "1s")
			return err == nil && strings.HasPrefix(out, "tick\n"), out
		})
		waitFor(t, 30*time.Second, "the orphan's container gone", func() (bool, string) {
			n := countProcs("sleep", marker+"1")
			return n == 0, fmt.Sprintf("%d left", n)
		})
	})
}

// mountedAt is the filesystem type mounted at path on the node, "" for none.
func mountedAt(path string) string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... - FSTYPE SOURCE SUPEROPTIONS
		fields := strings.Fields(line)
		if len(fields) > 4 && fields[4] == path {
			if _, after, ok := strings.Cut(line, " - "); ok {
				return strings.Fields(after)[0]
			}
		}
	}
	return ""
}

// countProcs counts processes whose argv is exactly args.
func countProcs(args ...string) int {
	want := strings.Join(args, "\x00")
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.TrimRight(string(b), "\x00") == want {
			n++
		}
	}
	return n
}

// portForward starts `kubectl port-forward TARGET :REMOTE` (a free local
// port) with KUBECTL_PORT_FORWARD_WEBSOCKETS=websockets, and returns the
// local address once kubectl says it forwards; kubectl is stopped at the
// end of the test.
// TARGET is pod/NAME or svc/NAME (kubectl picks one of the Service's pods).
func portForward(t *testing.T, kubeconfig, websockets, target, remote string) string {
	t.Helper()
	cmd := exec.Command("kubectl", "--kubeconfig", kubeconfig, "port-forward", "--address", "127.0.0.1", target, ":"+remote)
	cmd.Env = append(os.Environ(), "KUBECTL_PORT_FORWARD_WEBSOCKETS="+websockets)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() { // Forwarding from 127.0.0.1:PORT -> REMOTE
			if f := strings.Fields(sc.Text()); len(f) >= 3 && f[0] == "Forwarding" {
				select {
				case addr <- f[2]:
				default:
				}
			}
		}
	}()
	select {
	case a := <-addr:
		return a
	case <-time.After(30 * time.Second):
		t.Fatalf("kubectl port-forward (websockets=%s) did not start forwarding: %s", websockets, stderr.String())
		return ""
	}
}

// processWithArgs returns the PID of the one host process whose command
// line is exactly args.
func processWithArgs(t *testing.T, args ...string) int {
	t.Helper()
	// A Running container may still be its shell, before the exec.
	var pids []int
	waitFor(t, 10*time.Second, fmt.Sprintf("one process running %q", args), func() (bool, string) {
		pids = processesWithArgs(args)
		return len(pids) == 1, fmt.Sprint(pids)
	})
	return pids[0]
}

func processesWithArgs(args []string) []int {
	want := strings.Join(args, "\x00") + "\x00"
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && string(cmdline) == want {
			pid, _ := strconv.Atoi(filepath.Base(d))
			pids = append(pids, pid)
		}
	}
	return pids
}
