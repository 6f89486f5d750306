package procmem

import (
	"os"
	"strconv"
	"strings"
	"testing"
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

func TestDropStartupPagesUnmapsTheBinaryAndTheProcessRunsOn(t *testing.T) {
	before := rssFileKB(t)
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
	// Code and data come back from the page cache as they are used.
	if got := strings.Repeat("ab", 3) + strconv.Itoa(42); got != "ababab42" {
		t.Fatalf("after the drop the process computes %q", got)
	}
}
