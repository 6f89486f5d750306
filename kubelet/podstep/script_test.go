package podstep

import (
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/kubelet/runtime"
	"minik/proto/cri"
)

// The scripts in testdata/*.txt drive one pod's worker step by step:
// the script says what happens (the pod is created, a container exits,
// a probe fails, the pod is deleted) and the golden output shows what
// the step decides. Run `go test ./kubelet/podstep -update` to rewrite
// the outputs after a change, then read the diff.
//
// Commands:
//
//	pod containers=(a,b) [init=i] [restart=Always|OnFailure|Never] [grace=N] [prestop=a] [image=busybox]
//	                        the pod, as the apiserver has it
//	step                    one step with the events queued since the last
//	                        (< lines): prints the actions (> lines), the status
//	                        the worker writes once nothing is left to do, and
//	                        when to wake
//	do [fail=KIND:NAME:REASON]
//	                        runs the last step's actions against a runtime in
//	                        memory and queues their outcomes; fail makes the
//	                        start of NAME fail (KIND start) or pulls fail
//	exit NAME code=N        the container exits
//	advance D               the clock moves on (10s, 1m)
//	event KIND ...          queues an event: unhealthy NAME, readiness NAME
//	                        ready=BOOL, startup NAME, evict MESSAGE
//	delete [grace=N]        the pod is deleted (deletionTimestamp) with that grace
//	set-image NAME IMAGE    kubectl set image
var update = flag.Bool("update", false, "rewrite the scripts' expected output (datadriven's -rewrite)")

func TestScripts(t *testing.T) {
	if *update {
		if err := flag.Set("rewrite", "true"); err != nil {
			t.Fatal(err)
		}
	}
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		h := &harness{now: t0, state: NewState(t0), rt: &runtime.Pod{}}
		datadriven.RunTest(t, path, h.run)
	})
}

// harness is one pod's worker without IO: the step, a runtime in memory
// and a clock moved by the script.
type harness struct {
	pod     *corev1.Pod
	state   *State
	rt      *runtime.Pod
	now     time.Time
	pending []Event  // outcomes and events for the next step
	last    []Action // the last step's actions
	next    int      // the next container or sandbox number
	done    bool
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "pod":
		h.pod = scriptPod(t, d)
		return ""
	case "step":
		return h.step()
	case "do":
		return h.do(t, d)
	case "exit":
		var code int
		d.ScanArgs(t, "code", &code)
		c := h.latest(t, d.CmdArgs[0].Key)
		c.State, c.ExitCode, c.FinishedAt = cri.ContainerState_CONTAINER_EXITED, int32(code), h.now.UnixNano()
		c.Reason = "Completed"
		if code != 0 {
			c.Reason = "Error"
		}
		return ""
	case "advance":
		dur, err := time.ParseDuration(d.CmdArgs[0].Key)
		if err != nil {
			t.Fatal(err)
		}
		h.now = h.now.Add(dur)
		return ""
	case "event":
		h.pending = append(h.pending, h.scriptEvent(t, d))
		return ""
	case "delete":
		grace := GracePeriod(h.pod)
		if d.HasArg("grace") {
			d.ScanArgs(t, "grace", &grace)
		}
		p := h.pod.DeepCopy()
		if p.DeletionTimestamp == nil {
			p.DeletionTimestamp = &metav1.Time{Time: h.now}
		}
		p.DeletionGracePeriodSeconds = &grace
		h.pod = p
		return ""
	case "set-image":
		p := h.pod.DeepCopy()
		for i := range p.Spec.Containers {
			if p.Spec.Containers[i].Name == d.CmdArgs[0].Key {
				p.Spec.Containers[i].Image = d.CmdArgs[1].Key
			}
		}
		h.pod = p
		return ""
	}
	t.Fatalf("unknown command %q", d.Cmd)
	return ""
}

func scriptPod(t *testing.T, d *datadriven.TestData) *corev1.Pod {
	image := "busybox"
	if d.HasArg("image") {
		d.ScanArgs(t, "image", &image)
	}
	list := func(key string) []string {
		if !d.HasArg(key) {
			return nil
		}
		for _, a := range d.CmdArgs {
			if a.Key == key {
				return a.Vals
			}
		}
		return nil
	}
	b := makePod(list("containers")...)
	b.Init(list("init")...)
	p := b.Obj()
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Image = image
	}
	if d.HasArg("restart") {
		var r string
		d.ScanArgs(t, "restart", &r)
		p.Spec.RestartPolicy = corev1.RestartPolicy(r)
	}
	if d.HasArg("grace") {
		var g int64
		d.ScanArgs(t, "grace", &g)
		p.Spec.TerminationGracePeriodSeconds = &g
	}
	for _, name := range list("prestop") {
		for i := range p.Spec.Containers {
			if p.Spec.Containers[i].Name == name {
				p.Spec.Containers[i].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
					Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "sleep 5"}}}}
			}
		}
	}
	p.CreationTimestamp = metav1.Time{Time: t0}
	return p
}

func (h *harness) scriptEvent(t *testing.T, d *datadriven.TestData) Event {
	arg := func(i int) string {
		if i >= len(d.CmdArgs) {
			t.Fatalf("event %s: too few arguments", d.CmdArgs[0].Key)
		}
		return d.CmdArgs[i].Key
	}
	switch kind := arg(0); kind {
	case "unhealthy":
		return Unhealthy{ContainerID: h.latest(t, arg(1)).Id,
			Message: fmt.Sprintf("Container %s failed liveness probe, will be restarted", arg(1))}
	case "readiness":
		var ready bool
		d.ScanArgs(t, "ready", &ready)
		return Readiness{ContainerID: h.latest(t, arg(1)).Id, Ready: ready}
	case "startup":
		return StartupSucceeded{ContainerID: h.latest(t, arg(1)).Id}
	case "evict":
		return Evict{Failure: Failure{Reason: "Evicted", Message: strings.Join(argKeys(d.CmdArgs[1:]), " ")}}
	default:
		t.Fatalf("unknown event %q", kind)
	}
	return nil
}

func argKeys(args []datadriven.CmdArg) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a.Key
	}
	return out
}

// step runs the step and prints its decision.
func (h *harness) step() string {
	h.rt.Sort()
	var b strings.Builder
	for _, e := range h.pending {
		fmt.Fprintf(&b, "< %s\n", e.event())
	}
	out := Step(h.state, Input{Pod: h.pod, Runtime: h.rt, Events: h.pending, Now: h.now, HostIP: "192.0.2.1"})
	h.pending, h.last = nil, out.Actions
	for _, a := range out.Actions {
		fmt.Fprintf(&b, "> %s\n", a)
	}
	if out.Status != nil && len(out.Actions) == 0 {
		// The worker writes the status of a step that leaves nothing to do.
		fmt.Fprintf(&b, "status: %s\n", statusLine(out.Status))
	}
	if !out.WakeAt.IsZero() {
		fmt.Fprintf(&b, "wake: in %s\n", out.WakeAt.Sub(h.now))
	}
	if out.Done {
		h.done = true
		b.WriteString("done\n")
	}
	return b.String()
}

// statusLine is the pod's status in one line: the phase, then each
// container's state.
func statusLine(s *corev1.PodStatus) string {
	parts := []string{string(s.Phase)}
	if s.Reason != "" {
		parts = append(parts, "reason="+s.Reason)
	}
	for _, c := range s.Conditions {
		if c.Type == corev1.PodReady {
			parts = append(parts, "ready="+string(c.Status))
		}
	}
	for _, cs := range append(append([]corev1.ContainerStatus{}, s.InitContainerStatuses...), s.ContainerStatuses...) {
		st := "?"
		switch {
		case cs.State.Running != nil:
			st = "running"
			if cs.Ready {
				st += ",ready"
			}
		case cs.State.Waiting != nil:
			st = "waiting:" + cs.State.Waiting.Reason
		case cs.State.Terminated != nil:
			st = fmt.Sprintf("terminated:%s(%d)", cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
		}
		parts = append(parts, fmt.Sprintf("%s=%s restarts=%d", cs.Name, st, cs.RestartCount))
	}
	return strings.Join(parts, " ")
}

// do performs the last step's actions on the runtime in memory and
// queues their outcomes, as the worker does.
func (h *harness) do(t *testing.T, d *datadriven.TestData) string {
	failKind, failName, failReason := "", "", ""
	if d.HasArg("fail") {
		var f string
		d.ScanArgs(t, "fail", &f)
		parts := strings.SplitN(f, ":", 3)
		if len(parts) != 3 {
			t.Fatalf("fail=%s: want KIND:NAME:REASON", f)
		}
		failKind, failName, failReason = parts[0], parts[1], parts[2]
	}
	var b strings.Builder
	outcome := func(e Event) {
		h.pending = append(h.pending, e)
	}
	for _, a := range h.last {
		switch a := a.(type) {
		case Admit:
			outcome(Admission{})
		case RecordEvent:
		case CreateSandbox:
			h.next++
			h.rt.Sandboxes = append(h.rt.Sandboxes, &cri.PodSandbox{Id: "sb" + strconv.Itoa(h.next), State: cri.PodSandboxState_SANDBOX_READY,
				CreatedAt: h.now.UnixNano() + int64(h.next), Ip: "10.244.0." + strconv.Itoa(h.next+1)})
		case StopPod:
			for _, id := range a.SandboxIDs {
				h.stopSandbox(id)
			}
			outcome(PodStopped{Terminal: a.Terminal})
		case KillContainer:
			h.stopContainer(a.ID)
			outcome(ContainerKilled{ID: a.ID})
		case RunPreStop:
			outcome(PreStopDone{ID: a.ID})
		case RemoveContainer:
			h.removeContainer(a.ID)
		case SetUpVolumes:
			outcome(VolumesReady{})
		case StartContainer:
			if failKind == "start" && failName == a.Container.Name {
				outcome(StartFailed{Name: a.Container.Name, Reason: failReason, Message: "failed on purpose"})
				continue
			}
			h.next++
			h.rt.Containers = append(h.rt.Containers, &cri.ContainerStatus{Id: a.Container.Name + "-" + strconv.Itoa(h.next),
				Metadata: &cri.ContainerMetadata{Name: a.Container.Name}, State: cri.ContainerState_CONTAINER_RUNNING,
				CreatedAt: h.now.UnixNano() + int64(h.next), StartedAt: h.now.UnixNano(),
				Annotations: map[string]string{runtime.AnnotationRestartCount: strconv.Itoa(a.RestartCount),
					runtime.AnnotationContainerHash: ContainerHash(a.Container)}})
			outcome(ContainerStarted{Name: a.Container.Name, Previous: a.Previous})
		case RefreshTokens:
			outcome(TokensRefreshed{RefreshAt: h.now.Add(time.Hour)})
		case RemoveVolumes:
			outcome(VolumesRemoved{})
		case DeletePod:
			outcome(PodDeleted{})
		case RemovePod:
			h.rt = &runtime.Pod{}
		default:
			t.Fatalf("the harness cannot do %s", a)
		}
	}
	h.last = nil
	b.WriteString(h.runtimeLine())
	return b.String()
}

// runtimeLine is what the runtime holds, in one line.
func (h *harness) runtimeLine() string {
	h.rt.Sort()
	var parts []string
	for _, sb := range h.rt.Sandboxes {
		st := "ready"
		if sb.State != cri.PodSandboxState_SANDBOX_READY {
			st = "stopped"
		}
		parts = append(parts, sb.Id+"="+st)
	}
	cs := append([]*cri.ContainerStatus{}, h.rt.Containers...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].CreatedAt < cs[j].CreatedAt })
	for _, c := range cs {
		st := "running"
		switch c.State {
		case cri.ContainerState_CONTAINER_EXITED:
			st = fmt.Sprintf("exited(%d)", c.ExitCode)
		case cri.ContainerState_CONTAINER_CREATED:
			st = "created"
		}
		parts = append(parts, c.Id+"="+st)
	}
	if len(parts) == 0 {
		return "runtime: empty\n"
	}
	return "runtime: " + strings.Join(parts, " ") + "\n"
}

func (h *harness) latest(t *testing.T, name string) *cri.ContainerStatus {
	h.rt.Sort()
	c, _ := h.rt.Latest(name)
	if c == nil {
		t.Fatalf("no container %q in the runtime", name)
	}
	return c
}

func (h *harness) stopContainer(id string) {
	for _, c := range h.rt.Containers {
		if c.Id == id && c.State == cri.ContainerState_CONTAINER_RUNNING {
			c.State, c.ExitCode, c.Reason, c.FinishedAt = cri.ContainerState_CONTAINER_EXITED, 137, "Error", h.now.UnixNano()
		}
	}
}

func (h *harness) stopSandbox(id string) {
	for _, c := range h.rt.Containers {
		h.stopContainer(c.Id)
	}
	for _, sb := range h.rt.Sandboxes {
		if sb.Id == id {
			sb.State = cri.PodSandboxState_SANDBOX_NOTREADY
		}
	}
}

func (h *harness) removeContainer(id string) {
	kept := h.rt.Containers[:0]
	for _, c := range h.rt.Containers {
		if c.Id != id {
			kept = append(kept, c)
		}
	}
	h.rt.Containers = kept
}
