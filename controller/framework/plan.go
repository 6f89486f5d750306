package framework

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Every controller has one pure step, as Deployment's:
//
//	sync(key): read the caches ─▶ Plan(desired, observed, now) ─▶ Output{Actions, RequeueAfter}
//	           ─▶ Execute(ctx, sink, Actions): the writes, in order
//
// Plan makes no API call and reads no clock; the driver's Sink is the
// only thing that writes, so a driver is unit tested with a FakeSink and
// caches filled by Informer.Replace, without a cluster.

// Output is a plan: the actions to take, in order, and when to look
// again even if nothing changes (0: not before an event).
type Output[A any] struct {
	Actions      []A
	RequeueAfter time.Duration
	// Backoff asks for the key again after its backoff (Result.Backoff).
	Backoff bool
}

// Sink performs one action: an API write, and the event that reports it.
type Sink[A any] interface {
	Do(ctx context.Context, a A) error
}

// Execute performs the actions in order and stops at the first that
// fails: the later ones assumed it.
func Execute[A fmt.Stringer](ctx context.Context, sink Sink[A], actions []A) error {
	for _, a := range actions {
		if err := sink.Do(ctx, a); err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
	}
	return nil
}

// FakeSink records the actions it is given, for tests; Fail, if set,
// makes an action fail with the error it returns.
type FakeSink[A any] struct {
	Fail func(A) error

	mu   sync.Mutex
	done []A
}

// Do records a unless Fail refuses it.
func (s *FakeSink[A]) Do(_ context.Context, a A) error {
	if s.Fail != nil {
		if err := s.Fail(a); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = append(s.done, a)
	return nil
}

// Done returns the actions performed so far.
func (s *FakeSink[A]) Done() []A {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]A(nil), s.done...)
}
