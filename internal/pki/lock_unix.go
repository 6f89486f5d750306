//go:build unix

package pki

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive flock on dir/.lock. Processes sharing a volume
// (compose starts several at once) would otherwise race to create the CA
// and end up with a certificate from one and a key from another.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, keyFileMode)
	if err != nil {
		return nil, fmt.Errorf("pki: lock %s: %w", dir, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("pki: lock %s: %w", dir, err)
	}
	return func() { f.Close() }, nil // closing the file releases the lock
}
