package containerd

import (
	"context"
	"errors"
	"io"
	"path/filepath"

	"github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/cio"
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
// and its two stream writers.
type logSink struct {
	file           *runtime.RotatingFile
	stdout, stderr io.WriteCloser
}

func (r *Runtime) openLogSink(path string) (*logSink, error) {
	f, err := runtime.OpenRotating(path, r.cfg.ContainerLogMaxSize, r.cfg.ContainerLogMaxFiles)
	if err != nil {
		return nil, err
	}
	lw := runtime.NewLogWriter(f, nil)
	return &logSink{file: f, stdout: lw.Stream("stdout"), stderr: lw.Stream("stderr")}, nil
}

// close writes the streams' unterminated last lines and closes the file.
func (s *logSink) close() error {
	return errors.Join(s.stdout.Close(), s.stderr.Close(), s.file.Close())
}

func (r *Runtime) fifoDir() string { return filepath.Join(r.cfg.RunDir, "fifo") }

// logCreator makes the IO of a new task: FIFOs copied into the log file
// at path.
func (r *Runtime) logCreator(path string) (cio.Creator, *logSink, error) {
	sink, err := r.openLogSink(path)
	if err != nil {
		return nil, nil, err
	}
	return cio.NewCreator(cio.WithStreams(nil, sink.stdout, sink.stderr), cio.WithFIFODir(r.fifoDir())), sink, nil
}

// drainLogs waits until the task's output ends (the container exited and
// the shim closed the FIFOs), then removes the FIFOs and closes the log.
func (r *Runtime) drainLogs(id string, tio cio.IO, sink *logSink) {
	r.mu.Lock()
	r.logging[id] = true
	r.mu.Unlock()
	go func() {
		tio.Wait()
		_ = tio.Close()
		_ = sink.close()
		r.mu.Lock()
		delete(r.logging, id)
		r.mu.Unlock()
	}()
}

// reattachLogs resumes copying the output of the containers that run
// while no runtime read it (minik was restarted).
func (r *Runtime) reattachLogs(ctx context.Context) error {
	ctx = r.ctx(ctx)
	list, err := r.client.ContainerService().List(ctx, `labels."`+labelKind+`"==container`)
	if err != nil {
		return err
	}
	procs, err := r.tasks(ctx, "", list)
	if err != nil {
		return err
	}
	for _, info := range list {
		p, path := procs[info.ID], info.Labels[labelLogPath]
		r.mu.Lock()
		attached := r.logging[info.ID]
		r.mu.Unlock()
		// An exited task's FIFOs have no writer left: opening them would
		// wait forever.
		if p == nil || p.Status != task.Status_RUNNING || path == "" || attached {
			continue
		}
		if err := r.attachLogs(ctx, info.ID, path); err != nil {
			log.G(ctx).WithError(err).WithField("container", info.ID).Warn("reattaching a container's log")
		}
	}
	return nil
}

func (r *Runtime) attachLogs(ctx context.Context, id, path string) error {
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return err
	}
	sink, err := r.openLogSink(path)
	if err != nil {
		return err
	}
	t, err := c.Task(ctx, cio.NewAttach(cio.WithStreams(nil, sink.stdout, sink.stderr)))
	if err != nil {
		_ = sink.close()
		if errdefs.IsNotFound(err) {
			return nil // it exited meanwhile
		}
		return err
	}
	r.drainLogs(id, t.IO(), sink)
	return nil
}
