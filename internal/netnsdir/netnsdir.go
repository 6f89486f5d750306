// Package netnsdir undoes what `ip netns add` leaves on a host: it makes
// /run/netns a mount (a shared bind of itself) the first time, and
// `ip netns del` leaves that mount. Tests and benchmarks that make named
// network namespaces use it to leave no mount behind.
//
//	before := netnsdir.Mounted()
//	ip netns add NAME … ip netns del NAME
//	netnsdir.Release(before)   unmounts /run/netns if it was not mounted
//	                           before and no namespace is left in it
package netnsdir

import (
	"os"
	"slices"

	"golang.org/x/sys/unix"

	"minik/internal/mountinfo"
)

// Dir is where `ip netns` keeps its namespaces.
const Dir = "/run/netns"

// Mounted reports whether Dir is a mount point.
func Mounted() bool {
	points, _ := mountinfo.Self()
	return slices.Contains(points, Dir)
}

// Release unmounts Dir when it was not mounted before (wasMounted, from
// Mounted) and holds no namespace any more: another user's namespaces
// keep it.
func Release(wasMounted bool) error {
	if wasMounted || !Mounted() {
		return nil
	}
	if entries, err := os.ReadDir(Dir); err != nil || len(entries) > 0 {
		return nil
	}
	return unix.Unmount(Dir, unix.MNT_DETACH)
}
