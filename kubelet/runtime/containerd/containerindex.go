package containerd

import (
	"slices"
	"sync"

	"github.com/containerd/containerd/containers"
)

// containerIndex knows which containers each sandbox holds, so that a
// pod's sync reads its own containers by ID, and keeps the record of each
// as last read or written. containerd has no index by label: a List
// filtered by sandbox reads and decodes every container of the
// namespace, and a node's pods each list theirs at every step (with 100
// pods starting, that scan was a quarter of containerd's CPU).
//
//	New (every container) ─┐
//	node listing ──────────┤
//	CreateContainer ───────┼─▶ add ─▶ bySandbox, records ─▶ of(sandbox) ─▶ each: its task;
//	a Get, an exit's Update┘                                  no task (or no record): Get ─NotFound─▶ remove
//	RemoveContainer ─▶ remove                                 a task: the record kept
//
// A container made in the namespace by another client is seen at the next
// listing of the whole node (the relist); one deleted behind the runtime's
// back (its task goes first) is dropped when its Get finds nothing.
type containerIndex struct {
	mu        sync.Mutex
	bySandbox map[string][]string // container IDs, in no order
	sandboxOf map[string]string
	// records holds each container's record as last read or written.
	records map[string]containers.Container
	// creating holds the containers CreateContainer is making (ID →
	// sandbox): not listed yet, but their create event knows its pod
	// without asking containerd (it arrives before the Create returns).
	creating map[string]string
}

func newContainerIndex() *containerIndex {
	return &containerIndex{bySandbox: map[string][]string{}, sandboxOf: map[string]string{}, records: map[string]containers.Container{}, creating: map[string]string{}}
}

// startCreate notes that id is being created in sandboxID; endCreate
// forgets it, once it is added or has failed.
func (x *containerIndex) startCreate(sandboxID, id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.creating[id] = sandboxID
}

func (x *containerIndex) endCreate(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.creating, id)
}

// sandbox returns the sandbox of container id, if the index knows it.
func (x *containerIndex) sandbox(id string) (string, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if sb, ok := x.sandboxOf[id]; ok {
		return sb, true
	}
	sb, ok := x.creating[id]
	return sb, ok
}

// add indexes a container under the sandbox its labels name, or keeps
// its newer record if it is indexed already.
func (x *containerIndex) add(info containers.Container) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.records[info.ID] = info
	if _, ok := x.sandboxOf[info.ID]; ok {
		return
	}
	sandboxID := info.Labels[labelSandbox]
	x.sandboxOf[info.ID] = sandboxID
	x.bySandbox[sandboxID] = append(x.bySandbox[sandboxID], info.ID)
}

// addListed adds the containers of a listing of every container.
func (x *containerIndex) addListed(list []containers.Container) {
	for _, info := range list {
		x.add(info)
	}
}

// record returns the record of container id as last read or written.
// Its maps are shared: callers must not change them.
func (x *containerIndex) record(id string) (containers.Container, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	info, ok := x.records[id]
	return info, ok
}

// forgetRecord drops the record of container id (written without its
// new record at hand): the next read gets it from containerd.
func (x *containerIndex) forgetRecord(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.records, id)
}

func (x *containerIndex) remove(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	sandboxID, ok := x.sandboxOf[id]
	if !ok {
		return
	}
	delete(x.sandboxOf, id)
	delete(x.records, id)
	ids := slices.DeleteFunc(x.bySandbox[sandboxID], func(c string) bool { return c == id })
	if len(ids) == 0 {
		delete(x.bySandbox, sandboxID)
	} else {
		x.bySandbox[sandboxID] = ids
	}
}

// of returns the IDs of the sandbox's containers, a copy.
func (x *containerIndex) of(sandboxID string) []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Clone(x.bySandbox[sandboxID])
}
