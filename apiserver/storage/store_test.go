package storage

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestStoreVerbs(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, s *podStore)
	}{
		{"create stores the object with the etcd revision as resourceVersion", func(t *testing.T, s *podStore) {
			obj, err := s.Create(ctxT(t), makePod("a").Label("app", "web").Obj())
			if err != nil {
				t.Fatal(err)
			}
			resp, err := s.client.Get(ctxT(t), s.Key("ns", "a"))
			if err != nil || len(resp.Kvs) != 1 {
				t.Fatalf("etcd has %v (err %v), want the object", resp, err)
			}
			if got, want := metaOf(obj).GetResourceVersion(), strconv.FormatInt(resp.Kvs[0].ModRevision, 10); got != want {
				t.Fatalf("resourceVersion %s, want the ModRevision %s", got, want)
			}
		}},
		{"objects are stored as Kubernetes stores them, protobuf in a k8s envelope, without resourceVersion", func(t *testing.T, s *podStore) {
			s.create(t, makePod("a").Label("app", "web").Obj())
			resp, _ := s.client.Get(ctxT(t), s.Key("ns", "a"))
			b := resp.Kvs[0].Value
			if !strings.HasPrefix(string(b), "k8s\x00") {
				t.Fatalf("stored bytes start %q, want the k8s magic", b[:min(len(b), 8)])
			}
			var unknown runtime.Unknown
			if err := unknown.Unmarshal(b[4:]); err != nil {
				t.Fatal(err)
			}
			if unknown.APIVersion != "v1" || unknown.Kind != "Pod" {
				t.Fatalf("envelope says %s %s, want v1 Pod", unknown.APIVersion, unknown.Kind)
			}
			var pod corev1.Pod
			if err := pod.Unmarshal(unknown.Raw); err != nil {
				t.Fatal(err)
			}
			if pod.Name != "a" || pod.Labels["app"] != "web" || pod.ResourceVersion != "" {
				t.Fatalf("stored pod %s labels %v resourceVersion %q, want a, app=web and no resourceVersion", pod.Name, pod.Labels, pod.ResourceVersion)
			}
		}},
		{"objects stored as JSON by earlier versions still read and update", func(t *testing.T, s *podStore) {
			if _, err := s.client.Put(ctxT(t), s.Key("ns", "old"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"old","namespace":"ns","labels":{"v":"1"}}}`); err != nil {
				t.Fatal(err)
			}
			obj, err := s.Get(ctxT(t), "ns", "old")
			if err != nil {
				t.Fatal(err)
			}
			if p := obj.(*corev1.Pod); p.Labels["v"] != "1" || p.Kind != "Pod" {
				t.Fatalf("read %+v, want label v=1 and kind Pod", p.ObjectMeta)
			}
			_, _, err = s.GuaranteedUpdate(ctxT(t), "ns", "old", func(cur runtime.Object) (runtime.Object, error) {
				cur.(*corev1.Pod).Labels["v"] = "2"
				return cur, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			resp, _ := s.client.Get(ctxT(t), s.Key("ns", "old"))
			if !strings.HasPrefix(string(resp.Kvs[0].Value), "k8s\x00") {
				t.Fatalf("after an update the object is still stored as %q, want protobuf", resp.Kvs[0].Value)
			}
		}},
		{"create of a taken name answers AlreadyExists and keeps the first object", func(t *testing.T, s *podStore) {
			s.create(t, makePod("a").Label("v", "1").Obj())
			_, err := s.Create(ctxT(t), makePod("a").Label("v", "2").Obj())
			if !apierrors.IsAlreadyExists(err) {
				t.Fatalf("err %v, want AlreadyExists", err)
			}
			got, _ := s.Get(ctxT(t), "ns", "a")
			if v := got.(*corev1.Pod).Labels["v"]; v != "1" {
				t.Fatalf("label v=%s, want the first object's 1", v)
			}
		}},
		{"get returns the object as stored, with its resourceVersion", func(t *testing.T, s *podStore) {
			rev := s.create(t, makePod("a").Label("app", "web").Obj())
			obj, err := s.Get(ctxT(t), "ns", "a")
			if err != nil {
				t.Fatal(err)
			}
			if p := obj.(*corev1.Pod); p.Labels["app"] != "web" || rvOf(t, p) != rev {
				t.Fatalf("got %+v, want app=web at %d", p.ObjectMeta, rev)
			}
		}},
		{"get of a missing object answers NotFound", func(t *testing.T, s *podStore) {
			if _, err := s.Get(ctxT(t), "ns", "nope"); !apierrors.IsNotFound(err) {
				t.Fatalf("err %v, want NotFound", err)
			}
		}},
		{"an update writes a new revision", func(t *testing.T, s *podStore) {
			rev := s.create(t, makePod("a").Obj())
			if rev2 := s.relabel(t, "a", "app", "web"); rev2 <= rev {
				t.Fatalf("revision %d after update, want > %d", rev2, rev)
			}
			got, _ := s.Get(ctxT(t), "ns", "a")
			if got.(*corev1.Pod).Labels["app"] != "web" {
				t.Fatal("update not stored")
			}
		}},
		{"an update to a missing object answers NotFound", func(t *testing.T, s *podStore) {
			_, _, err := s.GuaranteedUpdate(ctxT(t), "ns", "nope", func(cur runtime.Object) (runtime.Object, error) { return cur, nil })
			if !apierrors.IsNotFound(err) {
				t.Fatalf("err %v, want NotFound", err)
			}
		}},
		{"an update refused with a conflict writes nothing", func(t *testing.T, s *podStore) {
			rev := s.create(t, makePod("a").Obj())
			conflict := apierrors.NewConflict(corev1.Resource("pods"), "a", errors.New("the object has been modified"))
			_, _, err := s.GuaranteedUpdate(ctxT(t), "ns", "a", func(runtime.Object) (runtime.Object, error) { return nil, conflict })
			if !apierrors.IsConflict(err) {
				t.Fatalf("err %v, want Conflict", err)
			}
			got, _ := s.Get(ctxT(t), "ns", "a")
			if rvOf(t, got) != rev {
				t.Fatalf("revision moved to %d, want %d", rvOf(t, got), rev)
			}
		}},
		{"an update that changes nothing writes nothing", func(t *testing.T, s *podStore) {
			rev := s.create(t, makePod("a").Obj())
			for _, fn := range []UpdateFunc{
				func(cur runtime.Object) (runtime.Object, error) { return cur, nil },
				func(runtime.Object) (runtime.Object, error) { return nil, ErrNoChange },
			} {
				obj, deleted, err := s.GuaranteedUpdate(ctxT(t), "ns", "a", fn)
				if err != nil || deleted || rvOf(t, obj) != rev {
					t.Fatalf("got rev %d deleted %v err %v, want the stored object at %d", rvOf(t, obj), deleted, err, rev)
				}
			}
		}},
		{"an update that marks the object deleted without finalizers removes it", func(t *testing.T, s *podStore) {
			s.create(t, makePod("a").Obj())
			_, deleted, err := s.GuaranteedUpdate(ctxT(t), "ns", "a", func(cur runtime.Object) (runtime.Object, error) {
				now := metav1.Now()
				cur.(*corev1.Pod).DeletionTimestamp = &now
				return cur, nil
			})
			if err != nil || !deleted {
				t.Fatalf("deleted %v err %v, want deleted", deleted, err)
			}
			if _, err := s.Get(ctxT(t), "ns", "a"); !apierrors.IsNotFound(err) {
				t.Fatalf("get after delete: %v, want NotFound", err)
			}
		}},
		{"delete removes the object and returns its last state at the deletion's revision", func(t *testing.T, s *podStore) {
			rev := s.create(t, makePod("a").Label("app", "web").Obj())
			obj, err := s.Delete(ctxT(t), "ns", "a", nil)
			if err != nil {
				t.Fatal(err)
			}
			if p := obj.(*corev1.Pod); p.Labels["app"] != "web" || rvOf(t, p) <= rev {
				t.Fatalf("got %+v, want the last state at a revision after %d", p.ObjectMeta, rev)
			}
			if _, err := s.Get(ctxT(t), "ns", "a"); !apierrors.IsNotFound(err) {
				t.Fatalf("get after delete: %v, want NotFound", err)
			}
		}},
		{"delete of a missing object answers NotFound", func(t *testing.T, s *podStore) {
			if _, err := s.Delete(ctxT(t), "ns", "nope", nil); !apierrors.IsNotFound(err) {
				t.Fatalf("err %v, want NotFound", err)
			}
		}},
		{"a failed delete precondition keeps the object", func(t *testing.T, s *podStore) {
			s.create(t, makePod("a").Obj())
			refuse := apierrors.NewConflict(corev1.Resource("pods"), "a", errors.New("uid mismatch"))
			if _, err := s.Delete(ctxT(t), "ns", "a", func(runtime.Object) error { return refuse }); !apierrors.IsConflict(err) {
				t.Fatalf("err %v, want the precondition's Conflict", err)
			}
			if _, err := s.Get(ctxT(t), "ns", "a"); err != nil {
				t.Fatalf("object gone after a refused delete: %v", err)
			}
		}},
		{"a guarded create commits while its guards hold", func(t *testing.T, s *podStore) {
			guardRev := s.create(t, makePod("guard").Obj())
			_, err := s.Create(ctxT(t), makePod("a").Obj(),
				Guard{Key: s.Key("ns", "guard"), ModRevision: guardRev},
				Guard{Key: s.Key("ns", "absent"), ModRevision: 0},
				Guard{Key: s.Key("", ""), Prefix: true, ModRevision: guardRev})
			if err != nil {
				t.Fatalf("guarded create: %v", err)
			}
		}},
		{"a guarded create answers ErrGuardFailed once a guarded key changed", func(t *testing.T, s *podStore) {
			guardRev := s.create(t, makePod("guard").Obj())
			s.relabel(t, "guard", "changed", "yes")
			_, err := s.Create(ctxT(t), makePod("a").Obj(), Guard{Key: s.Key("ns", "guard"), ModRevision: guardRev})
			if !errors.Is(err, ErrGuardFailed) {
				t.Fatalf("err %v, want ErrGuardFailed", err)
			}
			if _, err := s.Get(ctxT(t), "ns", "a"); !apierrors.IsNotFound(err) {
				t.Fatalf("object written despite the failed guard: %v", err)
			}
		}},
		{"a guarded create answers ErrGuardFailed once a guarded key is deleted", func(t *testing.T, s *podStore) {
			guardRev := s.create(t, makePod("guard").Obj())
			if _, err := s.Delete(ctxT(t), "ns", "guard", nil); err != nil {
				t.Fatal(err)
			}
			_, err := s.Create(ctxT(t), makePod("a").Obj(), Guard{Key: s.Key("ns", "guard"), ModRevision: guardRev})
			if !errors.Is(err, ErrGuardFailed) {
				t.Fatalf("err %v, want ErrGuardFailed", err)
			}
		}},
		{"a prefix guard fails once any key under the prefix is newer", func(t *testing.T, s *podStore) {
			rev := s.create(t, makePod("x").Namespace("other").Obj())
			s.create(t, makePod("y").Namespace("other").Obj())
			_, err := s.Create(ctxT(t), makePod("a").Obj(), Guard{Key: s.Key("other", ""), Prefix: true, ModRevision: rev})
			if !errors.Is(err, ErrGuardFailed) {
				t.Fatalf("err %v, want ErrGuardFailed", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newPodStore(t, nil, 100))
		})
	}
}

// TestGuardedUpdate: an update's guards commit with it; when one fails,
// the update is decided again on fresh reads, and the guard's write is
// made only with the update that commits.
func TestGuardedUpdate(t *testing.T) {
	s := newPodStore(t, nil, 100)
	s.create(t, makePod("a").Obj())
	guardRev := s.create(t, makePod("quota").Obj())
	calls := 0
	_, _, err := s.GuardedUpdate(ctxT(t), "ns", "a", func(cur runtime.Object) (runtime.Object, []Guard, error) {
		calls++
		if calls == 1 {
			s.relabel(t, "quota", "charged", "by-another") // another writer wins the guarded key
		}
		g, err := s.Get(ctxT(t), "ns", "quota")
		if err != nil {
			return nil, nil, err
		}
		g.(*corev1.Pod).Labels["charged"] = fmt.Sprintf("by-me-%d", calls)
		put, err := s.PutGuard(g)
		if err != nil {
			return nil, nil, err
		}
		if calls == 1 {
			put.ModRevision = guardRev // what the first read saw, before the other writer
		}
		p := cur.(*corev1.Pod)
		p.Labels = map[string]string{"updated": "yes"}
		return p, []Guard{put}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Fatalf("update decided %d times, want 2 (once more after the failed guard)", calls)
	}
	q, _ := s.Get(ctxT(t), "ns", "quota")
	if got := q.(*corev1.Pod).Labels["charged"]; got != "by-me-2" {
		t.Fatalf("guarded key charged %q, want the second decision's by-me-2", got)
	}

	t.Run("a guard that always fails ends in ErrGuardFailed", func(t *testing.T) {
		_, _, err := s.GuardedUpdate(ctxT(t), "ns", "a", func(cur runtime.Object) (runtime.Object, []Guard, error) {
			p := cur.(*corev1.Pod)
			p.Labels = map[string]string{"updated": "again"}
			return p, []Guard{{Key: s.Key("ns", "quota"), ModRevision: guardRev}}, nil
		})
		if !errors.Is(err, ErrGuardFailed) {
			t.Fatalf("err %v, want ErrGuardFailed", err)
		}
		a, _ := s.Get(ctxT(t), "ns", "a")
		if a.(*corev1.Pod).Labels["updated"] != "yes" {
			t.Fatalf("object written despite the failed guard: %v", a.(*corev1.Pod).Labels)
		}
	})
}

func TestGuaranteedUpdateUnderConcurrentWriters(t *testing.T) {
	t.Run("a write between read and write makes the update retry on the new value", func(t *testing.T) {
		s := newPodStore(t, nil, 100)
		s.create(t, makePod("a").Obj())
		calls := 0
		obj, _, err := s.GuaranteedUpdate(ctxT(t), "ns", "a", func(cur runtime.Object) (runtime.Object, error) {
			calls++
			if calls == 1 {
				s.relabel(t, "a", "writer", "other") // races us
			}
			p := cur.(*corev1.Pod)
			if p.Labels == nil {
				p.Labels = map[string]string{}
			}
			p.Labels["updater"] = "me"
			return p, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if calls != 2 {
			t.Fatalf("update function called %d times, want 2 (one retry)", calls)
		}
		if l := obj.(*corev1.Pod).Labels; l["writer"] != "other" || l["updater"] != "me" {
			t.Fatalf("labels %v, want both writes", l)
		}
	})
	t.Run("concurrent increments are never lost", func(t *testing.T) {
		s := newPodStore(t, nil, 100)
		s.create(t, makePod("counter").Obj())
		const writers, each = 8, 10
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; i++ {
					_, _, err := s.GuaranteedUpdate(ctxT(t), "ns", "counter", func(cur runtime.Object) (runtime.Object, error) {
						p := cur.(*corev1.Pod)
						n, _ := strconv.Atoi(p.Annotations["n"])
						p.Annotations = map[string]string{"n": strconv.Itoa(n + 1)}
						return p, nil
					})
					if err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		got, _ := s.Get(ctxT(t), "ns", "counter")
		if n := got.(*corev1.Pod).Annotations["n"]; n != strconv.Itoa(writers*each) {
			t.Fatalf("counter %s, want %d", n, writers*each)
		}
	})
}

func names(items []runtime.Object) []string {
	var out []string
	for _, o := range items {
		out = append(out, metaOf(o).GetName())
	}
	return out
}

func TestListPaging(t *testing.T) {
	fill := func(t *testing.T, s *podStore, n int) {
		for i := 0; i < n; i++ {
			p := makePod(fmt.Sprintf("p%02d", i))
			if i%2 == 1 {
				p.Label("odd", "true")
			}
			s.create(t, p.Obj())
		}
	}
	odd := func(obj runtime.Object) bool { return metaOf(obj).GetLabels()["odd"] == "true" }
	cases := []struct {
		name string
		run  func(t *testing.T, s *podStore)
	}{
		{"pages of a limit follow each other at one revision, in key order", func(t *testing.T, s *podStore) {
			fill(t, s, 7)
			var all []string
			first, err := s.List(ctxT(t), ListOptions{Namespace: "ns", Limit: 3})
			if err != nil {
				t.Fatal(err)
			}
			if first.RemainingItemCount == nil || *first.RemainingItemCount != 4 || first.Continue == "" {
				t.Fatalf("first page: remaining %v continue %q, want 4 and a token", first.RemainingItemCount, first.Continue)
			}
			all = append(all, names(first.Items)...)
			// A write between pages is not seen: pages read the first's revision.
			s.create(t, makePod("p00a").Obj())
			page := first
			for page.Continue != "" {
				if page, err = s.List(ctxT(t), ListOptions{Namespace: "ns", Limit: 3, Continue: page.Continue}); err != nil {
					t.Fatal(err)
				}
				if page.ResourceVersion != first.ResourceVersion {
					t.Fatalf("page at revision %d, want the first page's %d", page.ResourceVersion, first.ResourceVersion)
				}
				all = append(all, names(page.Items)...)
			}
			want := "[p00 p01 p02 p03 p04 p05 p06]"
			if fmt.Sprint(all) != want {
				t.Fatalf("paged %v, want %s", all, want)
			}
		}},
		{"a filtered page holds only matches and gives no remaining count", func(t *testing.T, s *podStore) {
			fill(t, s, 7)
			page, err := s.List(ctxT(t), ListOptions{Namespace: "ns", Limit: 2, Match: odd})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(names(page.Items)) != "[p01 p03]" || page.RemainingItemCount != nil || page.Continue == "" {
				t.Fatalf("got %v remaining %v continue %q", names(page.Items), page.RemainingItemCount, page.Continue)
			}
			rest, err := s.List(ctxT(t), ListOptions{Namespace: "ns", Limit: 2, Match: odd, Continue: page.Continue})
			if err != nil || fmt.Sprint(names(rest.Items)) != "[p05]" || rest.Continue != "" {
				t.Fatalf("second page %v continue %q err %v, want [p05] and no token", names(rest.Items), rest.Continue, err)
			}
		}},
		{"a list without limit returns everything and no token", func(t *testing.T, s *podStore) {
			fill(t, s, 5)
			page, err := s.List(ctxT(t), ListOptions{Namespace: "ns"})
			if err != nil || len(page.Items) != 5 || page.Continue != "" || page.ResourceVersion == 0 {
				t.Fatalf("got %d items continue %q rv %d err %v", len(page.Items), page.Continue, page.ResourceVersion, err)
			}
		}},
		{"a malformed continue token answers 400", func(t *testing.T, s *podStore) {
			_, err := s.List(ctxT(t), ListOptions{Namespace: "ns", Limit: 1, Continue: "not-a-token"})
			if !apierrors.IsBadRequest(err) {
				t.Fatalf("err %v, want BadRequest", err)
			}
		}},
		{"a continue token for another namespace answers 400", func(t *testing.T, s *podStore) {
			fill(t, s, 3)
			page, _ := s.List(ctxT(t), ListOptions{Namespace: "ns", Limit: 1})
			_, err := s.List(ctxT(t), ListOptions{Namespace: "other", Limit: 1, Continue: page.Continue})
			if !apierrors.IsBadRequest(err) {
				t.Fatalf("err %v, want BadRequest", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newPodStore(t, nil, 100))
		})
	}

	t.Run("a continue token older than the last compaction answers 410", func(t *testing.T) {
		cli := ownEtcd(t)
		s := newPodStore(t, cli, 100)
		fill(t, s, 4)
		page, err := s.List(ctxT(t), ListOptions{Namespace: "ns", Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		rev := s.create(t, makePod("later").Obj())
		if _, err := cli.Compact(ctxT(t), rev, clientv3.WithCompactPhysical()); err != nil {
			t.Fatal(err)
		}
		_, err = s.List(ctxT(t), ListOptions{Namespace: "ns", Limit: 2, Continue: page.Continue})
		if !apierrors.IsResourceExpired(err) || apierrors.ReasonForError(err) != metav1.StatusReasonExpired {
			t.Fatalf("err %v, want 410 Expired", err)
		}
		var st apierrors.APIStatus
		if !errors.As(err, &st) || st.Status().Code != 410 {
			t.Fatalf("code of %v, want 410", err)
		}
	})
}

// A delete decided inside GuaranteedUpdate (the object is marked deleted
// with nothing left to wait for) that loses a race to another write must
// be retried on the new state, never reported as done.
func TestGuaranteedUpdateDeleteRetriesALostRace(t *testing.T) {
	s := newPodStore(t, nil, 100)
	s.create(t, makePod("a").Obj())
	attempts := 0
	obj, deleted, err := s.GuaranteedUpdate(ctxT(t), "ns", "a", func(cur runtime.Object) (runtime.Object, error) {
		attempts++
		if attempts == 1 {
			// Another writer (a kubelet's status update) gets in first.
			if _, _, err := s.GuaranteedUpdate(ctxT(t), "ns", "a", func(o runtime.Object) (runtime.Object, error) {
				o.(*corev1.Pod).Status.Phase = corev1.PodRunning
				return o, nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		now := metav1.Now()
		zero := int64(0)
		cur.(*corev1.Pod).DeletionTimestamp, cur.(*corev1.Pod).DeletionGracePeriodSeconds = &now, &zero
		return cur, nil
	})
	if err != nil || !deleted || obj == nil {
		t.Fatalf("deleted=%v obj=%v err=%v, want the object deleted", deleted, obj, err)
	}
	if attempts != 2 {
		t.Fatalf("update ran %d times, want 2 (once more after the lost race)", attempts)
	}
	if resp, _ := s.client.Get(ctxT(t), s.Key("ns", "a")); len(resp.Kvs) != 0 {
		t.Fatal("the object is still in etcd")
	}
}

// TestUpdateFromAStaleCache: an update's first try starts from the watch
// cache. A second store on the same keys stops following etcd, so its
// cache keeps the old copy; whatever the update decides on that copy, the
// result is what it decides on etcd's.
func TestUpdateFromAStaleCache(t *testing.T) {
	live := newPodStore(t, nil, 100)
	stale := NewStore(live.client, live.prefix, corev1.Resource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"),
		func() runtime.Object { return &corev1.Pod{} }, 100)
	ctx, stopFollowing := context.WithCancel(context.Background())
	defer stopFollowing()
	if err := stale.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"error", "nochange", "write"} {
		live.create(t, makePod(name).Label("v", "1").Obj())
	}
	cachedLabel := func(name string) string {
		got, _ := stale.cache.cachedRead(stale.Key("ns", name))
		if got == nil {
			return ""
		}
		p, err := stale.Decode(got.Kvs[0].Value, got.Kvs[0].ModRevision)
		if err != nil {
			t.Fatal(err)
		}
		return p.(*corev1.Pod).Labels["v"]
	}
	for deadline := time.Now().Add(10 * time.Second); cachedLabel("write") != "1"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second store's cache never saw the pods")
		}
	}
	stopFollowing()
	time.Sleep(50 * time.Millisecond) // let the cache's watch end
	for _, name := range []string{"error", "nochange", "write"} {
		live.relabel(t, name, "v", "2")
	}
	if cachedLabel("write") != "1" {
		t.Fatal("the second store's cache is not behind etcd")
	}
	set := func(cur runtime.Object, v string) runtime.Object {
		p := cur.(*corev1.Pod)
		p.Labels["v"] = v
		return p
	}
	label := func(name string) string {
		p, err := live.Get(ctxT(t), "ns", name)
		if err != nil {
			t.Fatal(err)
		}
		return p.(*corev1.Pod).Labels["v"]
	}

	t.Run("an error seen on the cached copy is decided again", func(t *testing.T) {
		var seen []string
		_, _, err := stale.GuaranteedUpdate(ctxT(t), "ns", "error", func(cur runtime.Object) (runtime.Object, error) {
			v := cur.(*corev1.Pod).Labels["v"]
			seen = append(seen, v)
			if v != "2" { // as a client's resourceVersion precondition would
				return nil, apierrors.NewConflict(corev1.Resource("pods"), "error", errors.New("stale"))
			}
			return set(cur, "3"), nil
		})
		if err != nil || label("error") != "3" || strings.Join(seen, ",") != "1,2" {
			t.Fatalf("err %v, label %q, tries saw %v; want nil, 3, [1 2]", err, label("error"), seen)
		}
	})
	t.Run("no change on the cached copy is decided again", func(t *testing.T) {
		_, _, err := stale.GuaranteedUpdate(ctxT(t), "ns", "nochange", func(cur runtime.Object) (runtime.Object, error) {
			if cur.(*corev1.Pod).Labels["v"] == "1" {
				return nil, ErrNoChange
			}
			return set(cur, "3"), nil
		})
		if err != nil || label("nochange") != "3" {
			t.Fatalf("err %v, label %q; want nil, 3", err, label("nochange"))
		}
	})
	t.Run("a write on the cached copy loses to etcd's and is decided again", func(t *testing.T) {
		var seen []string
		_, _, err := stale.GuaranteedUpdate(ctxT(t), "ns", "write", func(cur runtime.Object) (runtime.Object, error) {
			v := cur.(*corev1.Pod).Labels["v"]
			seen = append(seen, v)
			return set(cur, v+"+"), nil
		})
		if err != nil || label("write") != "2+" || strings.Join(seen, ",") != "1,2" {
			t.Fatalf("err %v, label %q, tries saw %v; want nil, 2+, [1 2]", err, label("write"), seen)
		}
	})
}

// TestUpdateStartsFromTheCachesDecodedObject: while the event that brought
// an object is in memory, an update starts from the object it decoded
// (no second decode), and leaves that object, which every watcher shares,
// as it was: through a change and through a delete, which stamps the
// revision it returns. Once the event is gone, the update decodes again.
func TestUpdateStartsFromTheCachesDecodedObject(t *testing.T) {
	s := newPodStore(t, nil, 1)
	key := s.Key("ns", "p")
	sharedAt := func(rev int64) *corev1.Pod {
		t.Helper()
		s.waitSeen(t, rev)
		_, obj := s.cache.cachedRead(key)
		if obj == nil {
			t.Fatal("the cache holds no decoded object for the newest event")
		}
		return obj.(*corev1.Pod)
	}
	shared := sharedAt(s.create(t, makePod("p").Label("v", "1").Obj()))
	goruntime.GC() // weak: the event's window keeps it
	if _, obj := s.cache.cachedRead(key); obj != shared {
		t.Fatal("the decoded object is gone while its event is in the window")
	}
	rev1 := shared.ResourceVersion
	rev2 := s.relabel(t, "p", "v", "2")
	if shared.Labels["v"] != "1" || shared.ResourceVersion != rev1 {
		t.Fatalf("the update changed the shared object: labels %v, resourceVersion %s", shared.Labels, shared.ResourceVersion)
	}

	shared = sharedAt(rev2)
	deleted, gone, err := s.GuaranteedUpdate(ctxT(t), "ns", "p", func(cur runtime.Object) (runtime.Object, error) {
		p := cur.(*corev1.Pod)
		if p == shared {
			t.Error("update was handed the shared object itself")
		}
		now := metav1.Now()
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, new(int64)
		return p, nil
	})
	if err != nil || !gone {
		t.Fatalf("delete through update: deleted %v, err %v", gone, err)
	}
	if metaOf(deleted).GetResourceVersion() == rev2str(rev2) || shared.ResourceVersion != rev2str(rev2) {
		t.Fatalf("the delete stamped the shared object: it reads %s, the answer %s", shared.ResourceVersion, metaOf(deleted).GetResourceVersion())
	}

	// An event out of the window and unwatched is collected: the next
	// update decodes the bytes again.
	s.waitSeen(t, s.create(t, makePod("q").Obj()))
	s.waitSeen(t, s.create(t, makePod("r").Obj()))
	goruntime.GC()
	if _, obj := s.cache.cachedRead(s.Key("ns", "q")); obj != nil {
		t.Fatal("an event out of the window still holds its object")
	}
	if rev := s.relabel(t, "q", "v", "3"); rev == 0 {
		t.Fatal("no revision")
	}
}

func rev2str(rev int64) string { return strconv.FormatInt(rev, 10) }
