// Package runtime is the kubelet's view of a container runtime: the small
// Runtime interface, and its gRPC client and server over the mini-CRI
// (minik/proto/cri). Two implementations exist: containerd (package
// runtime/containerd, usually reached through the gRPC socket) and a fake
// for hollow nodes (package runtime/fake). Package runtime/conformance
// holds the tests both must pass.
package runtime

import (
	"context"
	"errors"
	"io"

	"minik/proto/cri"
)

// Runtime runs pod sandboxes and containers, keeps images, and reads
// container logs. Every method is safe for concurrent use. Errors that
// mean "no such object" wrap ErrNotFound.
type Runtime interface {
	Version(ctx context.Context) (*cri.VersionResponse, error)
	// UpdatePodCIDR sets the range pod IPs are taken from.
	UpdatePodCIDR(ctx context.Context, cidr string) error

	RunPodSandbox(ctx context.Context, cfg *cri.PodSandboxConfig) (string, error)
	StopPodSandbox(ctx context.Context, id string) error
	RemovePodSandbox(ctx context.Context, id string) error
	// ListPodSandbox lists the sandboxes of the pod with that UID, or of
	// every pod when podUID is "" (a pod's worker asks for its own only:
	// listing them all at each step costs O(pods) a step).
	ListPodSandbox(ctx context.Context, podUID string) ([]*cri.PodSandbox, error)

	CreateContainer(ctx context.Context, sandboxID string, cfg *cri.ContainerConfig, sandbox *cri.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, id string) error
	// StopContainer sends SIGTERM, then SIGKILL after timeoutSeconds.
	StopContainer(ctx context.Context, id string, timeoutSeconds int64) error
	RemoveContainer(ctx context.Context, id string) error
	// ListContainers lists the containers of one sandbox, or all when
	// sandboxID is empty.
	ListContainers(ctx context.Context, sandboxID string) ([]*cri.Container, error)
	ContainerStatus(ctx context.Context, id string) (*cri.ContainerStatus, error)
	ExecSync(ctx context.Context, id string, cmd []string, timeoutSeconds int64) (*cri.ExecSyncResponse, error)
	// Exec runs a command in a running container with streamed input and
	// output, and returns its exit code once it exited and its output is
	// written. Ending ctx kills the command.
	Exec(ctx context.Context, id string, opts ExecOptions) (exitCode int32, err error)
	// Attach connects streams to a running container's own process, as
	// kubectl attach does. Stdin reaches the process if the container was
	// created with stdin (it is ignored otherwise); with stdin_once, its
	// end closes the process's input for good. Output is copied from now
	// on (what came before is in the log); a tty container writes all of
	// it to Stdout. Attach returns nil once the container exited and its
	// output is written, or ctx.Err() when ctx ends. opts.Cmd and
	// opts.TTY are not used.
	Attach(ctx context.Context, id string, opts ExecOptions) error
	// PortForward connects to port on the sandbox's localhost (inside its
	// network namespace), as kubectl port-forward does, and copies what
	// stream reads to it and what it answers to stream. When stream's
	// input ends, the connection is half-closed; PortForward returns once
	// the port's side has closed, or ctx ends.
	PortForward(ctx context.Context, sandboxID string, port int32, stream io.ReadWriter) error
	// ReadLog copies a container's log to w; with follow it keeps copying
	// until ctx ends or the container has exited and its log is drained.
	ReadLog(ctx context.Context, req *cri.ReadLogRequest, w io.Writer) error
	// ListContainerStats reports the resource usage of every container.
	ListContainerStats(ctx context.Context) ([]*cri.ContainerStats, error)
	// GetContainerEvents subscribes to the runtime's container events
	// (CRI's GetContainerEvents). It returns once subscribed: every
	// container change after that is received, in order, until the
	// stream's Recv returns an error (ctx ended, or the runtime can no
	// longer promise to deliver every event). What happened before the
	// subscription, or after the error, the caller learns by listing.
	GetContainerEvents(ctx context.Context) (ContainerEventStream, error)

	ListImages(ctx context.Context) ([]*cri.Image, error)
	// ImageStatus returns nil, nil when the image is not present.
	ImageStatus(ctx context.Context, ref string) (*cri.Image, error)
	PullImage(ctx context.Context, ref string, insecure bool) (string, error)
	RemoveImage(ctx context.Context, ref string) error
}

// ContainerEventStream is a subscription to container events.
type ContainerEventStream interface {
	// Recv returns the next event; an error ends the stream.
	Recv() (*cri.ContainerEventResponse, error)
}

// ErrEventsLost ends an event stream after which events may have been
// lost: the reader fell behind, or the runtime restarted.
var ErrEventsLost = errors.New("container events lost")

// ContainerStatusLister is what a Runtime may offer beside the interface:
// the full status of every container of a sandbox in one call, where
// ListContainers and a ContainerStatus per container would read each
// container twice. The kubelet uses it when the runtime has it
// (ContainerStatuses).
type ContainerStatusLister interface {
	ListContainerStatuses(ctx context.Context, sandboxID string) ([]*cri.ContainerStatus, error)
}

// ContainerStatuses returns the status of each container of a sandbox,
// in one call when rt is a ContainerStatusLister. A container removed
// between the listing and its status is left out.
func ContainerStatuses(ctx context.Context, rt Runtime, sandboxID string) ([]*cri.ContainerStatus, error) {
	if l, ok := rt.(ContainerStatusLister); ok {
		return l.ListContainerStatuses(ctx, sandboxID)
	}
	return containerStatusesOneByOne(ctx, rt, sandboxID)
}

// containerStatusesOneByOne is ContainerStatuses for a runtime without
// the one call: the listing, then each container's status.
func containerStatusesOneByOne(ctx context.Context, rt Runtime, sandboxID string) ([]*cri.ContainerStatus, error) {
	cs, err := rt.ListContainers(ctx, sandboxID)
	if err != nil {
		return nil, err
	}
	out := make([]*cri.ContainerStatus, 0, len(cs))
	for _, c := range cs {
		st, err := rt.ContainerStatus(ctx, c.Id)
		if errors.Is(err, ErrNotFound) {
			continue
		} else if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// ExecOptions are the streams of an Exec.
type ExecOptions struct {
	Cmd []string
	// TTY runs the command on a terminal; its output all goes to Stdout.
	TTY bool
	// Stdin is the command's input until EOF; nil for none (/dev/null).
	// Exec may still be reading it when it returns: the caller closes it.
	Stdin io.Reader
	// Stdout and Stderr receive its output; nil discards it.
	Stdout, Stderr io.Writer
	// Resize sets the terminal's size (TTY only); nil for none.
	Resize <-chan TerminalSize
}

// TerminalSize is a terminal's size in characters.
type TerminalSize struct{ Width, Height uint16 }

// Labels the kubelet puts on sandboxes and containers, so that it can
// find its own objects again after a restart.
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"
	// AnnotationContainerHash is the hash of the container spec the
	// container was created from.
	AnnotationContainerHash = "io.kubernetes.container.hash"
	// AnnotationRestartCount is the restart count the container was created with.
	AnnotationRestartCount = "io.kubernetes.container.restartCount"
	// AnnotationInit marks init containers.
	AnnotationInit = "minik.io/init-container"
)
