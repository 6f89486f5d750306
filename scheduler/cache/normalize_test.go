package cache

import (
	"fmt"
	"testing"
)

// Image names are normalized once each, and what is remembered is bounded.
func TestNormalizeImageNameRemembersBoundedly(t *testing.T) {
	for range 2 {
		if got := NormalizeImageName("nginx"); got != "docker.io/library/nginx:latest" {
			t.Fatalf("nginx normalized to %q", got)
		}
		if got := NormalizeImageName("Not A Reference"); got != "Not A Reference" {
			t.Fatalf("an unparsable name became %q, want it unchanged", got)
		}
	}
	for i := range maxNormalized + 10 {
		NormalizeImageName(fmt.Sprintf("registry.example/app:%d", i))
	}
	normalized.Lock()
	n := len(normalized.names)
	normalized.Unlock()
	if n > maxNormalized {
		t.Fatalf("%d names remembered, want at most %d", n, maxNormalized)
	}
}
