package storage

import (
	"errors"
	"sort"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime"
)

// Companion is a key an object owns besides its own, such as the record of
// a cluster IP a Service holds. The store writes an object's companions in
// the same etcd transaction as the object: they appear with it, follow its
// updates and go with its deletion, so at every revision the companions in
// etcd are exactly what the stored objects own. A key can have one owner:
// a write that would take a companion key that exists fails with a
// *TakenError, and nothing of it is stored.
type Companion struct {
	Key   string
	Value string
}

// CompanionsFunc returns the companions obj owns; nil for none.
type CompanionsFunc func(obj runtime.Object) []Companion

// SetCompanions makes the store keep fn's companions of every object it
// writes. Call it before the store serves writes.
func (s *Store) SetCompanions(fn CompanionsFunc) { s.companions = fn }

// HasCompanions reports whether objects of this store own companion keys.
func (s *Store) HasCompanions() bool { return s.companions != nil }

// ErrTaken matches a *TakenError with errors.Is.
var ErrTaken = errors.New("storage: companion key already taken")

// TakenError says a write did not commit because Key, a companion of the
// object written, already belongs to another object.
type TakenError struct{ Key string }

func (e *TakenError) Error() string        { return "storage: " + e.Key + " is already taken" }
func (e *TakenError) Is(target error) bool { return target == ErrTaken }

// companionsOf returns obj's companions by key.
func (s *Store) companionsOf(obj runtime.Object) map[string]string {
	if s.companions == nil || obj == nil {
		return nil
	}
	out := map[string]string{}
	for _, c := range s.companions(obj) {
		out[c.Key] = c.Value
	}
	return out
}

// companionChange is what a write does to companion keys: the keys it
// adds (each must not exist yet) and the keys it removes.
type companionChange struct {
	add    []Companion
	remove []string
}

// diffCompanions compares the companions of the stored object (before)
// with those of the object to store (after).
func diffCompanions(before, after map[string]string) companionChange {
	var ch companionChange
	for k, v := range after {
		if _, ok := before[k]; !ok {
			ch.add = append(ch.add, Companion{Key: k, Value: v})
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			ch.remove = append(ch.remove, k)
		}
	}
	sort.Slice(ch.add, func(i, j int) bool { return ch.add[i].Key < ch.add[j].Key })
	sort.Strings(ch.remove)
	return ch
}

// cmps requires every added key to be free.
func (ch companionChange) cmps() []clientv3.Cmp {
	out := make([]clientv3.Cmp, 0, len(ch.add))
	for _, c := range ch.add {
		out = append(out, clientv3.Compare(clientv3.CreateRevision(c.Key), "=", 0))
	}
	return out
}

// ops writes the added keys and deletes the removed ones.
func (ch companionChange) ops() []clientv3.Op {
	out := make([]clientv3.Op, 0, len(ch.add)+len(ch.remove))
	for _, c := range ch.add {
		out = append(out, clientv3.OpPut(c.Key, c.Value))
	}
	for _, k := range ch.remove {
		out = append(out, clientv3.OpDelete(k))
	}
	return out
}

// reads reads back the added keys when the transaction fails, to tell
// which one was taken.
func (ch companionChange) reads() []clientv3.Op {
	out := make([]clientv3.Op, 0, len(ch.add))
	for _, c := range ch.add {
		out = append(out, clientv3.OpGet(c.Key, clientv3.WithKeysOnly()))
	}
	return out
}

// taken returns a *TakenError for the first added key that the failed
// transaction's reads (responses, in the order of reads) found, or nil.
func (ch companionChange) taken(responses []*etcdserverpb.ResponseOp) error {
	for i, c := range ch.add {
		if i < len(responses) {
			if r := responses[i].GetResponseRange(); r != nil && len(r.Kvs) > 0 {
				return &TakenError{Key: c.Key}
			}
		}
	}
	return nil
}
