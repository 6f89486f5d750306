package freeport

import (
	"net"
	"strconv"
	"testing"
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
