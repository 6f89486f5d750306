package storage

import (
	"fmt"
	"strconv"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/encoding/protowire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// served lists through ServeList and returns the page and its item names.
func served(t *testing.T, s *podStore, opts ListOptions) (*Page, []string) {
	t.Helper()
	page, err := s.ServeList(ctxT(t), opts)
	if err != nil {
		t.Fatalf("list %+v: %v", opts, err)
	}
	var got []string
	if err := page.Each(func(obj runtime.Object) error {
		got = append(got, metaOf(obj).GetName())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return page, got
}

func TestServeList(t *testing.T) {
	odd := func(obj runtime.Object) bool { return metaOf(obj).GetLabels()["odd"] == "true" }
	fill := func(t *testing.T, s *podStore, n int) int64 {
		var rev int64
		for i := 0; i < n; i++ {
			p := makePod(fmt.Sprintf("p%02d", i))
			if i%2 == 1 {
				p.Label("odd", "true")
			}
			rev = s.create(t, p.Obj())
		}
		return rev
	}
	cases := []struct {
		name string
		run  func(t *testing.T, s *podStore)
	}{
		{"a consistent list right after a write sees the write, from the cache", func(t *testing.T, s *podStore) {
			for i := 0; i < 20; i++ {
				rev := s.create(t, makePod(fmt.Sprintf("q%02d", i)).Obj())
				page, got := served(t, s, ListOptions{Namespace: "ns"})
				if !page.FromCache || page.ResourceVersion < rev || len(got) != i+1 || got[i] != fmt.Sprintf("q%02d", i) {
					t.Fatalf("after create at %d: cache %v rv %d items %v", rev, page.FromCache, page.ResourceVersion, got)
				}
			}
		}},
		{"a consistent list after a delete no longer has the object", func(t *testing.T, s *podStore) {
			fill(t, s, 3)
			if _, err := s.Delete(ctxT(t), "ns", "p01", nil); err != nil {
				t.Fatal(err)
			}
			if _, got := served(t, s, ListOptions{Namespace: "ns"}); fmt.Sprint(got) != "[p00 p02]" {
				t.Fatalf("got %v", got)
			}
		}},
		{"a consistent list when nothing changed since asks etcd for progress and answers at once", func(t *testing.T, s *podStore) {
			fill(t, s, 2)
			other := newPodStore(t, nil, 100) // moves etcd's revision past what s's watch saw
			other.create(t, makePod("elsewhere").Obj())
			page, got := served(t, s, ListOptions{Namespace: "ns"})
			if !page.FromCache || len(got) != 2 {
				t.Fatalf("cache %v items %v", page.FromCache, got)
			}
		}},
		{"resourceVersion=0 answers from the cache as it is, objects carry their revisions", func(t *testing.T, s *podStore) {
			rev := fill(t, s, 3)
			s.waitSeen(t, rev)
			page, err := s.ServeList(ctxT(t), ListOptions{Namespace: "ns", ResourceVersion: "0"})
			if err != nil || !page.FromCache || page.ResourceVersion < rev {
				t.Fatalf("page %+v err %v", page, err)
			}
			var last string
			_ = page.Each(func(obj runtime.Object) error { last = metaOf(obj).GetResourceVersion(); return nil })
			if last != strconv.FormatInt(rev, 10) {
				t.Fatalf("last item at %s, want %d", last, rev)
			}
		}},
		{"NotOlderThan a revision the cache has seen answers from the cache", func(t *testing.T, s *podStore) {
			rev := fill(t, s, 2)
			page, got := served(t, s, ListOptions{Namespace: "ns", ResourceVersion: strconv.FormatInt(rev, 10), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
			if !page.FromCache || page.ResourceVersion < rev || len(got) != 2 {
				t.Fatalf("cache %v rv %d items %v", page.FromCache, page.ResourceVersion, got)
			}
		}},
		{"NotOlderThan a revision nobody reached answers 504 Too large resource version", func(t *testing.T, s *podStore) {
			rev := fill(t, s, 1)
			_, err := s.ServeList(ctxT(t), ListOptions{Namespace: "ns", ResourceVersion: strconv.FormatInt(rev+1000, 10)})
			if !apierrors.IsTimeout(err) || !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
				t.Fatalf("err %v, want 504 with cause ResourceVersionTooLarge", err)
			}
		}},
		{"Exact reads etcd at that revision: later writes are not seen", func(t *testing.T, s *podStore) {
			rev := fill(t, s, 2)
			s.create(t, makePod("later").Obj())
			page, got := served(t, s, ListOptions{Namespace: "ns", ResourceVersion: strconv.FormatInt(rev, 10), ResourceVersionMatch: metav1.ResourceVersionMatchExact})
			if page.FromCache || page.ResourceVersion != rev || fmt.Sprint(got) != "[p00 p01]" {
				t.Fatalf("cache %v rv %d items %v", page.FromCache, page.ResourceVersion, got)
			}
		}},
		{"a limit with resourceVersion=N is the legacy exact match, from etcd", func(t *testing.T, s *podStore) {
			rev := fill(t, s, 3)
			s.create(t, makePod("later").Obj())
			page, got := served(t, s, ListOptions{Namespace: "ns", Limit: 2, ResourceVersion: strconv.FormatInt(rev, 10)})
			if page.FromCache || page.ResourceVersion != rev || fmt.Sprint(got) != "[p00 p01]" || page.Continue == "" {
				t.Fatalf("cache %v rv %d items %v continue %q", page.FromCache, page.ResourceVersion, got, page.Continue)
			}
		}},
		{"a first page comes from the cache, the next from etcd at its revision", func(t *testing.T, s *podStore) {
			fill(t, s, 5)
			first, got := served(t, s, ListOptions{Namespace: "ns", Limit: 2})
			if !first.FromCache || fmt.Sprint(got) != "[p00 p01]" || first.RemainingItemCount == nil || *first.RemainingItemCount != 3 {
				t.Fatalf("first page: cache %v items %v remaining %v", first.FromCache, got, first.RemainingItemCount)
			}
			s.create(t, makePod("p01a").Obj()) // after the first page's revision: not seen
			all := got
			page := first
			for page.Continue != "" {
				page, got = served(t, s, ListOptions{Namespace: "ns", Limit: 2, Continue: page.Continue})
				if page.FromCache || page.ResourceVersion != first.ResourceVersion {
					t.Fatalf("next page: cache %v rv %d, want etcd at %d", page.FromCache, page.ResourceVersion, first.ResourceVersion)
				}
				all = append(all, got...)
			}
			if fmt.Sprint(all) != "[p00 p01 p02 p03 p04]" {
				t.Fatalf("paged %v", all)
			}
		}},
		{"a selector on the cache keeps only matches; a page of them has a token, no count", func(t *testing.T, s *podStore) {
			fill(t, s, 7)
			if page, got := served(t, s, ListOptions{Namespace: "ns", Match: odd}); !page.FromCache || fmt.Sprint(got) != "[p01 p03 p05]" {
				t.Fatalf("cache %v items %v", page.FromCache, got)
			}
			page, got := served(t, s, ListOptions{Namespace: "ns", Match: odd, Limit: 2})
			if fmt.Sprint(got) != "[p01 p03]" || page.Continue == "" || page.RemainingItemCount != nil {
				t.Fatalf("items %v continue %q remaining %v", got, page.Continue, page.RemainingItemCount)
			}
			_, rest := served(t, s, ListOptions{Namespace: "ns", Match: odd, Limit: 2, Continue: page.Continue})
			if fmt.Sprint(rest) != "[p05]" {
				t.Fatalf("rest %v", rest)
			}
		}},
		{"a namespace's list holds only that namespace", func(t *testing.T, s *podStore) {
			fill(t, s, 2)
			s.create(t, makePod("x").Namespace("ns2").Obj())
			s.create(t, makePod("y").Namespace("n").Obj())
			if _, got := served(t, s, ListOptions{Namespace: "ns"}); fmt.Sprint(got) != "[p00 p01]" {
				t.Fatalf("ns: %v", got)
			}
			if _, got := served(t, s, ListOptions{}); fmt.Sprint(got) != "[y p00 p01 x]" {
				t.Fatalf("all: %v", got)
			}
		}},
		{"a whole list read while objects change is the state of its revision", func(t *testing.T, s *podStore) {
			fill(t, s, 50)
			page, err := s.ServeList(ctxT(t), ListOptions{Namespace: "ns"})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { // writes while the list is read (the race detector watches)
				defer close(done)
				for i := 0; i < 20; i++ {
					s.create(t, makePod(fmt.Sprintf("new%02d", i)).Obj())
					s.relabel(t, fmt.Sprintf("p%02d", i), "changed", "yes")
				}
				if _, err := s.Delete(ctxT(t), "ns", "p49", nil); err != nil {
					t.Error(err)
				}
			}()
			var names []string
			if err := page.Each(func(obj runtime.Object) error {
				if metaOf(obj).GetLabels()["changed"] != "" || rvOf(t, obj) > page.ResourceVersion {
					return fmt.Errorf("%s changed after the list's revision", metaOf(obj).GetName())
				}
				names = append(names, metaOf(obj).GetName())
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			<-done
			if len(names) != 50 || names[49] != "p49" {
				t.Fatalf("%d items, last %v", len(names), names[len(names)-1])
			}
			again, err := s.ServeList(ctxT(t), ListOptions{Namespace: "ns"})
			n := 0
			_ = again.Each(func(runtime.Object) error { n++; return nil })
			if err != nil || n != 69 {
				t.Fatalf("a new list: %d items, %v", n, err)
			}
		}},
		{"the protobuf size of a whole list is known without encoding", func(t *testing.T, s *podStore) {
			fill(t, s, 3)
			page, _ := served(t, s, ListOptions{Namespace: "ns"})
			size, ok := page.ProtobufSize()
			want := 0
			_ = page.Each(func(obj runtime.Object) error {
				want += protowire.SizeTag(2) + protowire.SizeBytes(obj.(interface{ Size() int }).Size())
				return nil
			})
			if !ok || size != want {
				t.Fatalf("size %d %v, want %d", size, ok, want)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newPodStore(t, nil, 100))
		})
	}

	t.Run("after a compaction the cache reads every object again; old tokens and revisions answer 410", func(t *testing.T) {
		cli := ownEtcd(t)
		s := newPodStore(t, cli, 100)
		rev := fill(t, s, 4)
		page, _ := served(t, s, ListOptions{Namespace: "ns", Limit: 2})
		later := s.create(t, makePod("later").Obj())
		if _, err := cli.Compact(ctxT(t), later, clientv3.WithCompactPhysical()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ServeList(ctxT(t), ListOptions{Namespace: "ns", Limit: 2, Continue: page.Continue}); !apierrors.IsResourceExpired(err) {
			t.Fatalf("continue: err %v, want 410", err)
		}
		_, err := s.ServeList(ctxT(t), ListOptions{Namespace: "ns", ResourceVersion: strconv.FormatInt(rev, 10), ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if !apierrors.IsResourceExpired(err) {
			t.Fatalf("exact: err %v, want 410", err)
		}
		if _, got := served(t, s, ListOptions{Namespace: "ns"}); len(got) != 5 {
			t.Fatalf("after compaction: %v", got)
		}
	})
}
