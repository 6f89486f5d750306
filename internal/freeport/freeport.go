// Package freeport picks a loopback TCP port for a test or benchmark to
// hand to a process it starts.
//
// A port taken from the kernel with ":0" lies in its ephemeral range, so
// between the check and the child's bind any outgoing connection on the
// host may take it. Ports below that range are handed out only to those
// who ask for them by number, so such a race is left only with another
// chooser on the same host.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowest is where the search starts: above the well-known and most
// registered services' ports.
const lowest = 20000

// Addr returns "127.0.0.1:PORT" for a port nobody listens on now, below
// the kernel's ephemeral range when there is room there.
func Addr() (string, error) {
	low := ephemeralLow()
	if low-lowest >= 1000 {
		for range 100 {
			port := lowest + rand.IntN(low-lowest)
			if addr, ok := try(strconv.Itoa(port)); ok {
				return addr, nil
			}
		}
	}
	if addr, ok := try("0"); ok {
		return addr, nil
	}
	return "", fmt.Errorf("freeport: no free loopback port")
}

// try binds 127.0.0.1:port and lets it go, returning the address bound.
func try(port string) (string, bool) {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		return "", false
	}
	defer l.Close()
	return l.Addr().String(), true
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768
// when it cannot be read, Linux's default).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	if f := strings.Fields(string(b)); len(f) == 2 {
		if n, err := strconv.Atoi(f[0]); err == nil {
			return n
		}
	}
	return 32768
}
