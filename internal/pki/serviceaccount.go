package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// EnsureServiceAccountKey returns dir/sa.key, the key the apiserver signs
// service-account tokens with (kubeadm's file name), creating it on first
// use. It is kept across restarts: tokens already handed out stay valid.
func EnsureServiceAccountKey(dir string) (string, error) {
	path := filepath.Join(dir, "sa.key")
	unlock, err := lockDir(dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if _, err := ParseKeyPEM(data); err != nil {
			return "", fmt.Errorf("pki: %s: %w", path, err)
		}
		return path, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("pki: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", fmt.Errorf("pki: service account key: %w", err)
	}
	pemData, err := encodeKey(key)
	if err != nil {
		return "", err
	}
	return path, writeFileAtomic(path, pemData, keyFileMode)
}
