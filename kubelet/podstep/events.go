package podstep

import (
	"fmt"
	"time"

	"minik/proto/cri"
)

// Event is what happened since the last step: a probe's verdict, an
// eviction, admission's answer, or the outcome of an action. The worker
// sends each to the step; nothing else changes the State.
type Event interface{ event() string }

// Readiness is a readiness probe's new verdict on a container.
type Readiness struct {
	ContainerID string
	Ready       bool
}

// StartupSucceeded: the container's startup probe succeeded.
type StartupSucceeded struct{ ContainerID string }

// Unhealthy: a liveness or startup probe failed; the container must be
// restarted, Message says why ("Container c failed liveness probe, will be restarted").
type Unhealthy struct{ ContainerID, Message string }

// Evict: the eviction manager evicts the pod (a hard threshold: no
// grace period); Failure is the pod's reason (Evicted) and message.
type Evict struct{ Failure Failure }

// Admission is admission's answer: nil Failure admits the pod.
type Admission struct{ Failure *Failure }

// ActionFailed: an action failed; the step holds back for a while.
type ActionFailed struct{ Action, Message string }

// ObserveFailed: the runtime could not be read.
type ObserveFailed struct{ Message string }

// StatusFailed: the pod's status could not be written.
type StatusFailed struct{ Message string }

// VolumesFailed: the pod's volumes could not be set up; Mount says the
// volume is not there yet (a claim not bound), else the pod's spec asks
// for what cannot be done (CreateContainerConfigError).
type VolumesFailed struct {
	Names   []string // the containers that were to start
	Mount   bool
	Message string
}

// VolumesReady: the pod's volumes are set up; their tokens are due at
// RefreshAt (zero: none).
type VolumesReady struct{ RefreshAt time.Time }

// TokensRefreshed: the projected tokens were rewritten and are due
// again at RefreshAt; a failed refresh has a zero RefreshAt.
type TokensRefreshed struct{ RefreshAt time.Time }

// ContainerStarted: the container runs; it replaced Previous (nil for
// its first instance).
type ContainerStarted struct {
	Name     string
	Previous *cri.ContainerStatus
}

// StartFailed: the container could not start; Reason is Kubernetes'
// waiting reason (ErrImagePull, CreateContainerConfigError, …).
type StartFailed struct{ Name, Reason, Message string }

// ContainerKilled: the container was stopped.
type ContainerKilled struct{ ID string }

// PreStopDone: the container's preStop hook ran (or failed: the kill
// goes on either way).
type PreStopDone struct{ ID string }

// PodStopped: every container and sandbox of the pod is stopped;
// Terminal as the StopPod action said.
type PodStopped struct{ Terminal bool }

// VolumesRemoved: the pod's volumes are torn down.
type VolumesRemoved struct{}

// PodDeleted: the API object is deleted (or already gone).
type PodDeleted struct{}

func (e Readiness) event() string {
	return fmt.Sprintf("readiness %s ready=%v", e.ContainerID, e.Ready)
}
func (e StartupSucceeded) event() string { return "startup-succeeded " + e.ContainerID }
func (e Unhealthy) event() string        { return fmt.Sprintf("unhealthy %s %q", e.ContainerID, e.Message) }
func (e Evict) event() string            { return fmt.Sprintf("evict %q", e.Failure.Message) }
func (e Admission) event() string {
	if e.Failure == nil {
		return "admitted"
	}
	return fmt.Sprintf("rejected %s %q", e.Failure.Reason, e.Failure.Message)
}
func (e ActionFailed) event() string  { return fmt.Sprintf("action-failed %s %q", e.Action, e.Message) }
func (e ObserveFailed) event() string { return fmt.Sprintf("observe-failed %q", e.Message) }
func (e StatusFailed) event() string  { return fmt.Sprintf("status-failed %q", e.Message) }
func (e VolumesFailed) event() string {
	return fmt.Sprintf("volumes-failed %v mount=%v %q", e.Names, e.Mount, e.Message)
}
func (e VolumesReady) event() string     { return "volumes-ready" }
func (e TokensRefreshed) event() string  { return "tokens-refreshed" }
func (e ContainerStarted) event() string { return "started " + e.Name }
func (e StartFailed) event() string {
	return fmt.Sprintf("start-failed %s %s %q", e.Name, e.Reason, e.Message)
}
func (e ContainerKilled) event() string { return "killed " + e.ID }
func (e PreStopDone) event() string     { return "prestop-done " + e.ID }
func (e PodStopped) event() string      { return fmt.Sprintf("pod-stopped terminal=%v", e.Terminal) }
func (e VolumesRemoved) event() string  { return "volumes-removed" }
func (e PodDeleted) event() string      { return "pod-deleted" }
