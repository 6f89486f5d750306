package runtime

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// readLog reads a current or rotated (gzipped) log file.
func readLog(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRotatingFileKeepsMaxFilesAndCompressesAllButTheNewest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	r, err := OpenRotating(path, 100, 3)
	if err != nil {
		t.Fatal(err)
	}
	now := t0
	r.now = func() time.Time { return now }
	var lines []string
	for i := 0; i < 12; i++ {
		line := fmt.Sprintf("entry %02d %s\n", i, strings.Repeat("x", 30)) // 40 bytes: a rotation every 3 entries
		lines = append(lines, line)
		if _, err := r.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Minute)
		r.cleanups.Wait()
	}
	r.Close()
	rotated := RotatedLogs(path)
	if len(rotated) != 2 {
		t.Fatalf("rotated files %v, want 2 (3 files in all with the current one)", rotated)
	}
	if strings.HasSuffix(rotated[1], ".gz") || !strings.HasSuffix(rotated[0], ".gz") {
		t.Errorf("rotated files %v: want the older gzipped, the newest as it is", rotated)
	}
	if want := path + "." + t0.Add(11*time.Minute).Format("20060102-150405"); rotated[1] != want {
		t.Errorf("newest rotated file %s, want %s (named by the time of its rotation)", rotated[1], want)
	}
	// The 12 entries made 4 full files, rotated after entries 2, 5, 8 and
	// 11 (the last at t0+11m); the two oldest were removed, and the
	// current file is empty.
	got := readLog(t, rotated[0]) + readLog(t, rotated[1]) + readLog(t, path)
	if want := strings.Join(lines[6:], ""); got != want {
		t.Errorf("kept logs:\n%s\nwant:\n%s", got, want)
	}
}

func TestRotatingFileRotatesAtMostOnceASecond(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	r, err := OpenRotating(path, 10, 5)
	if err != nil {
		t.Fatal(err)
	}
	r.now = func() time.Time { return t0 }
	for i := 0; i < 5; i++ {
		r.Write([]byte("0123456789\n"))
	}
	r.Close()
	if rotated := RotatedLogs(path); len(rotated) != 1 {
		t.Errorf("rotated files %v within one second, want 1", rotated)
	}
	if st, _ := os.Stat(path); st.Size() != 44 {
		t.Errorf("current file %d bytes, want the 4 entries written after the rotation", st.Size())
	}
}

func TestRotatingFileOffKeepsOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	r, err := OpenRotating(path, -1, 5)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		r.Write([]byte("0123456789\n"))
	}
	r.Close()
	if rotated := RotatedLogs(path); len(rotated) != 0 {
		t.Errorf("rotation off, yet rotated files %v", rotated)
	}
	if st, _ := os.Stat(path); st.Size() != 1100 {
		t.Errorf("size %d, want 1100", st.Size())
	}
}

func TestFollowFileFollowsARotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	r, err := OpenRotating(path, 200, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var seconds atomic.Int64 // a rotation a second at most: each entry a second later
	r.now = func() time.Time { return t0.Add(time.Duration(seconds.Add(1)) * time.Second) }
	lw := NewLogWriter(r, clock())
	out := lw.Stream("stdout")
	var exited atomicBool
	var got syncBuffer
	follow := startFollower(path, &got, exited.get)
	var want strings.Builder
	for i := 0; i < 30; i++ { // about 50 bytes an entry: a rotation every 4
		line := fmt.Sprintf("line %02d\n", i)
		want.WriteString(line)
		out.Write([]byte(line))
		if i%3 == 0 {
			// The follower reads at least once per file: a file rotated
			// away between two polls is not read.
			follow.poll()
		}
	}
	follow.poll()
	exited.set()
	if err := follow.finish(); err != nil {
		t.Fatal(err)
	}
	if len(RotatedLogs(path)) == 0 {
		t.Fatal("the log was never rotated: the test tests nothing")
	}
	if got.String() != want.String() {
		t.Errorf("followed:\n%s\nwant:\n%s", got.String(), want.String())
	}
}
