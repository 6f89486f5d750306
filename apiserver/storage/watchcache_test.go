package storage

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// everything is the filter of a watcher without selectors.
func everything(ev *Event) (watch.EventType, bool) { return ev.Type, true }

// labelFilter sees events through the selector app=value, as the
// apiserver's watch does: an object that starts matching is ADDED, one
// that stops matching is DELETED.
func labelFilter(value string) Filter {
	match := func(p *corev1.Pod) bool { return p != nil && p.Labels["app"] == value }
	return func(ev *Event) (watch.EventType, bool) {
		now := match(ev.Object.(*corev1.Pod))
		if ev.Type != watch.Modified {
			return ev.Type, now
		}
		prev, _ := ev.Prev().(*corev1.Pod)
		before := match(prev)
		switch {
		case now && before:
			return watch.Modified, true
		case now:
			return watch.Added, true
		case before:
			return watch.Deleted, true
		}
		return "", false
	}
}

func initialSummary(w *Watcher) []string {
	var out []string
	for _, ev := range w.Initial() {
		out = append(out, summary(Delivery{Type: ev.Type, Event: ev}))
	}
	return out
}

func TestWatchCacheResume(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, s *podStore)
	}{
		{"a watch from a resourceVersion replays the events after it, then follows live ones", func(t *testing.T, s *podStore) {
			r1 := s.create(t, makePod("a").Obj())
			s.create(t, makePod("b").Obj())
			r3 := s.relabel(t, "a", "app", "web")
			s.waitSeen(t, r3)
			w, err := s.Cache().Watch(r1, everything, false)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			if got := fmt.Sprint(initialSummary(w)); got != "[ADDED b MODIFIED a]" {
				t.Fatalf("backlog %s, want [ADDED b MODIFIED a]", got)
			}
			s.create(t, makePod("c").Obj())
			if got := summary(next(t, w)); got != "ADDED c" {
				t.Fatalf("live event %s, want ADDED c", got)
			}
		}},
		{"a watch from the latest revision gets only later events", func(t *testing.T, s *podStore) {
			rev := s.create(t, makePod("a").Obj())
			s.waitSeen(t, rev)
			w, err := s.Cache().Watch(rev, everything, false)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			if len(w.Initial()) != 0 {
				t.Fatalf("backlog %v, want none", initialSummary(w))
			}
			if _, err := s.Delete(ctxT(t), "ns", "a", nil); err != nil {
				t.Fatal(err)
			}
			if got := summary(next(t, w)); got != "DELETED a" {
				t.Fatalf("got %s, want DELETED a", got)
			}
		}},
		{"events carry the resourceVersion of their revision", func(t *testing.T, s *podStore) {
			start := s.create(t, makePod("a").Obj())
			s.waitSeen(t, start)
			w, _ := s.Cache().Watch(start, everything, false)
			defer w.Stop()
			rev := s.relabel(t, "a", "app", "web")
			d := next(t, w)
			if d.Event.Rev != rev || rvOf(t, d.Event.Object) != rev {
				t.Fatalf("event at %d with object rv %d, want %d", d.Event.Rev, rvOf(t, d.Event.Object), rev)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newPodStore(t, nil, 100))
		})
	}

	t.Run("a watch from a version older than the window answers 410", func(t *testing.T) {
		s := newPodStore(t, nil, 3)
		first := s.create(t, makePod("p0").Obj())
		var last int64
		for i := 1; i <= 4; i++ {
			last = s.create(t, makePod(fmt.Sprintf("p%d", i)).Obj())
		}
		s.waitSeen(t, last)
		_, err := s.Cache().Watch(first, everything, false)
		if !apierrors.IsResourceExpired(err) {
			t.Fatalf("err %v, want 410 Expired", err)
		}
		// The newest three events are still there: a watch after p1 is served.
		w, err := s.Cache().Watch(first+1, everything, false)
		if err != nil {
			t.Fatalf("watch inside the window: %v", err)
		}
		defer w.Stop()
		if got := fmt.Sprint(initialSummary(w)); got != "[ADDED p2 ADDED p3 ADDED p4]" {
			t.Fatalf("backlog %s, want the window's three events", got)
		}
	})
}

// TestWatchCacheWindowGrowsToItsSize: the ring starts small and grows
// as events come, keeping their order, until it holds size events; then
// the oldest fall out.
func TestWatchCacheWindowGrowsToItsSize(t *testing.T) {
	const size = 100
	s := newPodStore(t, nil, size)
	revs := make([]int64, 130)
	for i := range revs {
		revs[i] = s.create(t, makePod(fmt.Sprintf("p%d", i)).Obj())
	}
	s.waitSeen(t, revs[len(revs)-1])
	if _, err := s.Cache().Watch(revs[28], everything, false); !apierrors.IsResourceExpired(err) {
		t.Fatalf("watch from p28: err %v, want 410 Expired (p29 fell out of the window)", err)
	}
	w, err := s.Cache().Watch(revs[29], everything, false)
	if err != nil {
		t.Fatalf("watch from p29, the window's edge: %v", err)
	}
	defer w.Stop()
	backlog := initialSummary(w)
	if len(backlog) != size {
		t.Fatalf("backlog of %d events, want the window's %d (p30 to p129)", len(backlog), size)
	}
	for i, ev := range backlog {
		if want := fmt.Sprintf("ADDED p%d", 30+i); ev != want {
			t.Fatalf("backlog[%d] = %s, want %s", i, ev, want)
		}
	}
}

func TestWatchCacheSlowWatcher(t *testing.T) {
	t.Run("a watcher whose buffer fills is closed while a fast one gets every event", func(t *testing.T) {
		const buffer, events = 2, 10
		s := newPodStore(t, nil, 100)
		start := s.Cache().LatestRevision()
		s.cache.bufSize = buffer
		slow, err := s.Cache().Watch(start, everything, false)
		if err != nil {
			t.Fatal(err)
		}
		s.cache.bufSize = 1024
		fast, err := s.Cache().Watch(start, everything, false)
		if err != nil {
			t.Fatal(err)
		}
		defer fast.Stop()
		got := make(chan []string)
		go func() {
			var names []string
			for len(names) < events {
				d, ok := fast.Next(context.Background())
				if !ok {
					break
				}
				names = append(names, summary(d))
			}
			got <- names
		}()
		for i := 0; i < events; i++ {
			s.create(t, makePod(fmt.Sprintf("p%d", i)).Obj())
		}
		select {
		case names := <-got:
			if len(names) != events || names[0] != "ADDED p0" || names[events-1] != fmt.Sprintf("ADDED p%d", events-1) {
				t.Fatalf("fast watcher got %v", names)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the fast watcher was blocked")
		}
		// The slow one holds what fit in its buffer, then its channel ends.
		var queued int
		for _, ok := slow.Next(context.Background()); ok; _, ok = slow.Next(context.Background()) {
			queued++
		}
		if queued != buffer || !slow.Overflowed {
			t.Fatalf("slow watcher: %d queued, overflowed %v; want %d and true", queued, slow.Overflowed, buffer)
		}
	})
	t.Run("stop closes the watcher's channel and nothing more is sent", func(t *testing.T) {
		s := newPodStore(t, nil, 100)
		w, err := s.Cache().Watch(s.Cache().LatestRevision(), everything, false)
		if err != nil {
			t.Fatal(err)
		}
		w.Stop()
		s.create(t, makePod("a").Obj())
		if _, ok := w.Next(context.Background()); ok {
			t.Fatal("delivery after Stop")
		}
		if w.Overflowed {
			t.Fatal("a stopped watcher is marked overflowed")
		}
	})
}

func TestWatchCacheSelectorTransitions(t *testing.T) {
	cases := []struct {
		name string
		// from and to are the app label before and after an update ("" = none).
		from, to string
		want     string // what a watcher of app=web sees of the update; "" = nothing
	}{
		{"an object that starts matching is ADDED", "db", "web", "ADDED a"},
		{"an object that gains the matching label is ADDED", "", "web", "ADDED a"},
		{"an object that stops matching is DELETED", "web", "db", "DELETED a"},
		{"an object that matches before and after is MODIFIED", "web", "web", "MODIFIED a"},
		{"an object that never matches is not seen", "db", "cache", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newPodStore(t, nil, 100)
			p := makePod("a")
			if tc.from != "" {
				p.Label("app", tc.from)
			}
			rev := s.create(t, p.Obj())
			s.waitSeen(t, rev)
			w, err := s.Cache().Watch(rev, labelFilter("web"), false)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			_, _, err = s.GuaranteedUpdate(ctxT(t), "ns", "a", func(cur runtime.Object) (runtime.Object, error) {
				p := cur.(*corev1.Pod)
				p.Labels = map[string]string{"app": tc.to, "updated": "yes"}
				return p, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			// A barrier: events come in revision order, so once z is seen
			// everything about a has been.
			s.create(t, makePod("z").Label("app", "web").Obj())
			var got []string
			for d := next(t, w); ; d = next(t, w) {
				got = append(got, summary(d))
				if summary(d) == "ADDED z" {
					break
				}
			}
			want := []string{"ADDED z"}
			if tc.want != "" {
				want = append([]string{tc.want}, want...)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("saw %v, want %v", got, want)
			}
		})
	}
	t.Run("a modified event carries the object before the change", func(t *testing.T) {
		s := newPodStore(t, nil, 100)
		rev := s.create(t, makePod("a").Label("app", "db").Obj())
		s.waitSeen(t, rev)
		w, _ := s.Cache().Watch(rev, everything, false)
		defer w.Stop()
		s.relabel(t, "a", "app", "web")
		d := next(t, w)
		prev, ok := d.Event.Prev().(*corev1.Pod)
		if !ok || prev.Labels["app"] != "db" || rvOf(t, prev) != rev {
			t.Fatalf("prev %+v, want app=db at %d", prev, rev)
		}
	})
}

func TestEventFieldSetsAreComputedOncePerEvent(t *testing.T) {
	s := newPodStore(t, nil, 100)
	rev := s.create(t, makePod("a").Label("app", "db").Obj())
	s.waitSeen(t, rev)
	w, _ := s.Cache().Watch(rev, everything, false)
	defer w.Stop()
	s.relabel(t, "a", "app", "web")
	d := next(t, w)
	calls := 0
	fn := func(o runtime.Object) fields.Set {
		calls++
		return fields.Set{"app": o.(*corev1.Pod).Labels["app"]}
	}
	for watcher := range 3 { // three selector watchers look at the same event
		cur, prev := d.Event.FieldSets(fn)
		if cur["app"] != "web" || prev["app"] != "db" {
			t.Fatalf("watcher %d: fields %v before %v, want app=web before app=db", watcher, cur, prev)
		}
	}
	if calls != 2 {
		t.Fatalf("field sets computed %d times for 3 watchers, want 2 (the object and the one before it)", calls)
	}
}

func TestWatchCacheBookmarks(t *testing.T) {
	cases := []struct {
		name      string
		bookmarks bool
		write     bool   // whether something happens after the watch starts
		want      string // the deliveries after Bookmark()
	}{
		{"a watcher that allows bookmarks gets the latest revision after the events before it", true, true, "[ADDED a BOOKMARK {rev}]"},
		{"a watcher that does not allow bookmarks gets none", false, true, "[ADDED a]"},
		{"no bookmark is sent when nothing happened since the watch began", true, false, "[]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newPodStore(t, nil, 100)
			w, err := s.Cache().Watch(s.Cache().LatestRevision(), everything, tc.bookmarks)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			var rev int64
			if tc.write {
				rev = s.create(t, makePod("a").Obj())
				s.waitSeen(t, rev)
			}
			s.Cache().Bookmark()
			var got []string
			batch, _ := w.Take(nil)
			for _, d := range batch {
				got = append(got, summary(d))
			}
			want := strings.ReplaceAll(tc.want, "{rev}", strconv.FormatInt(rev, 10))
			if fmt.Sprint(got) != want {
				t.Fatalf("got %v, want %s", got, want)
			}
			nothingQueued(t, w)
		})
	}
}

// An idle watcher holds no buffer: its queue grows only as deliveries
// come, and the batches a reader takes reuse two arrays.
func TestWatcherQueueGrowsOnlyWithDeliveries(t *testing.T) {
	s := newPodStore(t, nil, 100)
	w, err := s.Cache().Watch(s.Cache().LatestRevision(), everything, false)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if cap(w.queue) != 0 {
		t.Fatalf("a new watcher's queue has room for %d deliveries, want none", cap(w.queue))
	}
	rev := s.create(t, makePod("a").Obj())
	s.waitSeen(t, rev)
	first, open := w.Take(nil)
	if len(first) != 1 || !open {
		t.Fatalf("took %d deliveries (open %v), want 1 (open)", len(first), open)
	}
	rev = s.create(t, makePod("b").Obj())
	s.waitSeen(t, rev)
	second, _ := w.Take(first)
	third, _ := w.Take(second)
	if len(second) != 1 || len(third) != 0 || &first[:1][0] != &third[:1][0] {
		t.Fatalf("batches %d, %d: the third batch does not reuse the first's array", len(second), len(third))
	}
}
