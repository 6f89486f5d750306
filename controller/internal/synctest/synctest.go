// Package synctest checks what a controller's sync did through a
// framework.FakeSink, for the driver tests.
package synctest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"minik/controller/framework"
)

// Refusing returns a FakeSink that refuses the actions refuse picks,
// with the error "refused".
func Refusing[A any](refuse func(A) bool) *framework.FakeSink[A] {
	return RefusingWith(refuse, errors.New("refused"))
}

// RefusingWith returns a FakeSink that refuses the actions refuse picks
// with err (an apiserver's error, for the drivers that tell them apart).
func RefusingWith[A any](refuse func(A) bool, err error) *framework.FakeSink[A] {
	return &framework.FakeSink[A]{Fail: func(a A) error {
		if refuse(a) {
			return err
		}
		return nil
	}}
}

// Check fails t unless err contains wantErr (no error if it is "") and
// sink performed wantDone, each named by its String.
func Check[A fmt.Stringer](t *testing.T, err error, wantErr string, sink *framework.FakeSink[A], wantDone []string) {
	t.Helper()
	if (err == nil) != (wantErr == "") || err != nil && !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("sync error %v, want one containing %q", err, wantErr)
	}
	var done []string
	for _, a := range sink.Done() {
		done = append(done, a.String())
	}
	if !slices.Equal(done, wantDone) {
		t.Errorf("actions done %v, want %v", done, wantDone)
	}
}

// CheckOrder fails t unless the types of actions come in the order of
// order (each any number of times, none missing from order).
func CheckOrder[T comparable, A any](t *testing.T, actions []A, typeOf func(A) T, order []T) {
	t.Helper()
	last := 0
	for _, a := range actions {
		i := slices.Index(order, typeOf(a))
		if i < last {
			t.Fatalf("actions %v out of the order %v", actions, order)
		}
		last = i
	}
}
