package podstep

import (
	"time"

	"minik/proto/cri"
)

// Crash-loop and image-pull back-off: the first restart is immediate, then
// 10s doubling to 5 minutes; a container that ran 10 minutes resets it.
const (
	InitialBackOff = 10 * time.Second
	MaxBackOff     = 5 * time.Minute
	backOffReset   = 10 * time.Minute
)

// doubled is the back-off after one more failure: InitialBackOff first,
// then twice the last, at most MaxBackOff.
func doubled(cur time.Duration) time.Duration {
	switch {
	case cur == 0:
		return InitialBackOff
	case cur*2 > MaxBackOff:
		return MaxBackOff
	}
	return cur * 2
}

// NextBackOff is the crash-loop back-off to apply after restarting a
// container whose previous instance is prev.
func NextBackOff(cur time.Duration, prev *cri.ContainerStatus) time.Duration {
	if prev == nil {
		return 0
	}
	if prev.StartedAt != 0 && prev.FinishedAt-prev.StartedAt >= int64(backOffReset) {
		return InitialBackOff
	}
	return doubled(cur)
}
