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

// plan is what a running pod needs next. The zero value means nothing.
type plan struct {
	// KillPod stops every container and the sandbox (then CreateSandbox,
	// if set, starts over).
	KillPod       bool
	CreateSandbox bool
	// Kill stops single containers (failed liveness, changed spec).
	Kill []killContainer
	// Start starts these containers (init containers one at a time).
	Start []startContainer
	// Remove removes stale containers (created but never started).
	Remove []string
	// MarkPullBackOff turns ErrImagePull into ImagePullBackOff.
	MarkPullBackOff []string
	// Terminal: every container is done for good; stop the sandbox.
	Terminal bool
	// RefreshTokens rewrites the projected volumes' service-account
	// tokens, which are due.
	RefreshTokens bool
	// WakeAt asks for another step then (a back-off ends).
	WakeAt time.Time
}

// killContainer is one container to stop, and why.
type killContainer struct {
	ID, Name, Message string
}

type startContainer struct {
	Container *corev1.Container
	Init      bool
	// RestartCount of the new container.
	RestartCount int
	// Previous is the exited container it replaces (nil for the first).
	Previous *cri.ContainerStatus
	// Target is an ephemeral container's targetContainerName, whose
	// process namespace it joins.
	Target string
}

func (a *plan) wake(t time.Time) {
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

// computePlan decides what a running pod needs next: from the pod's
// spec, what the runtime holds and the worker's state.
func computePlan(pod *corev1.Pod, obs *runtime.Pod, st *State, now time.Time) plan {
	var a plan
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
				a.Kill = append(a.Kill, killContainer{ID: c.Id, Name: c.Metadata.GetName(), Message: msg})
			}
		}
	}
	// A running container whose spec changed (`kubectl set image pod/…`)
	// is killed and started again from the new spec, whatever the
	// restart policy, as the kubelet's containerChanged decides.
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if cur, _ := obs.Latest(c.Name); cur != nil && cur.State == cri.ContainerState_CONTAINER_RUNNING && specChanged(c, cur) {
			a.Kill = append(a.Kill, killContainer{ID: cur.Id, Name: c.Name, Message: fmt.Sprintf("Container %s definition changed, will be restarted", c.Name)})
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
func startOrWait(a *plan, st *State, c *corev1.Container, init bool, prev *cri.ContainerStatus, now time.Time) {
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
	a.Start = append(a.Start, startContainer{Container: c, Init: init, RestartCount: n, Previous: prev})
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
