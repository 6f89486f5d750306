package podstep

import (
	"time"
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

// State is the worker's memory about one pod, beyond what the runtime
// holds. Only Step writes it; others may read it under the worker's lock.
type State struct {
	// BackOff is the current crash-loop back-off per container name.
	BackOff map[string]time.Duration
	// PullBackOff is the current image-pull back-off per container name.
	PullBackOff map[string]time.Duration
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
	// VolumesRemoved: the finished pod's volumes are torn down.
	VolumesRemoved bool
	// VolumesRefreshAt is when the service-account tokens in the pod's
	// projected volumes are due (zero: it has none, or none written yet).
	VolumesRefreshAt time.Time
	// RetryAt holds back every action until then, after one failed.
	RetryAt time.Time
	// Termination is the deleted pod's termination, nil before.
	Termination *Termination
}

// Termination is how far a deleted pod's termination has come.
type Termination struct {
	// Deadline is when the grace period ends: containers still running
	// then are killed. It only ever moves earlier (a shorter grace period
	// given by a later delete).
	Deadline time.Time
	// PreStopRun holds the containers (by ID) whose preStop hook ran.
	PreStopRun map[string]bool
	// Stopped: every container and sandbox is stopped.
	Stopped bool
	// Deleted: the API object is gone (or needs no delete).
	Deleted bool
}

// NewState is the state of a pod the worker sees first at now.
func NewState(now time.Time) *State {
	return &State{BackOff: map[string]time.Duration{}, PullBackOff: map[string]time.Duration{}, Waiting: map[string]Waiting{},
		Ready: map[string]bool{}, Started: map[string]bool{}, Unhealthy: map[string]string{}, StartTime: now}
}
