package testutil

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Refuse is a FakeSink's Fail hook: it refuses the actions is picks
// with err.
func Refuse[A any](is func(A) bool, err error) func(A) error {
	return func(a A) error {
		if is(a) {
			return err
		}
		return nil
	}
}

// CheckSync fails t unless a driver's sync returned the error wanted
// (wantErr "" for none, else a part of its text) and performed wantDone,
// the actions by their String.
func CheckSync[A fmt.Stringer](t *testing.T, err error, wantErr string, done []A, wantDone []string) {
	t.Helper()
	if (err == nil) != (wantErr == "") || err != nil && !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("sync error %v, want one containing %q", err, wantErr)
	}
	var got []string
	for _, a := range done {
		got = append(got, a.String())
	}
	if !slices.Equal(got, wantDone) {
		t.Errorf("actions done %v, want %v", got, wantDone)
	}
}
