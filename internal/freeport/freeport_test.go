package freeport

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestAddrIsFreeAndBelowTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	for range 20 {
		addr, err := Addr()
		if err != nil {
			t.Fatal(err)
		}
		_, p, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		if low-lowest >= 1000 && (port < lowest || port >= low) {
			t.Fatalf("port %d outside [%d, %d)", port, lowest, low)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("%s is not free: %v", addr, err)
		}
		l.Close()
	}
}

func TestAPortIsHandedOutOnce(t *testing.T) {
	claimDir = t.TempDir()
	if !claim("20001") {
		t.Fatal("a first claim failed")
	}
	if claim("20001") {
		t.Fatal("a port was claimed twice")
	}
	old := time.Now().Add(-claimTTL - time.Second)
	if err := os.Chtimes(filepath.Join(claimDir, "20001"), old, old); err != nil {
		t.Fatal(err)
	}
	if !claim("20001") {
		t.Fatal("a stale claim was not taken over")
	}
	if claim("20001") {
		t.Fatal("a claim taken over was claimed again")
	}
}
