package containerd

import (
	"context"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/errdefs"

	"minik/kubelet/runtime"
)

// Exec runs a command in the container's task as an extra process, its
// streams copied through FIFOs as the container's own are.
func (r *Runtime) Exec(ctx context.Context, id string, opts runtime.ExecOptions) (int32, error) {
	ctx = r.ctx(ctx)
	c, err := r.load(ctx, id)
	if err != nil {
		return 0, err
	}
	task, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return 0, fmt.Errorf("container %s is not running", id)
	} else if err != nil {
		return 0, err
	}
	spec, err := c.Spec(ctx)
	if err != nil {
		return 0, err
	}
	pspec := *spec.Process
	pspec.Args = opts.Cmd
	pspec.Terminal = opts.TTY
	var stdin io.Reader
	stdinEnded := make(chan struct{})
	if opts.Stdin != nil {
		stdin = &endNotifier{r: opts.Stdin, ended: stdinEnded}
	}
	// Output always goes through FIFOs: with input but no output, runc
	// would hand the process its own output pipe, and the shim would wait
	// for it to close before the exec counts as started.
	stdout, stderr := opts.Stdout, opts.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	streams := []cio.Opt{cio.WithStreams(stdin, stdout, stderr), cio.WithFIFODir(r.fifoDir())}
	if opts.TTY {
		streams = append(streams, cio.WithTerminal)
	}
	proc, err := task.Exec(ctx, "exec-"+newID()[:12], &pspec, cio.NewCreator(streams...))
	if err != nil {
		return 0, err
	}
	// Cleaning up must outlive a cancelled ctx (the client went away), but
	// not hang on a stuck shim.
	cleanup := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	}
	// The shim holds the stdin FIFO open until CloseIO: only then does the
	// process read the end of its input.
	closeStdin := sync.OnceFunc(func() {
		cctx, cancel := cleanup()
		defer cancel()
		_ = proc.CloseIO(cctx, containerd.WithStdinCloser)
	})
	defer func() {
		cctx, cancel := cleanup()
		defer cancel()
		_, _ = proc.Delete(cctx, containerd.WithProcessKill)
	}()
	exited, err := proc.Wait(ctx)
	if err != nil {
		return 0, err
	}
	if err := proc.Start(ctx); err != nil {
		return 0, err
	}
	finished := make(chan struct{})
	defer close(finished)
	if opts.Stdin != nil {
		go func() {
			select {
			case <-stdinEnded:
				closeStdin()
			case <-finished:
			}
		}()
	}
	go func() {
		for {
			select {
			case <-finished:
				return
			case sz, ok := <-opts.Resize:
				if !ok {
					return
				}
				_ = proc.Resize(ctx, uint32(sz.Width), uint32(sz.Height))
			}
		}
	}()
	select {
	case es := <-exited:
		if es.Error() == nil {
			proc.IO().Wait() // the last output reaches the writers before the exit code
			return int32(es.ExitCode()), nil
		}
		if ctx.Err() == nil {
			return 0, es.Error()
		}
	case <-ctx.Done():
	}
	cctx, cancel := cleanup()
	defer cancel()
	_ = proc.Kill(cctx, syscall.SIGKILL)
	return 0, ctx.Err()
}

// endNotifier closes ended when its reader ends.
type endNotifier struct {
	r     io.Reader
	ended chan struct{}
	once  sync.Once
}

func (e *endNotifier) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.ended) })
	}
	return n, err
}
