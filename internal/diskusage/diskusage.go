// Package diskusage measures what a directory tree holds on disk, as du
// does: the blocks its files have allocated and its inodes, a file with
// several hard links counted once. The kubelet reads it for logs and
// emptyDir volumes, and its containerd runtime for containers' writable
// layers (containerd's overlay snapshotter measures its upper directories
// the same way).
//
//	dir ──WalkDir──▶ each entry: lstat ──▶ inodes+1, bytes += blocks×512
//	                                       (a hard-linked inode once)
package diskusage

import (
	"io/fs"
	"path/filepath"
	"syscall"
)

// Of returns the space (allocated blocks) and the inodes used under dir,
// dir included; zero when dir does not exist. Entries removed during the
// walk are skipped.
func Of(dir string) (bytes, inodes int64) {
	type inode struct{ dev, ino uint64 }
	var linked map[inode]bool
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			inodes++
			return nil
		}
		if !info.IsDir() && st.Nlink > 1 {
			if linked == nil {
				linked = map[inode]bool{}
			}
			key := inode{uint64(st.Dev), st.Ino}
			if linked[key] {
				return nil
			}
			linked[key] = true
		}
		inodes++
		bytes += st.Blocks * 512
		return nil
	})
	return bytes, inodes
}
