package diskusage

import (
	"os"
	"path/filepath"
	"testing"
)

func TestOf(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 100<<10)
	for i := range data {
		data[i] = byte(i) // not sparse: the blocks are allocated
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "a"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "sub", "a"), filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	bytes, inodes := Of(dir)
	// dir, sub and one file: its second name is the same inode.
	if inodes != 3 {
		t.Errorf("inodes = %d, want 3 (a hard link counts once)", inodes)
	}
	if bytes < 100<<10 || bytes >= 2*100<<10 {
		t.Errorf("bytes = %d, want the file's 100 KiB once, plus the directories", bytes)
	}
	if b, n := Of(filepath.Join(dir, "missing")); b != 0 || n != 0 {
		t.Errorf("a missing dir: %d bytes, %d inodes; want 0, 0", b, n)
	}
}
