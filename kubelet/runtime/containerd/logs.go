package containerd

import (
	"context"
	"errors"
	"io"
	"path/filepath"

	"github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/log"

	"minik/kubelet/runtime"
)

// A container's output reaches its log file as with containerd's CRI
// plugin: the shim writes stdout and stderr into FIFOs, and the runtime
// reads them and appends CRI-format entries, stamped with the time it
// read them. The shim holds the FIFOs open, so a container outlives this
// process; once the FIFOs fill (64KiB each) a container that keeps
// printing waits until a new runtime attaches again (reattachLogs).

// logSink is one container's log file (rotated at the configured size)
// and its two stream writers; a container without a log path has an
// empty sink that discards.
type logSink struct {
	file           *runtime.RotatingFile
	stdout, stderr io.WriteCloser
}

func (r *Runtime) openLogSink(path string) (*logSink, error) {
	if path == "" {
		return &logSink{stdout: nopCloser{io.Discard}, stderr: nopCloser{io.Discard}}, nil
	}
	f, err := runtime.OpenRotating(path, r.cfg.ContainerLogMaxSize, r.cfg.ContainerLogMaxFiles)
	if err != nil {
		return nil, err
	}
	lw := runtime.NewLogWriter(f, nil)
	return &logSink{file: f, stdout: lw.Stream("stdout"), stderr: lw.Stream("stderr")}, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// close writes the streams' unterminated last lines and closes the file.
func (s *logSink) close() error {
	err := errors.Join(s.stdout.Close(), s.stderr.Close())
	if s.file != nil {
		err = errors.Join(err, s.file.Close())
	}
	return err
}

func (r *Runtime) fifoDir() string { return filepath.Join(r.cfg.RunDir, "fifo") }

// taskIO makes the IO of a container's task from its labels: FIFOs whose
// output is copied into its log and to attached clients, a stdin FIFO for
// a container with stdin, a terminal for a tty one: cio.NewCreator(opts...)
// for a new task, cio.NewAttach(opts...) for a running one's FIFOs (after
// a restart).
func (r *Runtime) taskIO(labels map[string]string) ([]cio.Opt, *logSink, *attachIO, error) {
	sink, err := r.openLogSink(labels[labelLogPath])
	if err != nil {
		return nil, nil, nil, err
	}
	a := newAttachIO(labels)
	opts := []cio.Opt{cio.WithStreams(a.stdin(), a.tee(sink.stdout, 1), a.tee(sink.stderr, 2)), cio.WithFIFODir(r.fifoDir())}
	if a.tty {
		opts = append(opts, cio.WithTerminal)
	}
	return opts, sink, a, nil
}

// drainLogs waits until the task's output ends (the container exited and
// the shim closed the FIFOs), then removes the FIFOs, closes the log and
// ends the attached clients' sessions.
func (r *Runtime) drainLogs(id string, tio cio.IO, sink *logSink, a *attachIO) {
	r.mu.Lock()
	r.attached[id] = a
	r.mu.Unlock()
	go func() {
		tio.Wait()
		_ = tio.Close()
		_ = sink.close()
		if a.stdinW != nil {
			a.stdinW.Close()
		}
		r.mu.Lock()
		delete(r.attached, id)
		r.mu.Unlock()
		close(a.done)
	}()
}

// reattachLogs resumes copying the output of the listed containers that
// run while no runtime read it (minik was restarted).
func (r *Runtime) reattachLogs(ctx context.Context, list []containers.Container) error {
	ctx = r.ctx(ctx)
	procs, err := r.allTasks(ctx)
	if err != nil {
		return err
	}
	for _, info := range list {
		p := procs[info.ID]
		r.mu.Lock()
		attached := r.attached[info.ID] != nil
		r.mu.Unlock()
		// An exited task's FIFOs have no writer left: opening them would
		// wait forever.
		if p == nil || p.Status != task.Status_RUNNING || attached {
			continue
		}
		if err := r.attachLogs(ctx, info); err != nil {
			log.G(ctx).WithError(err).WithField("container", info.ID).Warn("reattaching a container's log")
		}
	}
	return nil
}

func (r *Runtime) attachLogs(ctx context.Context, info containers.Container) error {
	c, err := r.client.LoadContainer(ctx, info.ID)
	if err != nil {
		return err
	}
	opts, sink, a, err := r.taskIO(info.Labels)
	if err != nil {
		return err
	}
	t, err := c.Task(ctx, cio.NewAttach(opts...))
	if err != nil {
		_ = sink.close()
		if errdefs.IsNotFound(err) {
			return nil // it exited meanwhile
		}
		return err
	}
	r.drainLogs(info.ID, t.IO(), sink, a)
	return nil
}
