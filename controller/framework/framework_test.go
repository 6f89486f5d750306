package framework

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"minik/controller/internal/testutil"
)

func get(t *testing.T, q *Queue) string {
	t.Helper()
	done := make(chan string, 1)
	go func() { k, _ := q.Get(); done <- k }()
	select {
	case k := <-done:
		return k
	case <-time.After(2 * time.Second):
		t.Fatal("Get blocked")
		return ""
	}
}

func TestQueue(t *testing.T) {
	t.Run("a key added twice while waiting is handed out once", func(t *testing.T) {
		q := NewQueue(QueueConfig{})
		q.Add("a")
		q.Add("a")
		q.Add("b")
		if q.Len() != 2 {
			t.Fatalf("len %d, want 2", q.Len())
		}
		if k := get(t, q); k != "a" {
			t.Fatalf("got %q", k)
		}
	})
	t.Run("a key added while processed comes back after Done, never to two workers", func(t *testing.T) {
		q := NewQueue(QueueConfig{})
		q.Add("a")
		k := get(t, q)
		q.Add(k)
		if q.Len() != 0 {
			t.Fatal("key handed out again while still processing")
		}
		q.Done(k)
		if q.Len() != 1 || get(t, q) != "a" {
			t.Fatal("key not requeued after Done")
		}
	})
	t.Run("AddAfter waits for the fake clock", func(t *testing.T) {
		clk := clocktesting.NewFakeClock(testutil.T0)
		q := NewQueue(QueueConfig{Clock: clk})
		q.AddAfter("a", 10*time.Second)
		clk.Step(9 * time.Second)
		time.Sleep(20 * time.Millisecond)
		if q.Len() != 0 {
			t.Fatal("due too early")
		}
		clk.Step(time.Second)
		deadline := time.Now().Add(2 * time.Second)
		for q.Len() == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if q.Len() != 1 {
			t.Fatal("not due after 10s")
		}
	})
	t.Run("failures back off exponentially until Forget", func(t *testing.T) {
		clk := clocktesting.NewFakeClock(testutil.T0)
		q := NewQueue(QueueConfig{Clock: clk, BaseDelay: time.Second, MaxDelay: 4 * time.Second})
		for range 5 {
			q.AddRateLimited("a")
		}
		if n := q.NumRequeues("a"); n != 5 {
			t.Fatalf("requeues %d", n)
		}
		q.mu.Lock()
		due := q.waiting["a"]
		q.mu.Unlock()
		if got := due.Sub(testutil.T0); got != time.Second {
			t.Fatalf("earliest retry after %v, want 1s (the first failure's)", got)
		}
		q.Forget("a")
		if q.NumRequeues("a") != 0 {
			t.Fatal("Forget kept the count")
		}
	})
	t.Run("RunWorkers retries a sync that asks for Backoff without reporting it, and Forgets on success", func(t *testing.T) {
		clk := clocktesting.NewFakeClock(testutil.T0)
		q := NewQueue(QueueConfig{Clock: clk, BaseDelay: time.Second, MaxDelay: time.Minute})
		ctx, cancel := context.WithCancel(context.Background())
		synced := make(chan int, 10)
		calls := 0
		sync := func(context.Context, string) (Result, error) {
			calls++
			synced <- calls
			return Result{Backoff: calls < 3}, nil
		}
		done := make(chan struct{})
		go func() {
			RunWorkers(ctx, q, 1, sync, func(key string, err error) { t.Errorf("reported %s: %v", key, err) })
			close(done)
		}()
		waitFor := func(what string, cond func() bool) {
			t.Helper()
			for deadline := time.Now().Add(2 * time.Second); !cond(); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal(what)
				}
			}
		}
		waiting := func() bool {
			q.mu.Lock()
			defer q.mu.Unlock()
			_, ok := q.waiting["a"]
			return ok
		}
		q.Add("a")
		for i, step := range []time.Duration{0, time.Second, 2 * time.Second} {
			if step > 0 {
				waitFor("the key did not wait for its backoff", waiting)
				clk.Step(step - time.Millisecond)
				if len(synced) != 0 {
					t.Fatalf("synced again before the %v backoff", step)
				}
				clk.Step(time.Millisecond)
			}
			if got := <-synced; got != i+1 {
				t.Fatalf("sync %d, want %d", got, i+1)
			}
		}
		waitFor("the count of the key's retries was not reset", func() bool { return q.NumRequeues("a") == 0 })
		cancel()
		<-done
	})
	t.Run("ShutDown wakes Get with false", func(t *testing.T) {
		q := NewQueue(QueueConfig{})
		go q.ShutDown()
		if _, ok := q.Get(); ok {
			t.Fatal("Get returned a key after ShutDown")
		}
	})
}

func TestExpectations(t *testing.T) {
	clk := clocktesting.NewFakeClock(testutil.T0)
	cases := []struct {
		name string
		run  func(e *Expectations)
		want bool
	}{
		{"nothing expected is satisfied", func(e *Expectations) {}, true},
		{"pending creations are not satisfied", func(e *Expectations) { e.Expect("k", 2, nil); e.CreationObserved("k") }, false},
		{"all creations observed is satisfied", func(e *Expectations) {
			e.Expect("k", 2, nil)
			e.CreationObserved("k")
			e.CreationObserved("k")
		}, true},
		{"a deletion is satisfied only by its own uid", func(e *Expectations) {
			e.Expect("k", 0, []types.UID{"a", "b"})
			e.DeletionObserved("k", "a")
			e.DeletionObserved("k", "c")
		}, false},
		{"expectations older than the timeout are satisfied", func(e *Expectations) {
			e.Expect("k", 1, nil)
			clk.Step(ExpectationsTimeout + time.Second)
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := NewExpectations(clk)
			tc.run(e)
			if got := e.Satisfied("k"); got != tc.want {
				t.Fatalf("Satisfied = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClaimPods(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "default", UID: "rs-uid"}}
	other := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "other", UID: "other-uid"}}
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	mine := testutil.Pod("mine").Label("app", "web").Owner(rs, "apps/v1", "ReplicaSet").Obj()
	orphan := testutil.Pod("orphan").Label("app", "web").Obj()
	stray := testutil.Pod("stray").Label("app", "db").Owner(rs, "apps/v1", "ReplicaSet").Obj()
	theirs := testutil.Pod("theirs").Label("app", "web").Owner(other, "apps/v1", "ReplicaSet").Obj()
	dying := testutil.Pod("dying").Label("app", "web").Deleting().Obj()
	unrelated := testutil.Pod("unrelated").Label("app", "db").Obj()
	c := ClaimPods(rs, sel, []*corev1.Pod{mine, orphan, stray, theirs, dying, unrelated})
	t.Run("owns its matching pods and adopts matching orphans", func(t *testing.T) {
		if got := testutil.Names(c.Owned); !slices.Equal(got, []string{"mine", "orphan"}) {
			t.Fatalf("owned %v", got)
		}
		if got := testutil.Names(c.Adopt); !slices.Equal(got, []string{"orphan"}) {
			t.Fatalf("adopt %v", got)
		}
	})
	t.Run("releases its pods whose labels stopped matching", func(t *testing.T) {
		if got := testutil.Names(c.Release); !slices.Equal(got, []string{"stray"}) {
			t.Fatalf("release %v", got)
		}
	})
	t.Run("an owner being deleted adopts and releases nothing", func(t *testing.T) {
		d := rs.DeepCopy()
		now := metav1.NewTime(testutil.T0)
		d.DeletionTimestamp = &now
		c := ClaimPods(d, sel, []*corev1.Pod{mine, orphan, stray})
		if len(c.Adopt) != 0 || len(c.Release) != 0 || len(c.Owned) != 1 {
			t.Fatalf("claim %+v", c)
		}
	})
}

func TestDeletionLess(t *testing.T) {
	t0 := testutil.T0
	cases := []struct {
		name         string
		a, b         *corev1.Pod
		rankA, rankB int
	}{
		{"an unscheduled pod goes before a scheduled one", testutil.Pod("a").Obj(), testutil.Pod("b").Node("n").Obj(), 0, 0},
		{"a pending pod goes before a running one", testutil.Pod("a").Node("n").Obj(), testutil.Pod("b").Node("n").Phase(corev1.PodRunning).Obj(), 0, 0},
		{"a not-ready pod goes before a ready one", testutil.Pod("a").Node("n").Phase(corev1.PodRunning).Obj(), testutil.Pod("b").Node("n").Ready(t0).Obj(), 0, 0},
		{"a pod with lower deletion cost goes first", testutil.Pod("a").Node("n").Ready(t0).Obj(),
			func() *corev1.Pod {
				p := testutil.Pod("b").Node("n").Ready(t0).Obj()
				p.Annotations = map[string]string{PodDeletionCostAnnotation: "10"}
				return p
			}(), 0, 0},
		{"a pod on a node with more siblings goes first", testutil.Pod("a").Node("n1").Ready(t0).Obj(), testutil.Pod("b").Node("n2").Ready(t0).Obj(), 3, 1},
		{"a pod ready for less time goes first", testutil.Pod("a").Node("n").Ready(t0.Add(time.Minute)).Obj(), testutil.Pod("b").Node("n").Ready(t0).Obj(), 0, 0},
		{"a pod with more restarts goes first", testutil.Pod("a").Node("n").Ready(t0).Restarts(3).Obj(), testutil.Pod("b").Node("n").Ready(t0).Obj(), 0, 0},
		{"a newer pod goes first", testutil.Pod("a").Node("n").Ready(t0).Created(t0.Add(time.Hour)).Obj(), testutil.Pod("b").Node("n").Ready(t0).Obj(), 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !DeletionLess(tc.a, tc.b, tc.rankA, tc.rankB) {
				t.Fatal("a should go before b")
			}
			if DeletionLess(tc.b, tc.a, tc.rankB, tc.rankA) {
				t.Fatal("b should not go before a")
			}
		})
	}
}

// Re-arming the delay timer (every AddAfter with an earlier time, every
// key that falls due) must not leave the previous timer's goroutine
// behind: a NotReady node re-arms it hundreds of times a minute.
func TestQueueRearmingLeavesNoGoroutines(t *testing.T) {
	q := NewQueue(QueueConfig{})
	defer q.ShutDown()
	before := runtime.NumGoroutine()
	for i := range 2000 {
		// Each key earlier than the last: every add re-arms the timer.
		q.AddAfter(fmt.Sprintf("k%d", i), time.Hour-time.Duration(i)*time.Millisecond)
	}
	// Keys falling due re-arm it too.
	for i := range 50 {
		q.AddAfter(fmt.Sprintf("soon%d", i), time.Millisecond)
		time.Sleep(2 * time.Millisecond)
	}
	var after int
	for range 100 { // goroutines of stopped timers end soon, not at once
		if after = runtime.NumGoroutine(); after <= before+2 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d goroutines before, %d after 2,050 re-arms: the timers' goroutines leak", before, after)
}
