package procmem

import (
	"golang.org/x/sys/unix"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// rssFileKB reads this process's resident file-backed memory.
func rssFileKB(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// cachedPages counts the pages of this process's executable that are in
// the page cache (mincore on a mapping of the file).
func cachedPages(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

func TestDropStartupPagesUnmapsTheBinaryAndTheProcessRunsOn(t *testing.T) {
	before := rssFileKB(t)
	// Read the whole binary, as start-up and fault-around leave it cached.
	if _, err := os.ReadFile("/proc/self/exe"); err != nil {
		t.Fatal(err)
	}
	cachedBefore := cachedPages(t)
	n, err := DropStartupPages()
	if err != nil {
		t.Fatal(err)
	}
	after := rssFileKB(t)
	if n <= 0 {
		t.Fatalf("dropped %d bytes of mappings, want the test binary's code and read-only data", n)
	}
	if after >= before {
		t.Fatalf("resident file pages went from %d kB to %d kB, want fewer", before, after)
	}
	// What no process maps left the page cache, so that fault-around has
	// few neighbours to map from now on.
	if cachedAfter := cachedPages(t); cachedAfter > cachedBefore*4/5 {
		t.Fatalf("%d of the binary's pages are cached after the drop, %d before: want the unmapped ones evicted", cachedAfter, cachedBefore)
	}
	// Code and data come back from the page cache as they are used.
	if got := strings.Repeat("ab", 3) + strconv.Itoa(42); got != "ababab42" {
		t.Fatalf("after the drop the process computes %q", got)
	}
}

// A file mapped with MAP_POPULATE (as etcd maps its database) is resident
// whole, holes included; PageOutFile leaves it mapped and reclaims it.
func TestPageOutFileReclaimsAPopulatedMapping(t *testing.T) {
	// In the package's directory: a tmpfs TMPDIR's pages could not be
	// paged out without swap.
	dir, err := os.MkdirTemp(".", ".pageout-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path, err := filepath.Abs(filepath.Join(dir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const size = 16 << 20
	if _, err := f.WriteAt([]byte("bolt"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil { // sparse, as bbolt grows it
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	before := rssFileKB(t)
	n, err := PageOutFile(path)
	if err != nil || n != size {
		t.Fatalf("PageOutFile advised %d bytes, %v; want the %d of the mapping", n, err, size)
	}
	after := rssFileKB(t)
	if before-after < size/1024/2 {
		t.Fatalf("resident file pages went from %d kB to %d kB, want at least %d kB fewer", before, after, size/1024/2)
	}
	if string(m[:4]) != "bolt" {
		t.Fatalf("the mapping reads %q after the page-out", m[:4])
	}
}
