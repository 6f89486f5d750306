package framework

import (
	"context"
	"errors"
	"fmt"
)

// ExecuteAll performs every action in order, a failed one not stopping
// the rest, and returns their errors joined: for plans whose actions do
// not assume each other's success (a status written whatever the pod
// creates did, each adoption on its own), those of the ReplicaSet (and
// ReplicationController), DaemonSet, StatefulSet, CronJob and Job drivers.
func ExecuteAll[A fmt.Stringer](ctx context.Context, sink Sink[A], actions []A) error {
	var errs []error
	for _, a := range actions {
		if err := sink.Do(ctx, a); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", a, err))
		}
	}
	return errors.Join(errs...)
}
