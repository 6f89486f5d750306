//go:build !unix

package pki

// lockDir is a no-op where flock is not available; minik runs nodes on Linux.
func lockDir(string) (func(), error) { return func() {}, nil }
