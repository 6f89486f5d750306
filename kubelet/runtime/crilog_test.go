package runtime

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"minik/proto/cri"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)

// clock returns t0, t0+1s, t0+2s, ... on successive calls.
func clock() func() time.Time {
	n := 0
	return func() time.Time { n++; return t0.Add(time.Duration(n-1) * time.Second) }
}

func TestLogWriterWritesCRIEntries(t *testing.T) {
	var buf bytes.Buffer
	lw := NewLogWriter(&buf, clock())
	out, errs := lw.Stream("stdout"), lw.Stream("stderr")
	out.Write([]byte("one\ntw"))
	errs.Write([]byte("oops\n"))
	out.Write([]byte("o\nthree"))
	long := strings.Repeat("x", maxLogLine+10)
	errs.Write([]byte(long + "\n"))
	out.Close() // "three" has no newline: written as a full line at the end
	errs.Close()
	want := "2026-01-02T03:04:05.0000006Z stdout F one\n" +
		"2026-01-02T03:04:06.0000006Z stderr F oops\n" +
		"2026-01-02T03:04:07.0000006Z stdout F two\n" +
		"2026-01-02T03:04:08.0000006Z stderr P " + long[:maxLogLine] + "\n" +
		"2026-01-02T03:04:09.0000006Z stderr F " + long[maxLogLine:] + "\n" +
		"2026-01-02T03:04:10.0000006Z stdout F three\n"
	if got := buf.String(); got != want {
		t.Errorf("log file\n%q\nwant\n%q", got, want)
	}
}

func TestCopyLogPrintsWhatKubectlLogsShows(t *testing.T) {
	var file bytes.Buffer
	lw := NewLogWriter(&file, clock())
	out := lw.Stream("stdout")
	out.Write([]byte("first\nsecond\n"))
	out.Write([]byte(strings.Repeat("y", maxLogLine) + "z\n")) // a partial entry and its end
	out.Write([]byte("last\n"))
	long := strings.Repeat("y", maxLogLine) + "z\n"
	for _, tc := range []struct {
		name string
		req  *cri.ReadLogRequest
		want string
	}{
		{"the whole log, partial entries joined", &cri.ReadLogRequest{TailLines: -1}, "first\nsecond\n" + long + "last\n"},
		{"the last line", &cri.ReadLogRequest{TailLines: 1}, "last\n"},
		{"timestamps as RFC 3339 with nine digits", &cri.ReadLogRequest{TailLines: 2, Timestamps: true},
			"2026-01-02T03:04:08.000000600Z z\n2026-01-02T03:04:09.000000600Z last\n"},
		{"since a time, later lines only", &cri.ReadLogRequest{TailLines: -1, SinceTime: t0.Add(time.Second).UnixNano()},
			"second\n" + long + "last\n"},
		{"since after the end, nothing", &cri.ReadLogRequest{TailLines: -1, SinceTime: t0.Add(time.Hour).UnixNano()}, ""},
		{"a byte limit cuts a line", &cri.ReadLogRequest{TailLines: -1, LimitBytes: 9}, "first\nsec"},
		{"the byte limit counts the timestamps", &cri.ReadLogRequest{TailLines: -1, LimitBytes: 35, Timestamps: true},
			"2026-01-02T03:04:05.000000600Z firs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got bytes.Buffer
			if _, err := CopyLog(file.Bytes(), tc.req, &got); err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got.String(), tc.want)
			}
		})
	}
}

func TestCopyLogPassesUnparsableLinesThrough(t *testing.T) {
	var got bytes.Buffer
	if _, err := CopyLog([]byte("raw output\n"), &cri.ReadLogRequest{TailLines: -1, Timestamps: true}, &got); err != nil {
		t.Fatal(err)
	}
	if got.String() != "raw output\n" {
		t.Errorf("got %q", got.String())
	}
}

func TestFollowFileWaitsForWholeLinesUntilTheWriterExits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("2026-01-02T03:04:05Z stdout F before\n2026-01-02T03:04:06Z stdout F hal")
	var exited atomicBool
	var got syncBuffer
	f2 := startFollower(path, &got, exited.get)
	f2.poll()
	if s := got.String(); s != "before\n" {
		t.Errorf("before the line is complete: %q, want only the whole line", s)
	}
	f.WriteString("f\n2026-01-02T03:04:07Z stdout F after\n")
	f2.poll()
	exited.set()
	if err := f2.finish(); err != nil {
		t.Fatal(err)
	}
	if s := got.String(); s != "before\nhalf\nafter\n" {
		t.Errorf("followed %q", s)
	}
}

// follower is a FollowFile whose polls the test sends.
type follower struct {
	ticks chan time.Time
	done  chan error
}

func startFollower(path string, w io.Writer, exited func() bool) *follower {
	f := &follower{ticks: make(chan time.Time), done: make(chan error, 1)}
	go func() {
		f.done <- followFile(context.Background(), path, &cri.ReadLogRequest{TailLines: -1, Follow: true}, w, exited, f.ticks)
	}()
	return f
}

// poll returns once the follower has read the file again: the first
// send is taken when it waits for a poll, the second when it waits for
// the next, its pass done.
func (f *follower) poll() {
	f.ticks <- time.Time{}
	f.ticks <- time.Time{}
}

// finish lets the follower see that the writer exited and returns its error.
func (f *follower) finish() error {
	for {
		select {
		case err := <-f.done:
			return err
		case f.ticks <- time.Time{}:
		}
	}
}

type atomicBool struct{ v atomic.Bool }

func (b *atomicBool) get() bool { return b.v.Load() }
func (b *atomicBool) set()      { b.v.Store(true) }

// syncBuffer is a bytes.Buffer safe to read while FollowFile writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
