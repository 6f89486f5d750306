// Package podstep is the pod worker's step, as etcd's raft is a step
// function: from the pod's spec, what the runtime holds, the worker's
// own state, the events since the last step and the time, it decides
// the new state, the actions to run and when to wake next. It has no
// IO, reads no clock and starts no goroutine. See README.md.
package podstep

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik/kubelet/runtime"
	"minik/proto/cri"
)

// Retry delays: how long the step holds back after a failure.
const (
	// actionRetry follows a failed action of a running pod.
	actionRetry = 2 * time.Second
	// terminationRetry follows a failed step of a termination, and a
	// runtime that could not be read or a status not written.
	terminationRetry = time.Second
	// startRetry follows a container that could not be created or
	// started, or volumes that could not be set up.
	startRetry = 2 * time.Second
	// invalidImageRetry follows an image name that does not parse.
	invalidImageRetry = time.Minute
	// neverPullRetry follows an absent image with pull policy Never.
	neverPullRetry = 5 * time.Second
	// tokenRetry follows a failed refresh of the projected tokens.
	tokenRetry = 10 * time.Second
)

// Input is what one step reads.
type Input struct {
	Pod *corev1.Pod
	// Removed: the pod is gone from the apiserver (or its manifest).
	Removed bool
	// Static: a static pod, whose API object is its mirror (the worker
	// never deletes it).
	Static bool
	// Runtime is what the runtime holds for the pod, nil when it could
	// not be read (an ObserveFailed event says why).
	Runtime *runtime.Pod
	// Events are what happened since the last step, in order.
	Events []Event
	Now    time.Time
	// HostIP is the node's address, the status' hostIP.
	HostIP string
}

// Output is one step's decision.
type Output struct {
	// Actions are to run in order; the worker then observes the runtime
	// and steps again with their outcomes.
	Actions []Action
	// WakeAt is when to step again if nothing happens (zero: not before
	// an event).
	WakeAt time.Time
	// Status is the pod's status to report when it changed; nil while
	// the pod terminates or the runtime could not be read.
	Status *corev1.PodStatus
	// Done: the pod is gone from the node; the worker ends.
	Done bool
}

func (o *Output) wake(t time.Time) {
	if !t.IsZero() && (o.WakeAt.IsZero() || t.Before(o.WakeAt)) {
		o.WakeAt = t
	}
}

// Step is the pod worker's step. It changes st, which nothing else
// writes, and returns what to do.
func Step(st *State, in Input) Output {
	var out Output
	statusFailed := false
	for _, e := range in.Events {
		if _, ok := e.(StatusFailed); ok {
			statusFailed = true
		}
		out.Actions = append(out.Actions, apply(st, in, e)...)
	}
	if statusFailed {
		out.wake(in.Now.Add(terminationRetry))
	}
	if terminating(in) {
		terminate(st, in, &out)
		return out
	}
	if in.Runtime == nil || in.Now.Before(st.RetryAt) {
		out.wake(st.RetryAt)
		if in.Runtime != nil {
			out.Status = status(st, in)
		}
		return out
	}
	pod, obs := in.Pod, in.Runtime
	if !st.Admitted && st.Rejected == nil {
		if !isTerminal(pod, st) {
			out.Actions = append(out.Actions, Admit{})
			return out
		}
		st.Admitted = true // finished before a kubelet restart: nothing to run
	}
	if st.Rejected == nil {
		out.Actions = append(out.Actions, checkDeadline(st, pod, in.Now, &out)...)
		p := computePlan(pod, obs, st, in.Now)
		out.wake(p.WakeAt)
		out.Actions = append(out.Actions, planActions(st, in, p)...)
		if isTerminal(pod, st) && !st.VolumesRemoved && !obs.AnyRunning() && len(out.Actions) == 0 {
			// A finished pod's volumes go, as in the kubelet: an emptyDir
			// lives only as long as the pod runs.
			out.Actions = append(out.Actions, RemoveVolumes{})
		}
	}
	out.Status = status(st, in)
	return out
}

func status(st *State, in Input) *corev1.PodStatus {
	s := computeStatus(in.Pod, in.Runtime, st, in.Now, in.HostIP)
	return &s
}

// deadlineMessage is upstream's status message of a pod past its
// activeDeadlineSeconds.
const deadlineMessage = "Pod was active on the node longer than the specified deadline"

// checkDeadline fails a pod that has run activeDeadlineSeconds since it
// started (a deadline the spec may lower at any time), as upstream's
// activeDeadlineHandler, and wakes the step when the deadline comes.
func checkDeadline(st *State, pod *corev1.Pod, now time.Time, out *Output) []Action {
	if pod.Spec.ActiveDeadlineSeconds == nil || st.DeadlineExceeded != nil || isTerminal(pod, st) {
		return nil
	}
	start := st.StartTime
	if pod.Status.StartTime != nil {
		start = pod.Status.StartTime.Time
	}
	if start.IsZero() {
		return nil
	}
	deadline := start.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second)
	if now.Before(deadline) {
		out.wake(deadline)
		return nil
	}
	st.DeadlineExceeded = &Failure{Reason: "DeadlineExceeded", Message: deadlineMessage}
	return []Action{RecordEvent{corev1.EventTypeWarning, "DeadlineExceeded", deadlineMessage}}
}

// apply records one event in the state; it returns the Kubernetes
// events to record for it.
func apply(st *State, in Input, e Event) []Action {
	now := in.Now
	switch e := e.(type) {
	case Readiness:
		st.Ready[e.ContainerID] = e.Ready
	case StartupSucceeded:
		st.Started[e.ContainerID] = true
	case Unhealthy:
		st.Unhealthy[e.ContainerID] = e.Message
	case Evict:
		if st.Evicted == nil {
			f := e.Failure
			st.Evicted = &f
		}
	case Admission:
		if e.Failure == nil {
			st.Admitted = true
			return nil
		}
		st.Rejected = e.Failure
		return []Action{RecordEvent{corev1.EventTypeWarning, e.Failure.Reason, e.Failure.Message}}
	case ActionFailed:
		retry := actionRetry
		if terminating(in) {
			retry = terminationRetry
		}
		st.RetryAt = now.Add(retry)
	case ObserveFailed:
		st.RetryAt = now.Add(terminationRetry)
	case VolumesFailed:
		reason, eventReason, message := ReasonCreateContainerConfigError, "Failed", "Error: "+e.Message
		if e.Mount {
			// Not the container's fault: the volume is not there yet.
			reason, eventReason, message = ReasonContainerCreating, "FailedMount", e.Message
		}
		for _, name := range e.Names {
			st.Waiting[name] = Waiting{Reason: reason, Message: e.Message, Until: now.Add(startRetry)}
		}
		return []Action{RecordEvent{corev1.EventTypeWarning, eventReason, message}}
	case VolumesReady:
		st.VolumesRefreshAt = e.RefreshAt
	case TokensRefreshed:
		st.VolumesRefreshAt = e.RefreshAt
		if e.RefreshAt.IsZero() {
			st.VolumesRefreshAt = now.Add(tokenRetry) // the containers keep the old token meanwhile
		}
	case ContainerStarted:
		delete(st.Waiting, e.Name)
		delete(st.PullBackOff, e.Name)
		if e.Previous != nil {
			st.BackOff[e.Name] = nextBackOff(st.BackOff[e.Name], e.Previous)
		}
	case StartFailed:
		st.Waiting[e.Name] = Waiting{Reason: e.Reason, Message: e.Message, Until: now.Add(startFailedRetry(st, e))}
	case ContainerKilled:
		delete(st.Unhealthy, e.ID)
	case PreStopDone:
		if st.Termination != nil {
			st.Termination.PreStopRun[e.ID] = true
		}
	case PodStopped:
		if e.Terminal {
			st.Terminal = true
		}
		if st.Termination != nil {
			st.Termination.Stopped = true
		}
	case VolumesRemoved:
		st.VolumesRemoved = true
	case PodDeleted:
		if st.Termination != nil {
			st.Termination.Deleted = true
		}
	}
	return nil
}

// startFailedRetry is how long a container that could not start waits
// before the next attempt: a failed pull backs off (10s doubling to 5m),
// the rest wait a fixed time by reason.
func startFailedRetry(st *State, e StartFailed) time.Duration {
	switch e.Reason {
	case ReasonErrImagePull:
		st.PullBackOff[e.Name] = doubled(st.PullBackOff[e.Name])
		return st.PullBackOff[e.Name]
	case ReasonInvalidImageName:
		return invalidImageRetry
	case ReasonErrImageNeverPull:
		return neverPullRetry
	}
	return startRetry
}

// planActions turns a running pod's plan into actions, in the order the
// worker runs them.
func planActions(st *State, in Input, p plan) []Action {
	pod, obs := in.Pod, in.Runtime
	var out []Action
	if p.KillPod {
		out = append(out, StopPod{SandboxIDs: sandboxIDs(obs, false), Grace: GracePeriod(pod)})
	}
	if p.CreateSandbox {
		return append(out, CreateSandbox{Attempt: uint32(len(obs.Sandboxes))})
	}
	// SetUpVolumes below writes every volume, the tokens too: a refresh
	// before it would write them twice (a new pod's first start).
	if p.RefreshTokens && len(p.Start) == 0 {
		out = append(out, RefreshTokens{})
	}
	for _, id := range p.Remove {
		out = append(out, RemoveContainer{ID: id})
	}
	for _, k := range p.Kill {
		out = append(out, RecordEvent{corev1.EventTypeNormal, "Killing", k.Message},
			KillContainer{ID: k.ID, Name: k.Name, Grace: GracePeriod(pod)})
	}
	for _, name := range p.MarkPullBackOff {
		w := st.Waiting[name]
		if w.Reason == ReasonImagePullBackOff {
			continue
		}
		msg := fmt.Sprintf("Back-off pulling image %q", imageOf(pod, name))
		w.Reason, w.Message = ReasonImagePullBackOff, msg
		st.Waiting[name] = w
		out = append(out, RecordEvent{corev1.EventTypeNormal, "BackOff", msg})
	}
	if p.Terminal {
		grace := GracePeriod(pod)
		if st.Evicted != nil {
			grace = 0 // a hard eviction threshold allows no grace period
		}
		return append(out, StopPod{SandboxIDs: sandboxIDs(obs, true), Grace: grace, Terminal: true})
	}
	if len(p.Start) > 0 {
		names := make([]string, len(p.Start))
		for i, s := range p.Start {
			names[i] = s.Container.Name
		}
		out = append(out, SetUpVolumes{Names: names})
		for _, s := range p.Start {
			out = append(out, StartContainer(s))
		}
	}
	return out
}

// terminating reports whether the pod is being deleted.
func terminating(in Input) bool {
	return in.Removed || in.Pod.DeletionTimestamp != nil
}

// terminate is a deleted pod's termination: preStop hooks, then every
// container stopped within what is left of the grace period (SIGTERM,
// SIGKILL at its end) and the sandboxes, the volumes removed, the API
// object deleted, the sandboxes and directories removed.
func terminate(st *State, in Input, out *Output) {
	now := in.Now
	t := st.Termination
	deadline := now.Add(time.Duration(GracePeriod(in.Pod)) * time.Second)
	if t == nil {
		t = &Termination{Deadline: deadline, PreStopRun: map[string]bool{}}
		st.Termination = t
	} else if deadline.Before(t.Deadline) {
		t.Deadline = deadline // deleted again with a shorter grace period
	}
	if in.Runtime == nil || now.Before(st.RetryAt) {
		out.wake(st.RetryAt)
		return
	}
	obs := in.Runtime
	if !t.Stopped {
		remaining := int64(math.Ceil(max(0, t.Deadline.Sub(now)).Seconds()))
		var hooks, kills []Action
		for _, c := range obs.Containers {
			if c.State != cri.ContainerState_CONTAINER_RUNNING {
				continue
			}
			name := c.Metadata.GetName()
			if h := preStopHandler(in.Pod, name); h != nil && !t.PreStopRun[c.Id] && remaining > 0 {
				hooks = append(hooks, RecordEvent{corev1.EventTypeNormal, "Killing", "Stopping container " + name},
					RunPreStop{ID: c.Id, Name: name, Handler: h, TimeoutSeconds: remaining})
				continue
			}
			if !t.PreStopRun[c.Id] {
				kills = append(kills, RecordEvent{corev1.EventTypeNormal, "Killing", "Stopping container " + name})
			}
		}
		if len(hooks) > 0 {
			out.Actions = append(out.Actions, hooks...)
			return
		}
		out.Actions = append(out.Actions, kills...)
		out.Actions = append(out.Actions, StopPod{SandboxIDs: sandboxIDs(obs, false), Grace: remaining, Terminal: true})
		return
	}
	switch {
	case !st.VolumesRemoved:
		// Volumes go before the pod object, as in the kubelet: a pod is
		// gone from the API only once its resources are reclaimed.
		out.Actions = append(out.Actions, RemoveVolumes{})
	case !t.Deleted && !in.Removed && !in.Static:
		out.Actions = append(out.Actions, DeletePod{})
	default:
		out.Actions = append(out.Actions, RemovePod{SandboxIDs: sandboxIDs(obs, false)})
		out.Done = true
	}
}

// preStopHandler is the container's preStop hook (exec, httpGet or
// sleep; an app container's or a sidecar's), nil for none.
func preStopHandler(pod *corev1.Pod, name string) *corev1.LifecycleHandler {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if c := &list[i]; c.Name == name && c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
				if h := c.Lifecycle.PreStop; h.Exec != nil || h.HTTPGet != nil || h.Sleep != nil {
					return h
				}
			}
		}
	}
	return nil
}

// sandboxIDs lists the pod's sandboxes, only the ready ones if ready.
func sandboxIDs(obs *runtime.Pod, ready bool) []string {
	var ids []string
	for _, sb := range obs.Sandboxes {
		if !ready || sb.State == cri.PodSandboxState_SANDBOX_READY {
			ids = append(ids, sb.Id)
		}
	}
	return ids
}

// GracePeriod is the pod's termination grace period in seconds: the
// delete's, else the spec's, else 30.
func GracePeriod(pod *corev1.Pod) int64 {
	if pod.DeletionGracePeriodSeconds != nil {
		return *pod.DeletionGracePeriodSeconds
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return 30
}

func imageOf(pod *corev1.Pod, name string) string {
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if c.Name == name {
			return c.Image
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return c.Image
		}
	}
	return ""
}
