package storage

import (
	"errors"
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestCompanions writes pods whose companion is the key named by their
// "slot" label, and checks that the companions follow every write in the
// object's own transaction.
func TestCompanions(t *testing.T) {
	s := newPodStore(t, nil, 100)
	slots := fmt.Sprintf("/registry/test-%d/slots/", prefixSeq.Add(1))
	s.SetCompanions(func(obj runtime.Object) []Companion {
		pod := obj.(*corev1.Pod)
		if slot := pod.Labels["slot"]; slot != "" {
			return []Companion{{Key: slots + slot, Value: pod.Name}}
		}
		return nil
	})
	ctx := ctxT(t)
	owner := func(slot string) string {
		t.Helper()
		resp, err := s.client.Get(ctx, slots+slot)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return ""
		}
		return string(resp.Kvs[0].Value)
	}
	relabel := func(name, slot string) error {
		_, _, err := s.GuaranteedUpdate(ctx, "ns", name, func(cur runtime.Object) (runtime.Object, error) {
			cur.(*corev1.Pod).Labels["slot"] = slot
			return cur, nil
		})
		return err
	}

	t.Run("a create writes the object's companions with it", func(t *testing.T) {
		if _, err := s.Create(ctx, makePod("a").Label("slot", "1").Obj()); err != nil {
			t.Fatal(err)
		}
		if got := owner("1"); got != "a" {
			t.Fatalf("slot 1 owner = %q, want a", got)
		}
	})
	t.Run("a create whose companion is taken stores nothing and names the key", func(t *testing.T) {
		_, err := s.Create(ctx, makePod("b").Label("slot", "1").Obj())
		var taken *TakenError
		if !errors.As(err, &taken) || taken.Key != slots+"1" || !errors.Is(err, ErrTaken) {
			t.Fatalf("create = %v, want a TakenError for slot 1", err)
		}
		if _, err := s.Get(ctx, "ns", "b"); !apierrors.IsNotFound(err) {
			t.Fatalf("b was stored: %v", err)
		}
	})
	t.Run("a create of an existing object still answers AlreadyExists", func(t *testing.T) {
		if _, err := s.Create(ctx, makePod("a").Label("slot", "1").Obj()); !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create = %v, want AlreadyExists", err)
		}
	})
	t.Run("an update moves the companion in the same write", func(t *testing.T) {
		if err := relabel("a", "2"); err != nil {
			t.Fatal(err)
		}
		if owner("1") != "" || owner("2") != "a" {
			t.Fatalf("owners after the move: slot 1 %q, slot 2 %q", owner("1"), owner("2"))
		}
	})
	t.Run("an update to a taken companion fails and changes nothing", func(t *testing.T) {
		if _, err := s.Create(ctx, makePod("c").Label("slot", "3").Obj()); err != nil {
			t.Fatal(err)
		}
		if err := relabel("a", "3"); !errors.Is(err, ErrTaken) {
			t.Fatalf("update = %v, want ErrTaken", err)
		}
		pod, _ := s.Get(ctx, "ns", "a")
		if got := pod.(*corev1.Pod).Labels["slot"]; got != "2" || owner("2") != "a" || owner("3") != "c" {
			t.Fatalf("after the refused update: a's slot %q, slot 2 %q, slot 3 %q", got, owner("2"), owner("3"))
		}
	})
	t.Run("a delete frees the companions", func(t *testing.T) {
		if _, err := s.Delete(ctx, "ns", "a", nil); err != nil {
			t.Fatal(err)
		}
		if got := owner("2"); got != "" {
			t.Fatalf("slot 2 still owned by %q", got)
		}
		resp, err := s.client.Get(ctx, slots, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil || resp.Count != 1 {
			t.Fatalf("slots left = %d (%v), want only c's", resp.Count, err)
		}
	})
}
