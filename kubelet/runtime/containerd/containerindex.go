package containerd

import (
	"slices"
	"sync"

	"github.com/containerd/containerd/containers"
)

// containerIndex knows which containers each sandbox holds, so that a
// pod's sync reads its own containers by ID. containerd has no index by
// label: a List filtered by sandbox reads and decodes every container of
// the namespace, and a node's pods each list theirs at every step (with
// 100 pods starting, that scan was a quarter of containerd's CPU).
//
//	New (every container) ─┐
//	node listing ──────────┼─▶ add ─▶ bySandbox ─▶ of(sandbox) ─▶ Get each ─NotFound─▶ remove
//	CreateContainer ───────┘                                        ▲
//	RemoveContainer ─▶ remove ──────────────────────────────────────┘
//
// A container made in the namespace by another client is seen at the next
// listing of the whole node (the relist); one deleted behind the runtime's
// back is dropped when its Get finds nothing.
type containerIndex struct {
	mu        sync.Mutex
	bySandbox map[string][]string // container IDs, in no order
	sandboxOf map[string]string
	// creating holds the containers CreateContainer is making (ID →
	// sandbox): not listed yet, but their create event knows its pod
	// without asking containerd (it arrives before the Create returns).
	creating map[string]string
}

func newContainerIndex() *containerIndex {
	return &containerIndex{bySandbox: map[string][]string{}, sandboxOf: map[string]string{}, creating: map[string]string{}}
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

func (x *containerIndex) add(sandboxID, id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.sandboxOf[id]; ok {
		return
	}
	x.sandboxOf[id] = sandboxID
	x.bySandbox[sandboxID] = append(x.bySandbox[sandboxID], id)
}

// addListed adds the containers of a listing of every container.
func (x *containerIndex) addListed(list []containers.Container) {
	for _, info := range list {
		x.add(info.Labels[labelSandbox], info.ID)
	}
}

func (x *containerIndex) remove(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	sandboxID, ok := x.sandboxOf[id]
	if !ok {
		return
	}
	delete(x.sandboxOf, id)
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
