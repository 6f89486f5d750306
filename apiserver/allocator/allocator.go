package allocator

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
)

// KV is the little of etcd the allocator needs: whether a key exists, and
// every key under a prefix.
type KV interface {
	Exists(ctx context.Context, key string) (bool, error)
	Keys(ctx context.Context, prefix string) ([]string, error)
}

// Allocator picks free items of a Range whose allocations are the keys
// Prefix+item. It only reads: the caller commits the key with the object
// that holds it (a storage companion), and a lost race shows up there.
type Allocator struct {
	Range  Range
	Prefix string // e.g. "/registry/ranges/serviceips/"
	KV     KV
	// Rand picks candidates; nil uses a random source.
	Rand *rand.Rand
	// allocated is ErrIPAllocated or ErrPortAllocated.
	allocated error
}

// Prefixes of the allocation keys, beside upstream's RangeAllocation keys
// of the same names.
const (
	ServiceIPsPrefix       = "/registry/ranges/serviceips/"
	ServiceNodePortsPrefix = "/registry/ranges/servicenodeports/"
)

// NewIPs returns the cluster IP allocator of r.
func NewIPs(r *IPRange, kv KV) *Allocator {
	return &Allocator{Range: r, Prefix: ServiceIPsPrefix, KV: kv, allocated: ErrIPAllocated}
}

// NewPorts returns the node port allocator of r.
func NewPorts(r *PortRange, kv KV) *Allocator {
	return &Allocator{Range: r, Prefix: ServiceNodePortsPrefix, KV: kv, allocated: ErrPortAllocated}
}

// probes is how many random candidates Next tries before it lists every
// allocation to find a free one (or to learn that there is none).
const probes = 8

// Key is the etcd key recording item's allocation.
func (a *Allocator) Key(item string) string { return a.Prefix + item }

// Item is the item a key records, or "" for a key of another prefix.
func (a *Allocator) Item(key string) string {
	item, ok := strings.CutPrefix(key, a.Prefix)
	if !ok {
		return ""
	}
	return item
}

// Contains reports whether item is in the range.
func (a *Allocator) Contains(item string) bool {
	_, err := a.Range.Index(item)
	return err == nil
}

// Check reports whether item may be requested: it must be in the range
// and not allocated.
func (a *Allocator) Check(ctx context.Context, item string) error {
	if _, err := a.Range.Index(item); err != nil {
		return err
	}
	taken, err := a.KV.Exists(ctx, a.Key(item))
	if err != nil {
		return err
	}
	if taken {
		return a.allocated
	}
	return nil
}

// Next picks a free item at random, as upstream does: from the dynamic
// band (above Static) first, then from the static band. Items in skip are
// taken as allocated (picked already for the same request). It answers
// ErrFull when the range has nothing free.
func (a *Allocator) Next(ctx context.Context, skip map[string]bool) (string, error) {
	size, static := a.Range.Size(), a.Range.Static()
	for i := 0; i < probes && size > static; i++ {
		item := a.Range.Item(static + a.intn(size-static))
		if skip[item] {
			continue
		}
		taken, err := a.KV.Exists(ctx, a.Key(item))
		if err != nil {
			return "", err
		}
		if !taken {
			return item, nil
		}
	}
	keys, err := a.KV.Keys(ctx, a.Prefix)
	if err != nil {
		return "", err
	}
	used := map[int]bool{}
	for _, k := range keys {
		if i, err := a.Range.Index(a.Item(k)); err == nil {
			used[i] = true
		}
	}
	for item := range skip {
		if i, err := a.Range.Index(item); err == nil {
			used[i] = true
		}
	}
	if i, ok := pickFree(static, size, used, a.intn); ok {
		return a.Range.Item(i), nil
	}
	if i, ok := pickFree(0, static, used, a.intn); ok {
		return a.Range.Item(i), nil
	}
	return "", ErrFull
}

// pickFree returns a free number of [lo, hi): the first free one from a
// random start, wrapping around.
func pickFree(lo, hi int, used map[int]bool, intn func(int) int) (int, bool) {
	n := hi - lo
	if n <= 0 {
		return 0, false
	}
	start := intn(n)
	for k := 0; k < n; k++ {
		i := lo + (start+k)%n
		if !used[i] {
			return i, true
		}
	}
	return 0, false
}

func (a *Allocator) intn(n int) int {
	if a.Rand != nil {
		return a.Rand.IntN(n)
	}
	return rand.IntN(n)
}

// Describe names the range for messages ("10.96.0.0/12", "30000-32767").
func (a *Allocator) Describe() string { return fmt.Sprint(a.Range) }
