// Package freeport picks a loopback TCP port for a test or benchmark to
// hand to a process it starts.
//
// A port taken from the kernel with ":0" lies in its ephemeral range, so
// between the check and the child's bind any outgoing connection on the
// host may take it. Ports below that range are handed out only to those
// who ask for them by number, so such a race is left only with another
// chooser on the same host; a claim file per port handed out keeps two
// choosers (in one test process or in parallel ones) from handing out the
// same port for ten minutes.
package freeport

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// lowest is where the search starts: above the well-known and most
// registered services' ports.
const lowest = 20000

// claimTTL is how long a port handed out stays its chooser's: long enough
// for the process it was chosen for to start and bind it.
const claimTTL = 10 * time.Minute

// claimDir holds a file per port handed out, shared by every chooser on
// the host (a var for tests).
var claimDir = filepath.Join(os.TempDir(), "minik-freeport")

// Addr returns "127.0.0.1:PORT" for a port nobody listens on now, below
// the kernel's ephemeral range when there is room there.
func Addr() (string, error) {
	low := ephemeralLow()
	if low-lowest >= 1000 {
		for range 100 {
			port := strconv.Itoa(lowest + rand.IntN(low-lowest))
			if !claim(port) {
				continue
			}
			if addr, ok := try(port); ok {
				return addr, nil
			}
		}
	}
	if addr, ok := try("0"); ok {
		return addr, nil
	}
	return "", fmt.Errorf("freeport: no free loopback port")
}

// claim makes port this chooser's unless another chose it within
// claimTTL. Without a claim directory it claims nothing and says yes: the
// bind check alone then decides. Two choosers taking over the same stale
// claim at once may both win; the bind check and the callers' retries
// are left for that.
func claim(port string) bool {
	if err := os.MkdirAll(claimDir, 0o777); err != nil {
		return true
	}
	path := filepath.Join(claimDir, port)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err == nil {
		f.Close()
		return true
	}
	if !errors.Is(err, fs.ErrExist) {
		return true
	}
	st, err := os.Stat(path)
	if err != nil || time.Since(st.ModTime()) < claimTTL {
		return false
	}
	now := time.Now()
	return os.Chtimes(path, now, now) == nil
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
