package informer

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/client"
)

func noJitter() float64 { return 0 }

// start runs inf until the test ends, and checks that Run then returns.
func start(t *testing.T, inf *Informer[corev1.Pod]) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after its context was cancelled")
		}
	})
}

func newPodInformer(t *testing.T, c *client.Client, cfg Config) (*Informer[corev1.Pod], *recorder) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	inf := New(c.Pods(), cfg)
	rec := newRecorder()
	inf.AddHandler(rec.handler())
	return inf, rec
}

func waitSynced(t *testing.T, inf *Informer[corev1.Pod]) {
	t.Helper()
	select {
	case <-inf.Synced():
	case <-time.After(5 * time.Second):
		t.Fatal("informer did not sync")
	}
}

func sortedKeys(s *Store[corev1.Pod]) []string {
	keys := s.Keys()
	slices.Sort(keys)
	return keys
}

// cacheModes runs a test with the informer keeping objects, and keeping
// only keys (Config.KeysOnly): handlers must see the same calls.
func cacheModes(t *testing.T, test func(t *testing.T, keysOnly bool)) {
	t.Run("objects cached", func(t *testing.T) { test(t, false) })
	t.Run("keys only", func(t *testing.T) { test(t, true) })
}

func TestEventsReachHandlersInOrder(t *testing.T) { cacheModes(t, eventsReachHandlersInOrder) }

func eventsReachHandlersInOrder(t *testing.T, keysOnly bool) {
	f, c := newFakeAPI(t)
	clock := newFakeClock(0)
	inf, rec := newPodInformer(t, c, Config{LabelSelector: "app=web", FieldSelector: "spec.nodeName=n1", Clock: clock, KeysOnly: keysOnly})
	f.lists <- listPage{rv: "10", pods: []*corev1.Pod{makePod("a").RV("10").Obj()}}
	f.watches <- watchScript{frames: []string{
		added(makePod("b").RV("11").Obj()),
		modified(makePod("a").RV("12").Obj()),
		added(makePod("a").RV("13").Obj()), // a replayed ADDED for a known object
		deleted(makePod("b").RV("14").Obj()),
		bookmark("15"),
	}, end: endHold}
	if inf.HasSynced() {
		t.Fatal("HasSynced before Run")
	}
	start(t, inf)

	rec.expect(t, "add default/a@10")
	waitSynced(t, inf)
	list := next(t, f.listReqs, "list request")
	if list.Get("labelSelector") != "app=web" || list.Get("fieldSelector") != "spec.nodeName=n1" {
		t.Errorf("list query %v lacks the selectors", list)
	}
	w := next(t, f.watchReqs, "watch request")
	if w.Get("resourceVersion") != "10" || w.Get("allowWatchBookmarks") != "true" || w.Get("labelSelector") != "app=web" {
		t.Errorf("watch query %v, want resourceVersion=10 with bookmarks and the selectors", w)
	}
	rec.expect(t, "add default/b@11", "update default/a@10->12", "update default/a@12->13", "delete default/b@14")
	if got := sortedKeys(inf.Store()); !slices.Equal(got, []string{"default/a"}) {
		t.Errorf("store keys %v, want [default/a]", got)
	}
	a, found := inf.Store().Get("default", "a")
	switch {
	case keysOnly && (found || len(inf.Store().List()) != 0):
		t.Errorf("a keys-only cache holds objects: %v", inf.Store().List())
	case !keysOnly && a.ResourceVersion != "13":
		t.Errorf("cached a has resourceVersion %s, want 13", a.ResourceVersion)
	}
}

func TestGoneCausesARelistThatReconcilesTheCache(t *testing.T) {
	tests := []struct {
		name  string
		watch watchScript
	}{
		{name: "the watch request is refused with 410", watch: watchScript{status: 410}},
		{name: "the stream carries an ERROR event with code 410", watch: watchScript{frames: []string{errorEvent(410, metav1.StatusReasonExpired)}, end: endHold}},
		{name: "the stream carries an ERROR event with reason Gone", watch: watchScript{frames: []string{errorEvent(410, metav1.StatusReasonGone)}, end: endHold}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cacheModes(t, func(t *testing.T, keysOnly bool) {
				f, c := newFakeAPI(t)
				clock := newFakeClock(0)
				inf, rec := newPodInformer(t, c, Config{Clock: clock, KeysOnly: keysOnly})
				f.lists <- listPage{rv: "10", pods: []*corev1.Pod{makePod("a").RV("10").Obj(), makePod("b").RV("10").Obj(), makePod("c").RV("10").Obj()}}
				f.watches <- tt.watch
				// The new list: a unchanged, b gone, c changed, d new.
				f.lists <- listPage{rv: "20", pods: []*corev1.Pod{makePod("a").RV("10").Obj(), makePod("c").RV("15").Obj(), makePod("d").RV("20").Obj()}}
				f.watches <- watchScript{end: endHold}
				start(t, inf)

				rec.expect(t, "add default/a@10", "add default/b@10", "add default/c@10",
					"update default/c@10->15", "add default/d@20", "delete default/b@10")
				next(t, f.listReqs, "first list")
				next(t, f.listReqs, "second list")
				if w := next(t, f.watchReqs, "first watch"); w.Get("resourceVersion") != "10" {
					t.Errorf("first watch from %q, want 10", w.Get("resourceVersion"))
				}
				if w := next(t, f.watchReqs, "watch after the relist"); w.Get("resourceVersion") != "20" {
					t.Errorf("watch after the relist from %q, want 20", w.Get("resourceVersion"))
				}
				if got := sortedKeys(inf.Store()); !slices.Equal(got, []string{"default/a", "default/c", "default/d"}) {
					t.Errorf("store keys %v, want a, c and d", got)
				}
				if got := inf.LastResourceVersion(); got != "20" {
					t.Errorf("LastResourceVersion %q, want 20", got)
				}
				if waits := clock.drainWaits(); len(waits) != 0 {
					t.Errorf("relist waited %v; 410 must relist at once", waits)
				}
				rec.expectNone(t)
			})
		})
	}
}

func TestAnEndedStreamResumesFromTheLastResourceVersion(t *testing.T) {
	tests := []struct {
		name      string
		frames    []string
		end       end
		advance   time.Duration // how long the stream stays open
		wantCalls []string
		wantRV    string
		wantWaits int
	}{
		{
			name: "a reset stream resumes after the last event, after a backoff", frames: []string{modified(makePod("a").RV("11").Obj())},
			end: endDrop, wantCalls: []string{"update default/a@10->11"}, wantRV: "11", wantWaits: 1,
		},
		{
			name: "a reset stream resumes after the last bookmark", frames: []string{modified(makePod("a").RV("11").Obj()), bookmark("15")},
			end: endDrop, wantCalls: []string{"update default/a@10->11"}, wantRV: "15", wantWaits: 1,
		},
		{
			name: "a stream the server closes resumes at once", frames: []string{modified(makePod("a").RV("11").Obj())},
			end: endClose, wantCalls: []string{"update default/a@10->11"}, wantRV: "11", wantWaits: 0,
		},
		{
			name: "a quiet stream the server closes after a while resumes at once", end: endClose, advance: time.Minute,
			wantRV: "10", wantWaits: 0,
		},
		{
			name: "a stream closed at once without events counts as a failure", end: endClose,
			wantRV: "10", wantWaits: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := newFakeAPI(t)
			clock := newFakeClock(0)
			inf, rec := newPodInformer(t, c, Config{Clock: clock, Backoff: Backoff{Initial: time.Second, Rand: noJitter}})
			f.lists <- listPage{rv: "10", pods: []*corev1.Pod{makePod("a").RV("10").Obj()}}
			f.watches <- watchScript{frames: tt.frames, end: tt.end, onEnd: func() { clock.advance(tt.advance) }}
			f.watches <- watchScript{end: endHold}
			start(t, inf)

			rec.expect(t, "add default/a@10")
			rec.expect(t, tt.wantCalls...)
			next(t, f.watchReqs, "first watch")
			if w := next(t, f.watchReqs, "second watch"); w.Get("resourceVersion") != tt.wantRV {
				t.Errorf("reconnected from resourceVersion %q, want %q", w.Get("resourceVersion"), tt.wantRV)
			}
			next(t, f.listReqs, "list")
			if n := len(f.listReqs); n != 0 {
				t.Errorf("%d more list requests; a reconnect must not relist", n)
			}
			if waits := clock.drainWaits(); len(waits) != tt.wantWaits {
				t.Errorf("waited %v before reconnecting, want %d waits", waits, tt.wantWaits)
			}
			rec.expectNone(t)
		})
	}
}

func TestRepeatedFailuresBackOffExponentiallyUpToTheCap(t *testing.T) {
	f, c := newFakeAPI(t)
	clock := newFakeClock(0)
	inf, rec := newPodInformer(t, c, Config{Clock: clock,
		Backoff: Backoff{Initial: 100 * time.Millisecond, Max: 400 * time.Millisecond, Rand: noJitter}})
	f.lists <- listPage{status: 500}
	f.lists <- listPage{rv: "10", pods: []*corev1.Pod{makePod("a").RV("10").Obj()}}
	for range 4 {
		f.watches <- watchScript{status: 500}
	}
	// A stream that delivers something proves the server healthy again.
	f.watches <- watchScript{frames: []string{modified(makePod("a").RV("11").Obj())}, end: endDrop}
	f.watches <- watchScript{status: 500}
	f.watches <- watchScript{end: endHold}
	start(t, inf)

	for i := range 7 {
		next(t, f.watchReqs, "watch request "+string(rune('1'+i)))
	}
	ms := time.Millisecond
	want := []time.Duration{100 * ms, 100 * ms, 200 * ms, 400 * ms, 400 * ms, 100 * ms, 200 * ms}
	if got := clock.drainWaits(); !slices.Equal(got, want) {
		t.Errorf("waits %v, want %v (list failure, 4 watch failures, then reset by a healthy stream)", got, want)
	}
	rec.expect(t, "add default/a@10", "update default/a@10->11")
}

func TestResyncRedeliversEveryCachedObject(t *testing.T) {
	f, c := newFakeAPI(t)
	clock := newFakeClock(time.Minute)
	inf, rec := newPodInformer(t, c, Config{Clock: clock, ResyncPeriod: time.Minute})
	f.lists <- listPage{rv: "10", pods: []*corev1.Pod{makePod("a").RV("10").Obj(), makePod("b").RV("10").Obj()}}
	f.watches <- watchScript{end: endHold}
	start(t, inf)
	rec.expect(t, "add default/a@10", "add default/b@10")

	for round := range 2 {
		select {
		case clock.tick <- time.Now():
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: the informer is not waiting for a resync", round)
		}
		got := []string{next(t, rec.calls, "resync"), next(t, rec.calls, "resync")}
		slices.Sort(got)
		if want := []string{"resync default/a@10", "resync default/b@10"}; !slices.Equal(got, want) {
			t.Errorf("round %d: %v, want %v", round, got, want)
		}
	}
}

func TestSyncedClosesOnlyAfterHandlersGotTheFirstList(t *testing.T) {
	f, c := newFakeAPI(t)
	inf := New(c.Pods(), Config{Clock: newFakeClock(0), Logger: slog.New(slog.DiscardHandler)})
	inAdd, release := make(chan string), make(chan struct{})
	inf.AddHandler(Handler[corev1.Pod]{OnAdd: func(p *corev1.Pod) {
		inAdd <- p.Name
		<-release
	}})
	f.lists <- listPage{rv: "10", pods: []*corev1.Pod{makePod("a").RV("10").Obj(), makePod("b").RV("10").Obj()}}
	f.watches <- watchScript{end: endHold}
	start(t, inf)

	if got := next(t, inAdd, "first OnAdd"); got != "a" {
		t.Errorf("first OnAdd for %s, want a", got)
	}
	if inf.HasSynced() {
		t.Error("HasSynced while a handler is still on the first list")
	}
	release <- struct{}{}
	if got := next(t, inAdd, "second OnAdd"); got != "b" {
		t.Errorf("second OnAdd for %s, want b", got)
	}
	if inf.HasSynced() {
		t.Error("HasSynced before the last object of the first list was handled")
	}
	release <- struct{}{}
	waitSynced(t, inf)
}

func TestListFollowsContinueTokens(t *testing.T) {
	f, c := newFakeAPI(t)
	inf, rec := newPodInformer(t, c, Config{Clock: newFakeClock(0), PageSize: 1})
	f.lists <- listPage{rv: "10", cont: "page2", pods: []*corev1.Pod{makePod("a").RV("9").Obj()}}
	f.lists <- listPage{rv: "10", pods: []*corev1.Pod{makePod("b").RV("10").Obj()}}
	f.watches <- watchScript{end: endHold}
	start(t, inf)

	rec.expect(t, "add default/a@9", "add default/b@10")
	waitSynced(t, inf)
	if q := next(t, f.listReqs, "first page"); q.Get("limit") != "1" || q.Get("continue") != "" {
		t.Errorf("first page query %v", q)
	}
	if q := next(t, f.listReqs, "second page"); q.Get("limit") != "1" || q.Get("continue") != "page2" {
		t.Errorf("second page query %v", q)
	}
	if w := next(t, f.watchReqs, "watch"); w.Get("resourceVersion") != "10" {
		t.Errorf("watch from %q, want 10", w.Get("resourceVersion"))
	}
}

func TestIndexesFollowTheEvents(t *testing.T) {
	f, c := newFakeAPI(t)
	inf, rec := newPodInformer(t, c, Config{Clock: newFakeClock(0)})
	if err := inf.AddIndex("app", func(p *corev1.Pod) []string { return []string{p.Labels["app"]} }); err != nil {
		t.Fatal(err)
	}
	if err := inf.AddIndex(NamespaceIndex, func(*corev1.Pod) []string { return nil }); err == nil {
		t.Error("AddIndex accepted a taken name")
	}
	f.lists <- listPage{rv: "10", pods: []*corev1.Pod{
		makePod("a").RV("10").Label("app", "web").Obj(),
		makePod("b").RV("10").NS("other").Node("n1").Label("app", "db").Obj(),
	}}
	f.watches <- watchScript{frames: []string{
		modified(makePod("a").RV("11").Node("n1").Label("app", "web").Obj()), // scheduled
		deleted(makePod("b").RV("12").NS("other").Node("n1").Obj()),
	}, end: endHold}
	start(t, inf)
	rec.expect(t, "add default/a@10", "add other/b@10", "update default/a@10->11", "delete other/b@12")

	names := func(pods []*corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, KeyOf(p))
		}
		slices.Sort(out)
		return out
	}
	s := inf.Store()
	tests := []struct {
		index, value string
		want         []string
	}{
		{NodeNameIndex, "n1", []string{"default/a"}},
		{NodeNameIndex, "", nil},
		{NamespaceIndex, "default", []string{"default/a"}},
		{NamespaceIndex, "other", nil},
		{"app", "web", []string{"default/a"}},
		{"app", "db", nil},
		{"no-such-index", "x", nil},
	}
	for _, tt := range tests {
		if got := names(s.ByIndex(tt.index, tt.value)); !slices.Equal(got, tt.want) {
			t.Errorf("ByIndex(%q, %q) = %v, want %v", tt.index, tt.value, got, tt.want)
		}
	}
}

func TestRunTwiceIsAnError(t *testing.T) {
	f, c := newFakeAPI(t)
	inf, rec := newPodInformer(t, c, Config{Clock: newFakeClock(0)})
	f.lists <- listPage{rv: "10"}
	f.watches <- watchScript{end: endHold}
	start(t, inf)
	waitSynced(t, inf)
	if err := inf.Run(t.Context()); err == nil {
		t.Error("second Run returned nil")
	}
	rec.expectNone(t)
}
