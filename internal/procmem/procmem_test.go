package procmem

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
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

// A read-only mapping of the binary whose pages were written before it
// was made read-only (a cgo binary's GOT after relocation: RELRO) must
// keep them: dropping it would bring back the file's unrelocated bytes.
func TestDropStartupPagesKeepsARelocatedReadOnlyMapping(t *testing.T) {
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := os.Getpagesize()
	m, err := unix.Mmap(int(f.Fd()), 0, page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	copy(m, "relocated") // as the loader writes the GOT
	if err := unix.Mprotect(m, unix.PROT_READ); err != nil {
		t.Fatal(err)
	}
	for name, drop := range map[string]func() (int64, error){"DropStartupPages": DropStartupPages, "UnmapBinary": UnmapBinary} {
		if _, err := drop(); err != nil {
			t.Fatal(err)
		}
		if got := string(m[:9]); got != "relocated" {
			t.Fatalf("the relocated read-only page reads %q after %s, want %q", got, name, "relocated")
		}
	}
}

func TestUnmodifiedReadOnlyMappings(t *testing.T) {
	const smaps = `00400000-01800000 r-xp 00000000 fd:00 12 /usr/bin/minik
Size:              20480 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
01800000-02000000 r--p 01400000 fd:00 12 /usr/bin/minik
Anonymous:             0 kB
02000000-02001000 r--p 01c00000 fd:00 12 /usr/bin/minik
Anonymous:             4 kB
02001000-02100000 rw-p 01c01000 fd:00 12 /usr/bin/minik
Anonymous:           120 kB
7f0000000000-7f0000100000 r--p 00000000 fd:00 99 /usr/lib/libc.so.6
Anonymous:             0 kB
7f0000200000-7f0000300000 r-xp 00000000 fd:00 13 /usr/bin/minik (deleted)
Anonymous:             0 kB
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
Anonymous:           132 kB
`
	got, err := unmodifiedReadOnlyMappings(strings.NewReader(smaps), "/usr/bin/minik")
	if err != nil {
		t.Fatal(err)
	}
	// Code and read-only data; not the relocated page (RELRO), the
	// writable data, another file, or another file of the same name.
	want := [][2]uintptr{{0x400000, 0x1800000}, {0x1800000, 0x2000000}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %x, want %x", got, want)
	}
}

func TestUnmapBinaryKeepsTheCacheAndTheProcessRunsOn(t *testing.T) {
	// Fault in every page of the binary's read-only mappings, so that
	// "before" holds all of them and not only the pages this test happened
	// to run: what the process touches between the unmap and the reading
	// below comes back (with the kernel's fault-around), and on a binary
	// this small it could outweigh what the unmap dropped.
	ranges, err := readOnlyMappingsOfExe()
	if err != nil {
		t.Fatal(err)
	}
	// Reading /proc/self/mem faults the pages into this process's own
	// page tables (the kernel reads through them).
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	for _, r := range ranges {
		if _, err := mem.ReadAt(make([]byte, r[1]-r[0]), int64(r[0])); err != nil {
			t.Fatal(err)
		}
	}
	before, cachedBefore := rssFileKB(t), cachedPages(t)
	n, err := UnmapBinary()
	if err != nil {
		t.Fatal(err)
	}
	if n <= 0 {
		t.Fatalf("unmapped %d bytes of mappings, want the test binary's code and read-only data", n)
	}
	after := rssFileKB(t)
	t.Logf("resident file pages %d kB before, %d kB after unmapping %d kB", before, after, n/1024)
	if after >= before {
		t.Fatalf("resident file pages went from %d kB to %d kB after unmapping %d kB, want fewer", before, after, n/1024)
	}
	if cachedAfter := cachedPages(t); cachedAfter < cachedBefore*9/10 {
		t.Fatalf("%d of the binary's pages are cached after the unmap, %d before: want them kept", cachedAfter, cachedBefore)
	}
	if got := strings.Repeat("ab", 3) + strconv.Itoa(42); got != "ababab42" {
		t.Fatalf("after the unmap the process computes %q", got)
	}
}
