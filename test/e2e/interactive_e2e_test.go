package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// terminal is kubectl run under a pseudo-terminal, as a user at a shell
// runs it: what it prints is collected, and keys are typed into it.
type terminal struct {
	cmd  *exec.Cmd
	tty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
}

func (e *env) kubectlTerminal(t *testing.T, args ...string) *terminal {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", e.c.Kubeconfig}, args...)...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{cmd: cmd, tty: f, done: make(chan struct{})}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		term.err = cmd.Wait()
		close(term.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-term.done
		f.Close()
	})
	return term
}

func (term *terminal) output() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()
}

// expect waits until the output holds want.
func (term *terminal) expect(t *testing.T, want string) {
	t.Helper()
	waitFor(t, 30*time.Second, fmt.Sprintf("%q on the terminal", want), func() (bool, string) {
		out := term.output()
		return strings.Contains(out, want), out
	})
}

func (term *terminal) typeLine(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(term.tty, line+"\r"); err != nil {
		t.Fatal(err)
	}
}

// wait waits for kubectl to exit and returns its error.
func (term *terminal) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-term.done:
		return term.err
	case <-time.After(30 * time.Second):
		t.Fatalf("kubectl did not exit; output %q", term.output())
		return nil
	}
}

func (e *env) testInteractive(t *testing.T) {
	a, b := e.nodes[0], e.nodes[1]

	t.Run("kubectl run -it --rm gives a shell and removes the pod on exit", func(t *testing.T) {
		t.Parallel()
		term := e.kubectlTerminal(t, "run", "-it", "--rm", "shell", "--image=busybox", "--restart=Never", "--", "sh")
		// kubectl attaches once the pod runs; what the shell printed before
		// is lost, so the user presses enter, as kubectl suggests.
		term.expect(t, "If you don't see a command prompt, try pressing enter.")
		term.typeLine(t, "")
		term.typeLine(t, "echo answer-$((6*7)); tty")
		term.expect(t, "answer-42")
		term.expect(t, "/dev/pts/")
		term.typeLine(t, "exit")
		if err := term.wait(t); err != nil {
			t.Errorf("kubectl run -it --rm: %v; output %q", err, term.output())
		}
		// kubectl's last words may still be in the pty when it exits.
		term.expect(t, `pod "shell" deleted`)
		waitFor(t, 30*time.Second, "pod shell gone", func() (bool, string) {
			_, err := e.cs.CoreV1().Pods("default").Get(context.Background(), "shell", metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	})

	t.Run("kubectl attach -it reconnects to a running shell, and logs of a tty container read back", func(t *testing.T) {
		t.Parallel()
		e.create(t, makePod("tty", a).With(func(p *corev1.Pod) {
			c := &p.Spec.Containers[0]
			c.Command, c.Stdin, c.TTY = []string{"sh"}, true, true
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
		}).Obj())
		e.waitPod(t, "tty", 60*time.Second, "running", running)
		first := e.kubectlTerminal(t, "attach", "-it", "tty")
		first.expect(t, "If you don't see a command prompt, try pressing enter.")
		first.typeLine(t, "echo first-$((1+1))")
		first.expect(t, "first-2")
		// The user closes the terminal: the shell goes on.
		_ = first.cmd.Process.Kill()
		<-first.done
		second := e.kubectlTerminal(t, "attach", "-it", "tty")
		second.expect(t, "If you don't see a command prompt, try pressing enter.")
		second.typeLine(t, "echo second-$((2+2))")
		second.expect(t, "second-4")
		if got := e.logs(t, "tty"); !strings.Contains(got, "first-2") || !strings.Contains(got, "second-4") {
			t.Errorf("kubectl logs tty = %q, want both sessions' output", got)
		}
		// The shell's exit ends the session (kubectl attach reports no
		// exit code; the pod's status does).
		second.typeLine(t, "exit 3")
		_ = second.wait(t)
		p := e.waitPod(t, "tty", 30*time.Second, "Failed", phaseIs(corev1.PodFailed))
		if st := p.Status.ContainerStatuses[0].State.Terminated; st == nil || st.ExitCode != 3 {
			t.Errorf("terminated state %+v, want exit code 3", st)
		}
	})

	t.Run("a container with stdin and stdinOnce reads what kubectl attach sends, then its input ends", func(t *testing.T) {
		t.Parallel()
		e.create(t, makePod("cat", b).With(func(p *corev1.Pod) {
			c := &p.Spec.Containers[0]
			c.Command, c.Stdin, c.StdinOnce = []string{"sh", "-c", "cat; echo input ended"}, true, true
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
		}).Obj())
		e.waitPod(t, "cat", 60*time.Second, "running", running)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := e.c.Kubectl(ctx, "hello from stdin\n", "attach", "-i", "cat")
		if err != nil || !strings.Contains(out, "hello from stdin\ninput ended") {
			t.Errorf("kubectl attach -i: %v, output %q; want the input echoed, then its end", err, out)
		}
		e.waitPod(t, "cat", 30*time.Second, "Succeeded", phaseIs(corev1.PodSucceeded))
	})

	t.Run("exec and attach into a container that is not running show why, over WebSocket and SPDY", func(t *testing.T) {
		t.Parallel()
		e.create(t, makePod("halfdone", a).With(func(p *corev1.Pod) {
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "done", Image: "busybox",
				ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"true"}})
		}).Obj())
		e.waitPod(t, "halfdone", 60*time.Second, "with one container exited", func(p *corev1.Pod) bool {
			for _, s := range p.Status.ContainerStatuses {
				if s.Name == "done" && s.State.Terminated != nil {
					return true
				}
			}
			return false
		})
		for _, spdy := range []bool{false, true} {
			for _, args := range [][]string{{"exec", "halfdone", "-c", "done", "--", "true"}, {"attach", "halfdone", "-c", "done"}} {
				cmd := exec.Command("kubectl", append([]string{"--kubeconfig", e.c.Kubeconfig}, args...)...)
				if spdy {
					cmd.Env = append(os.Environ(), "KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false")
				}
				out, err := cmd.CombinedOutput()
				if err == nil || !strings.Contains(string(out), `container not found ("done")`) {
					t.Errorf("kubectl %v (SPDY only: %v): %v, output %q; want container not found", args, spdy, err, out)
				}
			}
		}
		// SPDY serves a command too (kubectl's fallback, and older clients).
		cmd := exec.Command("kubectl", "--kubeconfig", e.c.Kubeconfig, "exec", "-i", "halfdone", "-c", "main", "--", "sh", "-c", "cat; exit 7")
		cmd.Env = append(os.Environ(), "KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false")
		cmd.Stdin = strings.NewReader("over spdy\n")
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 || !strings.Contains(string(out), "over spdy") {
			t.Errorf("kubectl exec over SPDY: %v, output %q; want the input echoed and exit code 7", err, out)
		}
	})

	t.Run("kubectl debug -it pod --target gives a shell that sees the target's processes", func(t *testing.T) {
		t.Parallel()
		e.create(t, makePod("debugme", b).Sh("sleep 3601").Obj())
		e.waitPod(t, "debugme", 60*time.Second, "running", running)
		term := e.kubectlTerminal(t, "debug", "-it", "pod/debugme", "--image=busybox", "--target=main", "--container=dbg", "--", "sh")
		term.expect(t, "If you don't see a command prompt, try pressing enter.")
		term.typeLine(t, "ps | grep -c 'sleep 360[1]'; echo ps-\"done\"")
		term.expect(t, "ps-done") // the output's, not the echoed command line's
		if out := term.output(); !strings.Contains(out, "\n1\r\n") && !strings.Contains(out, "\r\n1\r\n") {
			t.Errorf("the debug shell does not see the target's sleep: %q", out)
		}
		term.typeLine(t, "exit")
		_ = term.wait(t)
		p := e.waitPod(t, "debugme", 30*time.Second, "with the debug container terminated", func(p *corev1.Pod) bool {
			return len(p.Status.EphemeralContainerStatuses) == 1 && p.Status.EphemeralContainerStatuses[0].State.Terminated != nil
		})
		if st := p.Status.EphemeralContainerStatuses[0]; st.Name != "dbg" || st.State.Terminated.ExitCode != 0 {
			t.Errorf("ephemeral container status %+v, want dbg exited 0", st)
		}
		if !running(p) {
			t.Errorf("the target pod stopped running: %+v", p.Status)
		}
	})

	t.Run("kubectl debug node -it gives a shell in the host's namespaces with / at /host", func(t *testing.T) {
		t.Parallel()
		term := e.kubectlTerminal(t, "debug", "node/"+a, "-it", "--image=busybox")
		term.expect(t, "If you don't see a command prompt, try pressing enter.")
		t.Cleanup(func() {
			pods, _ := e.cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
			zero := int64(0)
			for _, p := range pods.Items {
				if strings.HasPrefix(p.Name, "node-debugger-"+a) {
					_ = e.cs.CoreV1().Pods("default").Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
				}
			}
		})
		term.typeLine(t, "echo ns $(readlink /proc/self/ns/pid) $(readlink /proc/self/ns/ipc) $(readlink /proc/self/ns/net) end; test -d /host"+e.dataDir+" && echo host-\"root\"")
		term.expect(t, "host-root") // the output's: the echoed command line reads host-"root"
		var want []string
		for _, ns := range []string{"/proc/self/ns/pid", "/proc/self/ns/ipc", "/proc/self/ns/net"} {
			l, err := os.Readlink(ns)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, l)
		}
		if line := "ns " + strings.Join(want, " ") + " end"; !strings.Contains(term.output(), line) {
			t.Errorf("output %q, want the host's namespaces %q", term.output(), line)
		}
		term.typeLine(t, "exit")
		_ = term.wait(t)
	})
}
