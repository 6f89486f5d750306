// Package procmem trims what a long-running process keeps mapped of its
// own binary.
package procmem

import (
	"bufio"
	"fmt"
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
// differ from the file, is left alone).
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
	var total int64
	for _, r := range ranges {
		total += int64(r[1] - r[0])
	}
	return total, nil
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
// process's executable that is read-only (code, read-only data).
func readOnlyMappingsOfExe() ([][2]uintptr, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return nil, err
	}
	return mappingsOf(exe, "r-xp", "r--p")
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
		// 00400000-017de000 r-xp 00000000 fd:00 123 /path/to/exe
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || strings.Join(fields[5:], " ") != path || !slices.Contains(perms, fields[1]) {
			continue
		}
		lo, hi, _ := strings.Cut(fields[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			return nil, fmt.Errorf("procmem: bad mapping %q", fields[0])
		}
		ranges = append(ranges, [2]uintptr{uintptr(start), uintptr(end)})
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
