// Package podstep is the pod worker's step: from a pod's spec, what the
// runtime holds and what the kubelet remembers, it decides what to do
// next and what the pod's status is. It has no side effects. See README.md.
package podstep

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik/kubelet/runtime"
	"minik/proto/cri"
)

// Crash-loop and image-pull back-off: the first restart is immediate, then
// 10s doubling to 5 minutes; a container that ran 10 minutes resets it.
const (
	InitialBackOff = 10 * time.Second
	MaxBackOff     = 5 * time.Minute
	backOffReset   = 10 * time.Minute
)

// Failure is why a pod failed without running: admission refused it,
// or the eviction manager evicted it. It is data, not an error.
type Failure struct {
	Reason, Message string
}

// Waiting is why a container cannot start yet, and until when.
type Waiting struct {
	Reason, Message string
	Until           time.Time
}

// State is the kubelet's memory about one pod, beyond the runtime's.
// Only the driver changes it; the step reads it.
type State struct {
	// BackOff is the current crash-loop back-off per container name.
	BackOff map[string]time.Duration
	// Waiting holds start failures (image pull, config errors) per name.
	Waiting map[string]Waiting
	// Ready and Started are probe results per container ID.
	Ready, Started map[string]bool
	// Unhealthy: liveness or startup probe failed; the container must be killed.
	Unhealthy map[string]string
	// StartTime is when the kubelet first saw the pod.
	StartTime time.Time
	// Rejected is set when admission refused the pod.
	Rejected *Failure
	Admitted bool
	// Terminal: every container finished for good and the sandbox is stopped.
	Terminal bool
	// Evicted is set by the eviction manager: the pod fails, its
	// containers are killed without grace period.
	Evicted *Failure
	// CleanedUp, made with evicted, is closed once the evicted pod's
	// containers are stopped and its volumes removed.
	CleanedUp chan struct{}
	// VolumesRemoved: the finished pod's volumes are torn down.
	VolumesRemoved bool
	// VolumesRefreshAt is when the service-account tokens in the pod's
	// projected volumes are due (zero: it has none, or none written yet).
	VolumesRefreshAt time.Time
}

func NewState() *State {
	return &State{BackOff: map[string]time.Duration{}, Waiting: map[string]Waiting{},
		Ready: map[string]bool{}, Started: map[string]bool{}, Unhealthy: map[string]string{}}
}

// KillContainer is one container to stop.
type KillContainer struct {
	ID, Name, Message string
}

// Actions is what the driver must do next for a pod. The zero value
// means nothing.
type Actions struct {
	// KillPod stops every container and the sandbox (then CreateSandbox,
	// if set, starts over).
	KillPod       bool
	CreateSandbox bool
	// Kill stops single containers (failed liveness, changed spec).
	Kill []KillContainer
	// Start starts these containers (init containers one at a time).
	Start []StartContainer
	// Remove removes stale containers (created but never started).
	Remove []string
	// MarkPullBackOff turns ErrImagePull into ImagePullBackOff.
	MarkPullBackOff []string
	// Terminal: every container is done for good; stop the sandbox.
	Terminal bool
	// RefreshTokens rewrites the projected volumes' service-account
	// tokens, which are due.
	RefreshTokens bool
	// WakeAt asks for another sync then (a back-off ends).
	WakeAt time.Time
}

type StartContainer struct {
	Container *corev1.Container
	Init      bool
	// RestartCount of the new container.
	RestartCount int
	// Previous is the exited container it replaces ("" for the first).
	Previous *cri.ContainerStatus
	// Target is an ephemeral container's targetContainerName, whose
	// process namespace it joins.
	Target string
}

func (a *Actions) Empty() bool {
	return !a.KillPod && !a.CreateSandbox && len(a.Kill) == 0 && len(a.Start) == 0 &&
		len(a.Remove) == 0 && len(a.MarkPullBackOff) == 0 && !a.Terminal && !a.RefreshTokens
}

func (a *Actions) wake(t time.Time) {
	if a.WakeAt.IsZero() || t.Before(a.WakeAt) {
		a.WakeAt = t
	}
}

// restartCount is the count a container was created with.
func restartCount(c *cri.ContainerStatus) int {
	if c == nil {
		return 0
	}
	n, _ := strconv.Atoi(c.Annotations[runtime.AnnotationRestartCount])
	return n
}

func shouldRestart(policy corev1.RestartPolicy, c *cri.ContainerStatus) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return c.ExitCode != 0
	}
	return true
}

// backOffUntil is when a container that exited may start again.
func backOffUntil(st *State, name string, c *cri.ContainerStatus) time.Time {
	d := st.BackOff[name]
	if d == 0 {
		return time.Time{}
	}
	return time.Unix(0, c.FinishedAt).Add(d)
}

// ComputeActions is the kubelet's step function: from the pod's spec,
// what the runtime holds and what the kubelet remembers, it decides what
// to do next. It has no side effects.
func ComputeActions(pod *corev1.Pod, obs *runtime.Pod, st *State, now time.Time) Actions {
	var a Actions
	if IsTerminal(pod, st) {
		if obs.ReadySandbox() != nil {
			a.Terminal = true // stop what still runs
		}
		return a
	}
	sb := obs.ReadySandbox()
	if sb == nil {
		if len(obs.Sandboxes) > 0 && (pod.Spec.RestartPolicy == corev1.RestartPolicyNever && len(obs.Containers) > 0) {
			return a // finished, or its sandbox died and it must not restart
		}
		a.KillPod = len(obs.Sandboxes) > 0
		a.CreateSandbox = true
		return a
	}
	// The projected tokens of a live sandbox are replaced when due,
	// whatever else happens; not yet written (a new pod, or one adopted
	// after a restart of the kubelet) counts as due.
	if podHasTokenVolume(pod) {
		if at := st.VolumesRefreshAt; !at.IsZero() && now.Before(at) {
			a.wake(at)
		} else {
			a.RefreshTokens = true
		}
	}
	// Stale containers that were created but never started.
	for _, c := range obs.Containers {
		if c.State == cri.ContainerState_CONTAINER_CREATED {
			a.Remove = append(a.Remove, c.Id)
		}
	}
	if len(a.Remove) > 0 {
		return a
	}
	// Unhealthy containers are killed; their restart follows their exit.
	for _, c := range obs.Containers {
		if c.State == cri.ContainerState_CONTAINER_RUNNING {
			if msg, ok := st.Unhealthy[c.Id]; ok {
				a.Kill = append(a.Kill, KillContainer{ID: c.Id, Name: c.Metadata.GetName(), Message: msg})
			}
		}
	}
	// A running container whose spec changed (`kubectl set image pod/…`)
	// is killed and started again from the new spec, whatever the
	// restart policy, as the kubelet's containerChanged decides.
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if cur, _ := obs.Latest(c.Name); cur != nil && cur.State == cri.ContainerState_CONTAINER_RUNNING && specChanged(c, cur) {
			a.Kill = append(a.Kill, KillContainer{ID: cur.Id, Name: c.Name, Message: fmt.Sprintf("Container %s definition changed, will be restarted", c.Name)})
		}
	}
	if len(a.Kill) > 0 {
		return a
	}
	// Init containers, in order, each to completion.
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		cur, _ := obs.Latest(ic.Name)
		switch {
		case cur == nil:
			startOrWait(&a, st, ic, true, nil, now)
			return a
		case cur.State == cri.ContainerState_CONTAINER_RUNNING:
			return a
		case cur.ExitCode == 0:
			continue
		case pod.Spec.RestartPolicy == corev1.RestartPolicyNever:
			a.Terminal = true
			return a
		default:
			if until := backOffUntil(st, ic.Name, cur); now.Before(until) {
				a.wake(until)
				return a
			}
			startOrWait(&a, st, ic, true, cur, now)
			return a
		}
	}
	done := 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cur, _ := obs.Latest(c.Name)
		switch {
		case cur == nil:
			startOrWait(&a, st, c, false, nil, now)
		case cur.State == cri.ContainerState_CONTAINER_RUNNING:
		case specChanged(c, cur):
			startOrWait(&a, st, c, false, cur, now) // killed for its new spec: no back-off
		case !shouldRestart(pod.Spec.RestartPolicy, cur):
			done++
		default:
			if until := backOffUntil(st, c.Name, cur); now.Before(until) {
				a.wake(until)
				continue
			}
			startOrWait(&a, st, c, false, cur, now)
		}
	}
	if done == len(pod.Spec.Containers) {
		a.Terminal = true
		return a
	}
	// Ephemeral containers (kubectl debug) run once, never restarted; one
	// with a target waits for the target to run.
	for i := range pod.Spec.EphemeralContainers {
		ec := &pod.Spec.EphemeralContainers[i]
		if cur, _ := obs.Latest(ec.Name); cur != nil {
			continue
		}
		if t := ec.TargetContainerName; t != "" {
			if cur, _ := obs.Latest(t); cur == nil || cur.State != cri.ContainerState_CONTAINER_RUNNING {
				continue
			}
		}
		n := len(a.Start)
		startOrWait(&a, st, (*corev1.Container)(&ec.EphemeralContainerCommon), false, nil, now)
		if len(a.Start) > n {
			a.Start[n].Target = ec.TargetContainerName
		}
	}
	return a
}

// specChanged reports whether a container was made from another spec
// than c (a container without the hash annotation counts as unchanged).
func specChanged(c *corev1.Container, s *cri.ContainerStatus) bool {
	h, ok := s.Annotations[runtime.AnnotationContainerHash]
	return ok && h != ContainerHash(c)
}

func podHasTokenVolume(pod *corev1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if HasTokenProjection(&pod.Spec.Volumes[i]) {
			return true
		}
	}
	return false
}

// startOrWait starts a container unless a start failure holds it back.
func startOrWait(a *Actions, st *State, c *corev1.Container, init bool, prev *cri.ContainerStatus, now time.Time) {
	if w, ok := st.Waiting[c.Name]; ok && now.Before(w.Until) {
		if w.Reason == ReasonErrImagePull {
			a.MarkPullBackOff = append(a.MarkPullBackOff, c.Name)
		}
		a.wake(w.Until)
		return
	}
	n := 0
	if prev != nil {
		n = restartCount(prev) + 1
	}
	a.Start = append(a.Start, StartContainer{Container: c, Init: init, RestartCount: n, Previous: prev})
}

// NextBackOff is the back-off to apply after restarting a container whose
// previous instance is prev.
func NextBackOff(cur time.Duration, prev *cri.ContainerStatus) time.Duration {
	if prev == nil {
		return 0
	}
	if prev.StartedAt != 0 && prev.FinishedAt-prev.StartedAt >= int64(backOffReset) {
		return InitialBackOff
	}
	switch {
	case cur == 0:
		return InitialBackOff
	case cur*2 > MaxBackOff:
		return MaxBackOff
	}
	return cur * 2
}

// IsTerminal reports whether the pod is done for good: its phase is
// Succeeded or Failed, or it is being evicted.
func IsTerminal(pod *corev1.Pod, st *State) bool {
	p := pod.Status.Phase
	return st.Terminal || st.Evicted != nil || p == corev1.PodSucceeded || p == corev1.PodFailed
}

func backOffMessage(d time.Duration, c, pod string) string {
	return fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", d, c, pod)
}

// ContainerHash identifies the spec a container was created from.
func ContainerHash(c *corev1.Container) string {
	data, _ := json.Marshal(c)
	h := fnv.New32a()
	h.Write(data)
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}

// HasTokenProjection reports whether a volume projects a service-account token.
func HasTokenProjection(v *corev1.Volume) bool {
	if v.Projected == nil {
		return false
	}
	for _, src := range v.Projected.Sources {
		if src.ServiceAccountToken != nil {
			return true
		}
	}
	return false
}
