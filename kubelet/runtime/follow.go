package runtime

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"time"

	"minik/proto/cri"
)

// CopyLog writes a container's CRI-format log data to w as kubectl logs
// prints it, honouring tail_lines, since_time, timestamps and
// limit_bytes. It reports whether the byte limit was reached.
func CopyLog(data []byte, req *cri.ReadLogRequest, w io.Writer) (bool, error) {
	f := newFormatter(req, w)
	return f.lines(Tail(data, req.TailLines))
}

func newFormatter(req *cri.ReadLogRequest, w io.Writer) *logFormatter {
	f := &logFormatter{w: w, timestamps: req.Timestamps, remaining: -1}
	if req.LimitBytes > 0 {
		f.remaining = req.LimitBytes
	}
	if req.SinceTime != 0 {
		f.since = time.Unix(0, req.SinceTime)
	}
	return f
}

// lines writes every complete line of data.
func (f *logFormatter) lines(data []byte) (bool, error) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			i = len(data) - 1 // an unterminated last line
		}
		if done, err := f.write(data[:i+1]); done || err != nil {
			return done, err
		}
		data = data[i+1:]
	}
	return false, nil
}

// FollowFile copies a CRI-format log file to w as CopyLog does; with
// follow it then polls the file every 100ms and stops once exited()
// reports the writer gone and the file is drained, or when ctx ends. When
// the log is rotated meanwhile (RotatingFile), it drains the renamed file
// and goes on with the new one. (As with the kubelet, a file rotated in
// and out between two polls, more than the max size in 100ms, is skipped.)
func FollowFile(ctx context.Context, path string, req *cri.ReadLogRequest, w io.Writer, exited func() bool) error {
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	return followFile(ctx, path, req, w, exited, tick.C)
}

// followPoll is how often a followed log file is read again.
const followPoll = 100 * time.Millisecond

// followFile is FollowFile reading the file again at each poll; tests
// send the polls themselves.
func followFile(ctx context.Context, path string, req *cri.ReadLogRequest, w io.Writer, exited func() bool, poll <-chan time.Time) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	defer func() { f.Close() }()
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	// Only whole lines: a line being written is read with the next poll.
	complete := len(data)
	if req.Follow {
		complete = bytes.LastIndexByte(data, '\n') + 1
	}
	out := newFormatter(req, w)
	if done, err := out.lines(Tail(data[:complete], req.TailLines)); done || err != nil || !req.Follow {
		return err
	}
	pending := append([]byte(nil), data[complete:]...)
	buf := make([]byte, 32*1024)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			pending = append(pending, buf[:n]...)
			end := bytes.LastIndexByte(pending, '\n') + 1
			if done, werr := out.lines(pending[:end]); done || werr != nil {
				return werr
			}
			pending = append(pending[:0], pending[end:]...)
			continue
		}
		if err != nil && err != io.EOF {
			return err
		}
		if next := reopened(f, path); next != nil {
			rest, _ := io.ReadAll(f) // what reached the file before it was renamed
			pending = append(pending, rest...)
			f.Close()
			f = next
			continue
		}
		if exited() {
			// Drain what was written before the exit.
			rest, _ := io.ReadAll(f)
			_, err := out.lines(append(pending, rest...))
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-poll:
		}
	}
}

// reopened opens the file now at path if it is not f (the log was
// rotated), else returns nil.
func reopened(f *os.File, path string) *os.File {
	cur, err := os.Stat(path)
	if err != nil {
		return nil
	}
	if old, err := f.Stat(); err == nil && os.SameFile(old, cur) {
		return nil
	}
	next, err := os.Open(path)
	if err != nil {
		return nil
	}
	return next
}
