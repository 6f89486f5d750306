package runtime

import (
	"compress/gzip"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Container log rotation, as the kubelet's container log manager does it
// (--container-log-max-size, --container-log-max-files): once a log file
// reaches the size, it is renamed to FILE.YYYYMMDD-hhmmss and a new FILE
// is started; rotated files but the newest are gzipped (FILE.….gz), and
// the oldest are removed so that at most maxFiles files remain, the
// current one included. `kubectl logs` reads the current file.
//
// Kubernetes checks sizes every 10s and asks the runtime to reopen the
// file; here the runtime writes the log itself, so it rotates as soon as
// an entry takes the file past the size (entries are never split), at
// most once a second.

const (
	// DefaultContainerLogMaxSize and DefaultContainerLogMaxFiles are the
	// kubelet's defaults (10Mi, 5).
	DefaultContainerLogMaxSize  = 10 << 20
	DefaultContainerLogMaxFiles = 5
	rotatedTimeFormat           = "20060102-150405"
)

// RotatingFile is a container's log file that rotates. Write is not safe
// for concurrent use (LogWriter serializes its entries).
type RotatingFile struct {
	path     string
	maxSize  int64
	maxFiles int
	now      func() time.Time

	f    *os.File
	size int64
	// cleaning holds one token: compressing and removing old files runs
	// off the write path, one run at a time; Close waits for the runs.
	cleaning chan struct{}
	cleanups sync.WaitGroup
}

// OpenRotating opens (appends to) the log file at path. maxSize <= 0 or
// maxFiles < 2 turn rotation off.
func OpenRotating(path string, maxSize int64, maxFiles int) (*RotatingFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	r := &RotatingFile{path: path, maxSize: maxSize, maxFiles: maxFiles, now: time.Now, cleaning: make(chan struct{}, 1)}
	r.cleaning <- struct{}{}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *RotatingFile) open() error {
	f, err := os.OpenFile(r.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	r.f, r.size = f, st.Size()
	return nil
}

func (r *RotatingFile) Write(p []byte) (int, error) {
	n, err := r.f.Write(p)
	r.size += int64(n)
	if err == nil && r.maxSize > 0 && r.maxFiles >= 2 && r.size >= r.maxSize {
		if rerr := r.rotate(); rerr != nil {
			// Keep writing to the file we have: a full log beats a lost one.
			slog.Warn("rotating a container log", "path", r.path, "err", rerr)
		}
	}
	return n, err
}

// rotate renames the current file aside and starts a new one. Rotated
// files are named by the second, so it rotates at most once a second (a
// faster writer overshoots the size, as the kubelet's 10s check lets it).
func (r *RotatingFile) rotate() error {
	rotated := r.path + "." + r.now().UTC().Format(rotatedTimeFormat)
	if exists(rotated) || exists(rotated+".gz") {
		return nil // rotated this second already: the next write tries again
	}
	if err := os.Rename(r.path, rotated); err != nil {
		return err
	}
	old := r.f
	if err := r.open(); err != nil {
		// Without a new file, go on appending to the renamed one.
		return err
	}
	old.Close()
	r.cleanups.Add(1)
	go r.cleanup()
	return nil
}

// cleanup compresses the rotated files but the newest, then removes the
// oldest beyond maxFiles (the current file counts).
func (r *RotatingFile) cleanup() {
	defer r.cleanups.Done()
	<-r.cleaning
	defer func() { r.cleaning <- struct{}{} }()
	rotated := RotatedLogs(r.path)
	for i, f := range rotated {
		if i < len(rotated)-1 && !strings.HasSuffix(f, ".gz") {
			if err := gzipFile(f); err != nil {
				slog.Warn("compressing a rotated container log", "path", f, "err", err)
			}
		}
	}
	rotated = RotatedLogs(r.path)
	for len(rotated) > r.maxFiles-1 {
		_ = os.Remove(rotated[0])
		rotated = rotated[1:]
	}
}

// Close closes the current file (after the last write) once the clean-up
// of the last rotation is done.
func (r *RotatingFile) Close() error {
	r.cleanups.Wait()
	return r.f.Close()
}

// RotatedLogs are the rotated files of the log at path, oldest first.
func RotatedLogs(path string) []string {
	matches, _ := filepath.Glob(path + ".*")
	var out []string
	for _, m := range matches {
		stamp := strings.TrimSuffix(strings.TrimPrefix(m, path+"."), ".gz")
		if _, err := time.Parse(rotatedTimeFormat, stamp); err == nil {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return strings.TrimSuffix(out[i], ".gz") < strings.TrimSuffix(out[j], ".gz") })
	return out
}

func gzipFile(path string) error {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := path + ".gz.tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(out)
	_, err = io.Copy(zw, in)
	err = errors.Join(err, zw.Close(), out.Close())
	if err == nil {
		err = os.Rename(tmp, path+".gz")
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Remove(path)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
