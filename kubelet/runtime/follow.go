package runtime

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"minik/proto/cri"
)

// FollowFile copies a log file to w, honouring tail_lines, limit_bytes and
// follow. Following polls the file every 100ms and stops once exited()
// reports the writer gone and the file is drained, or when ctx ends.
func FollowFile(ctx context.Context, path string, req *cri.ReadLogRequest, w io.Writer, exited func() bool) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	out := Tail(data, req.TailLines)
	limit := req.LimitBytes
	write := func(p []byte) (bool, error) {
		if limit > 0 && int64(len(p)) >= limit {
			_, err := w.Write(p[:limit])
			return true, err
		}
		if limit > 0 {
			limit -= int64(len(p))
		}
		_, err := w.Write(p)
		return false, err
	}
	if done, err := write(out); done || err != nil || !req.Follow {
		return err
	}
	buf := make([]byte, 32*1024)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if done, werr := write(buf[:n]); done || werr != nil {
				return werr
			}
			continue
		}
		if err != nil && err != io.EOF {
			return err
		}
		if exited() {
			// Drain what was written before the exit.
			rest, _ := io.ReadAll(f)
			_, err := write(rest)
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}
