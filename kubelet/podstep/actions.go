package podstep

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"minik/proto/cri"
)

// Action is one thing the step asks the worker to do. The worker does
// a step's actions in order, stops at the first that fails, and sends
// each outcome back as an Event.
type Action interface {
	// String is the action as the step's scripts show it.
	String() string
}

// Admit runs node admission (resources, ports, affinity, taints,
// sysctls, node pressure); the answer is an Admission event.
type Admit struct{}

// RecordEvent records a Kubernetes event on the pod.
type RecordEvent struct{ Type, Reason, Message string }

// CreateSandbox writes the pod's sandbox files (resolv.conf, hosts) and
// runs a new sandbox, the Attempt-th of the pod.
type CreateSandbox struct{ Attempt uint32 }

// StopPod stops every running container of the listed sandboxes with
// Grace seconds (SIGTERM, SIGKILL after them), then the sandboxes; its
// outcome is a PodStopped event. Terminal: the pod is done for good.
type StopPod struct {
	SandboxIDs []string
	Grace      int64
	Terminal   bool
}

// KillContainer stops one container with Grace seconds (SIGTERM, then
// SIGKILL); outcome ContainerKilled. The worker runs consecutive
// KillContainer actions at once.
type KillContainer struct {
	ID, Name string
	Grace    int64
}

// RunPreStop runs a container's preStop exec hook, for at most
// TimeoutSeconds; outcome PreStopDone.
type RunPreStop struct {
	ID, Name       string
	Command        []string
	TimeoutSeconds int64
}

// RemoveContainer removes a container record (created but never started).
type RemoveContainer struct{ ID string }

// SetUpVolumes sets up the pod's volumes and /etc/hosts before its
// containers start; outcome VolumesReady or VolumesFailed (which ends
// the step's actions). Names are the containers about to start.
type SetUpVolumes struct{ Names []string }

// StartContainer pulls the image (per its pull policy), creates and
// starts the container; outcome ContainerStarted or StartFailed.
type StartContainer struct {
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

// RefreshTokens rewrites the projected volumes' service-account tokens;
// outcome TokensRefreshed.
type RefreshTokens struct{}

// RemoveVolumes tears the pod's volumes down; outcome VolumesRemoved.
type RemoveVolumes struct{}

// DeletePod deletes the API object with grace period 0 and the pod's UID
// as precondition; outcome PodDeleted.
type DeletePod struct{}

// RemovePod removes the pod's sandboxes and its directories; the worker
// then ends.
type RemovePod struct{ SandboxIDs []string }

func (Admit) String() string { return "admit" }
func (a RecordEvent) String() string {
	return fmt.Sprintf("event %s %s: %s", a.Type, a.Reason, a.Message)
}
func (a CreateSandbox) String() string { return fmt.Sprintf("create-sandbox attempt=%d", a.Attempt) }
func (a StopPod) String() string {
	s := fmt.Sprintf("stop-pod %s grace=%d", strings.Join(a.SandboxIDs, ","), a.Grace)
	if a.Terminal {
		s += " terminal"
	}
	return s
}
func (a KillContainer) String() string {
	return fmt.Sprintf("kill %s %s grace=%d", a.Name, a.ID, a.Grace)
}
func (a RunPreStop) String() string {
	return fmt.Sprintf("prestop %s %s %q timeout=%d", a.Name, a.ID, a.Command, a.TimeoutSeconds)
}
func (a RemoveContainer) String() string { return "remove-container " + a.ID }
func (a SetUpVolumes) String() string    { return "setup-volumes" }
func (a StartContainer) String() string {
	s := fmt.Sprintf("start %s restarts=%d", a.Container.Name, a.RestartCount)
	if a.Init {
		s += " init"
	}
	if a.Target != "" {
		s += " target=" + a.Target
	}
	return s
}
func (RefreshTokens) String() string { return "refresh-tokens" }
func (RemoveVolumes) String() string { return "remove-volumes" }
func (DeletePod) String() string     { return "delete-pod" }
func (a RemovePod) String() string   { return "remove-pod " + strings.Join(a.SandboxIDs, ",") }
