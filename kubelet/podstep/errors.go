package podstep

import "fmt"

// ConfigError is a container that cannot be created as specified (a
// missing config map key, a subPath outside its volume): it waits in
// CreateContainerConfigError until its spec or the objects it names
// change.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

// ConfigErrorf returns a *ConfigError.
func ConfigErrorf(format string, args ...any) error {
	return &ConfigError{fmt.Sprintf(format, args...)}
}

// MountError is a volume that cannot be mounted yet (an unbound claim):
// the pod waits in ContainerCreating with a FailedMount event, and the
// kubelet tries again.
type MountError struct{ Msg string }

func (e *MountError) Error() string { return e.Msg }
