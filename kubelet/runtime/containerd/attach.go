package containerd

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	containerd "github.com/containerd/containerd"
	"github.com/containerd/containerd/errdefs"

	"minik/kubelet/runtime"
)

// A container's own process is reached by kubectl attach as with
// containerd's CRI plugin: its output FIFOs are read once, into the log
// and into every attached client; its input FIFO (a container created
// with stdin) is fed from one pipe that attached clients write into.
//
//	shim ─stdout/stderr FIFOs─▶ attachIO.tee ─▶ log file
//	                                        └─▶ each attached client
//	attached client's input ─▶ attachIO.stdin pipe ─stdin FIFO─▶ shim
//
// The pipe is this process's: a container adopted after a restart
// (reattachLogs) gets a new one, opened on the same FIFO.

// attachIO is one running container's streams.
type attachIO struct {
	tty, stdinOnce bool
	// stdinR is what the task's IO copies into the stdin FIFO; stdinW is
	// where clients write. Both nil without stdin.
	stdinR *io.PipeReader
	stdinW *io.PipeWriter

	mu      sync.Mutex
	clients map[*attachClient]struct{}
	// stdinTaken: with stdinOnce, a client already had the input.
	stdinTaken bool
	// done is closed once the output ended (the container exited) and
	// every byte of it was written.
	done chan struct{}
}

type attachClient struct{ stdout, stderr io.Writer }

// Container labels for attach (the kubelet's stdin, stdinOnce, tty).
const (
	labelStdin     = "minik.io/stdin"
	labelStdinOnce = "minik.io/stdin-once"
	labelTTY       = "minik.io/tty"
)

func newAttachIO(labels map[string]string) *attachIO {
	a := &attachIO{tty: labels[labelTTY] == "true", stdinOnce: labels[labelStdinOnce] == "true",
		clients: map[*attachClient]struct{}{}, done: make(chan struct{})}
	if labels[labelStdin] == "true" {
		a.stdinR, a.stdinW = io.Pipe()
	}
	return a
}

// stdin is the reader the task's IO copies from: nil for none (the
// process then reads /dev/null).
func (a *attachIO) stdin() io.Reader {
	if a.stdinR == nil {
		return nil
	}
	return a.stdinR
}

// tee is the writer of one output stream (1 stdout, 2 stderr): the log
// first, then every client; a client that fails is dropped.
func (a *attachIO) tee(log io.Writer, stream int) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		n, err := log.Write(p)
		a.mu.Lock()
		defer a.mu.Unlock()
		for c := range a.clients {
			w := c.stdout
			if stream == 2 {
				w = c.stderr
			}
			if w == nil {
				continue
			}
			if _, werr := w.Write(p); werr != nil {
				delete(a.clients, c)
			}
		}
		return n, err
	})
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Attach connects opts' streams to the container's process until it
// exits or ctx ends.
func (r *Runtime) Attach(ctx context.Context, id string, opts runtime.ExecOptions) error {
	ctx = r.ctx(ctx)
	c, err := r.load(ctx, id)
	if err != nil {
		return err
	}
	task, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return fmt.Errorf("container %s is not running", id)
	} else if err != nil {
		return err
	}
	if st, err := task.Status(ctx); err != nil {
		return err
	} else if st.Status != containerd.Running {
		return fmt.Errorf("container %s is not running (%s)", id, st.Status)
	}
	r.mu.Lock()
	a := r.attached[id]
	r.mu.Unlock()
	if a == nil {
		return fmt.Errorf("container %s: its output is not being read (it started without FIFOs)", id)
	}
	client := &attachClient{stdout: opts.Stdout, stderr: opts.Stderr}
	if a.tty {
		client.stderr = nil
	}
	a.mu.Lock()
	a.clients[client] = struct{}{}
	useStdin := opts.Stdin != nil && a.stdinW != nil && !(a.stdinOnce && a.stdinTaken)
	if useStdin && a.stdinOnce {
		a.stdinTaken = true
	}
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.clients, client)
		a.mu.Unlock()
	}()
	if useStdin {
		go func() {
			_, _ = io.Copy(a.stdinW, opts.Stdin)
			if a.stdinOnce {
				// The first client's input ended: so does the process's.
				a.stdinW.Close()
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				_ = task.CloseIO(cctx, containerd.WithStdinCloser)
			}
		}()
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-a.done:
				return
			case sz, ok := <-opts.Resize:
				if !ok {
					return
				}
				if a.tty {
					_ = task.Resize(ctx, uint32(sz.Width), uint32(sz.Height))
				}
			}
		}
	}()
	select {
	case <-a.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
