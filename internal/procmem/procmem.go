// Package procmem trims what a long-running process keeps mapped of its
// own binary.
package procmem

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// DropStartupPages unmaps the pages of this process's executable that
// are mapped read-only (code and read-only data), and evicts from the page
// cache those of the binary's pages no process has mapped, so that from
// then on only the pages the process uses come back. It returns the size
// of the mappings it dropped.
//
// Why: every package of the multi-call binary runs its init at start
// (etcd's, the apiserver's, the scheduler's too), so a process that has
// only started maps most of the binary, though a kubelet runs a small
// part of it. Only read-only mappings are dropped: their pages equal the
// file's, so nothing is lost (the writable data segment, whose pages may
// differ from the file, is left alone), and of those only the ones that
// hold no page of their own (a cgo binary's relocated GOT is read-only
// too, but its pages are the loader's, not the file's).
//
// Unmapping alone is not enough: on each fault the kernel also maps the
// up to 15 neighbouring pages that are in the page cache (fault-around,
// 64 KiB, whatever the madvise advice), and the whole binary is cached
// after start-up, so the dropped mappings filled back to about 18 MB of
// code and 14 MB of function tables on an idle `minik up` in seconds
// (whole 64 KiB blocks, though only a few pages of each were used).
// Evicting the pages nobody maps leaves in the cache only what the host's
// processes use; a page first used after that is read alone
// (MADV_RANDOM: no read-ahead; code excepted, which the kernel reads
// around the fault whatever the advice), and fault-around then finds few
// neighbours to map. Pages another process maps stay cached, so a second
// process of the same binary (a kubelet beside `minik up`) costs no
// re-read of them.
func DropStartupPages() (int64, error) {
	ranges, err := readOnlyMappingsOfExe()
	if err != nil {
		return 0, err
	}
	exe, err := os.Open("/proc/self/exe") // the running file, even if replaced on disk since
	if err != nil {
		return 0, err
	}
	defer exe.Close()
	// A binary just built may still be dirty or under writeback, and the
	// kernel keeps such pages: write them out first. Best effort: a file
	// system without fdatasync only keeps more pages cached.
	_ = unix.Fdatasync(int(exe.Fd()))
	if err := madvise(ranges, unix.MADV_RANDOM); err != nil {
		return 0, err
	}
	// The process's other threads run on between the unmap and the
	// eviction, and fault pages back with their cached neighbours; a few
	// rounds leave mapped and cached little more than what they use.
	for range 3 {
		if err := madvise(ranges, unix.MADV_DONTNEED); err != nil {
			return 0, err
		}
		// Pages some process maps are kept by the kernel.
		if err := unix.Fadvise(int(exe.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			return 0, fmt.Errorf("procmem: fadvise %s: %w", exe.Name(), err)
		}
	}
	return size(ranges), nil
}

// UnmapBinary unmaps this process's read-only pages of its executable
// again and keeps them in the page cache. It returns the size of the
// mappings it advised.
//
// Why: a burst of work (a kubelet starting pods) runs code the process
// then leaves idle, and those pages would stay mapped. After the burst
// only what the process goes on running comes back, from the cache (a
// minor fault, no read). The cache is kept, unlike at start-up, so the
// next burst reads nothing from disk and fault-around maps 64 KiB per
// fault, not the 1 MiB the kernel reads around an uncached code page.
func UnmapBinary() (int64, error) {
	ranges, err := readOnlyMappingsOfExe()
	if err != nil {
		return 0, err
	}
	return size(ranges), madvise(ranges, unix.MADV_DONTNEED)
}

func size(ranges [][2]uintptr) int64 {
	var total int64
	for _, r := range ranges {
		total += int64(r[1] - r[0])
	}
	return total
}

// PageOutFile reclaims the pages of this process's mappings of the file
// at path (MADV_PAGEOUT: clean pages leave memory and come back from the
// file on use). It returns the size of the mappings it advised.
//
// Why: etcd maps its database with MAP_POPULATE, so a member that starts
// on an existing data dir holds the whole file resident, holes included
// (bbolt grows the file 16 MiB at a time, sparse): 16 MB of a one-node
// cluster's RSS, though it reads a few pages of it. PAGEOUT, unlike
// DONTNEED, only ever drops what can be read back, so it is safe on a
// mapping that could change under it.
func PageOutFile(path string) (int64, error) {
	ranges, err := mappingsOf(path, "r--s", "rw-s")
	if err != nil {
		return 0, err
	}
	var total int64
	for _, r := range ranges {
		// ENOMEM: part of the range was unmapped meanwhile; the rest
		// was advised.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r[0], r[1]-r[0], unix.MADV_PAGEOUT); errno != 0 && errno != unix.ENOMEM {
			return total, fmt.Errorf("procmem: madvise %#x-%#x: %w", r[0], r[1], errno)
		}
		total += int64(r[1] - r[0])
	}
	return total, nil
}

// readOnlyMappingsOfExe returns the [start, end) of each mapping of this
// process's executable that is read-only (code, read-only data) and holds
// only the file's own pages.
func readOnlyMappingsOfExe() ([][2]uintptr, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return nil, err
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return unmodifiedReadOnlyMappings(f, exe)
}

// unmodifiedReadOnlyMappings reads smaps and returns the read-only
// mappings of the file at path that have no page of their own
// ("Anonymous: 0 kB").
//
// Why: a binary linked with cgo is relocated by the dynamic loader, which
// writes the GOT and then makes it read-only (RELRO): an r--p mapping whose
// pages are private copies that differ from the file. Unmapping them would
// bring back the file's unrelocated pages, and the next call through the
// GOT jumps to address 0 (a kubelet built with plain `go build` crashed so
// at its first pod).
func unmodifiedReadOnlyMappings(smaps io.Reader, path string) ([][2]uintptr, error) {
	var (
		ranges  [][2]uintptr
		current *[2]uintptr // the mapping whose fields are being read, if it is a candidate
		anon    bool        // current has private pages
	)
	flush := func() {
		if current != nil && !anon {
			ranges = append(ranges, *current)
		}
		current, anon = nil, false
	}
	sc := bufio.NewScanner(smaps)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "Anonymous:"); ok {
			anon = anon || strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")) != "0"
			continue
		}
		r, perm, file, ok := parseMapping(line)
		if !ok {
			continue // another field of the current mapping
		}
		flush()
		if file == path && (perm == "r-xp" || perm == "r--p") {
			current = &r
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	flush()
	return ranges, nil
}

// parseMapping parses a mapping's line of /proc/PID/maps (or its header in
// smaps): "00400000-017de000 r-xp 00000000 fd:00 123 /path/to/exe".
func parseMapping(line string) (r [2]uintptr, perm, file string, ok bool) {
	fields := strings.Fields(line)
	if len(fields) < 5 || len(fields[1]) != 4 {
		return r, "", "", false
	}
	lo, hi, found := strings.Cut(fields[0], "-")
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if !found || err1 != nil || err2 != nil || end <= start {
		return r, "", "", false
	}
	if len(fields) >= 6 {
		file = strings.Join(fields[5:], " ")
	}
	return [2]uintptr{uintptr(start), uintptr(end)}, fields[1], file, true
}

// mappingsOf returns the [start, end) of each mapping of the file at path
// with one of the given permissions ("r-xp").
func mappingsOf(path string, perms ...string) ([][2]uintptr, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ranges [][2]uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		r, perm, file, ok := parseMapping(sc.Text())
		if ok && file == path && slices.Contains(perms, perm) {
			ranges = append(ranges, r)
		}
	}
	return ranges, sc.Err()
}

func madvise(ranges [][2]uintptr, advice int) error {
	for _, r := range ranges {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r[0], r[1]-r[0], uintptr(advice)); errno != 0 {
			return fmt.Errorf("procmem: madvise %#x-%#x: %w", r[0], r[1], errno)
		}
	}
	return nil
}
