package queue

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	testingclock "k8s.io/utils/clock/testing"

	"minik/scheduler/internal/st"
)

// newFakeClock is a clock that moves only when a test steps it.
func newFakeClock() *testingclock.FakeClock {
	return testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

func pop(t *testing.T, q *Queue) *QueuedPodInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	p, err := q.Pop(ctx)
	if err != nil {
		t.Fatalf("pop: %v", err)
	}
	return p
}

func TestActiveQueueOrder(t *testing.T) {
	cases := []struct {
		name string
		add  []*corev1.Pod // in this order, one clock second apart
		want []string
	}{
		{"higher priority comes first",
			[]*corev1.Pod{st.MakePod().Name("low").Priority(1).Obj(), st.MakePod().Name("high").Priority(100).Obj()}, []string{"high", "low"}},
		{"with equal priority the older pod comes first",
			[]*corev1.Pod{st.MakePod().Name("first").Obj(), st.MakePod().Name("second").Obj(), st.MakePod().Name("third").Obj()},
			[]string{"first", "second", "third"}},
		{"priority beats age",
			[]*corev1.Pod{st.MakePod().Name("old").Obj(), st.MakePod().Name("young-important").Priority(5).Obj(), st.MakePod().Name("middle").Obj()},
			[]string{"young-important", "old", "middle"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			q := New(Config{Clock: clock})
			for _, p := range tc.add {
				q.Add(p)
				clock.Step(time.Second)
			}
			var got []string
			for range tc.add {
				got = append(got, pop(t, q).Pod.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBackoffDoublesFromOneSecondToTen(t *testing.T) {
	q := New(Config{Clock: newFakeClock()})
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for attempts, w := range want {
		if got := q.BackoffDuration(&QueuedPodInfo{Attempts: attempts + 1}); got != w {
			t.Errorf("after failure %d: got %v, want %v", attempts+1, got, w)
		}
	}
}

func TestFailedPodWaitsForItsBackoff(t *testing.T) {
	// A backoff ends when the whole second its expiry falls in is over.
	cases := []struct {
		name     string
		failures int           // scheduling failures before the last
		offset   time.Duration // into its second when the pod last fails
		wait     time.Duration // clock step after the last failure
		ready    bool
	}{
		{"after a first failure at a second's start the pod waits out the next second", 0, 0, 1999 * time.Millisecond, false},
		{"after a first failure at a second's start the pod is ready at 2s", 0, 0, 2 * time.Second, true},
		{"after a first failure mid-second the pod waits for the second after next", 0, 500 * time.Millisecond, 1499 * time.Millisecond, false},
		{"after a first failure mid-second the pod is ready 1.5s later", 0, 500 * time.Millisecond, 1500 * time.Millisecond, true},
		{"after a third failure the pod waits 4s and the rest of that second", 2, 0, 4999 * time.Millisecond, false},
		{"after a third failure the pod is ready at 5s", 2, 0, 5 * time.Second, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			q := New(Config{Clock: clock})
			q.Add(st.MakePod().Obj())
			for range tc.failures {
				p := pop(t, q)
				q.AddUnschedulable(p, q.SchedulingCycle(), false) // an error: straight to backoff
				clock.Step(time.Minute)
				q.FlushBackoffCompleted()
			}
			// The last failure, then the wait.
			p := pop(t, q)
			clock.Step(tc.offset)
			q.AddUnschedulable(p, q.SchedulingCycle(), false)
			clock.Step(tc.wait)
			q.FlushBackoffCompleted()
			if active, _, _ := q.Len(); (active == 1) != tc.ready {
				t.Fatalf("active=%d, want ready=%v", active, tc.ready)
			}
		})
	}
}

func TestUnschedulablePodsWaitForAnEvent(t *testing.T) {
	cases := []struct {
		name       string
		rejectedBy string
		event      Event
		plugins    []string
		wait       time.Duration
		wantActive bool
	}{
		{"without an event the pod stays unschedulable", "NodeResourcesFit", "", nil, 30 * time.Second, false},
		{"a node event moves it back once its backoff is over", "NodeResourcesFit", NodeAdd, nil, 2 * time.Second, true},
		{"an event during its backoff leaves it in backoff", "NodeResourcesFit", NodeAdd, nil, 500 * time.Millisecond, false},
		{"a pod event that helps only pod affinity leaves a pod waiting for cpu", "NodeResourcesFit", AssignedPodAdd,
			[]string{"InterPodAffinity", "PodTopologySpread"}, 2 * time.Second, false},
		{"a pod event moves a pod rejected by pod affinity", "InterPodAffinity", AssignedPodAdd,
			[]string{"InterPodAffinity", "PodTopologySpread"}, 2 * time.Second, true},
		{"after 60s without event it is retried anyway", "NodeResourcesFit", "", nil, 61 * time.Second, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			q := New(Config{Clock: clock})
			q.Add(st.MakePod().Obj())
			p := pop(t, q)
			p.UnschedulablePlugins = sets.New(tc.rejectedBy)
			q.AddUnschedulable(p, q.SchedulingCycle(), true)
			if _, _, u := q.Len(); u != 1 {
				t.Fatalf("pod not parked as unschedulable")
			}
			clock.Step(tc.wait)
			if tc.event != "" {
				q.MoveAllToActiveOrBackoff(tc.event, tc.plugins...)
			}
			q.FlushBackoffCompleted()
			q.FlushUnschedulableLeftover()
			q.FlushBackoffCompleted()
			if active, _, _ := q.Len(); (active == 1) != tc.wantActive {
				t.Fatalf("active=%d, want %v", active, tc.wantActive)
			}
		})
	}
}

func TestEventDuringTheCycleSendsTheFailedPodToBackoff(t *testing.T) {
	clock := newFakeClock()
	q := New(Config{Clock: clock})
	q.Add(st.MakePod().Obj())
	p := pop(t, q)
	cycle := q.SchedulingCycle()
	q.MoveAllToActiveOrBackoff(NodeAdd) // a node arrived while the pod was being scheduled
	q.AddUnschedulable(p, cycle, true)
	if _, backoff, u := q.Len(); backoff != 1 || u != 0 {
		t.Fatalf("backoff=%d unschedulable=%d: the pod must not wait for an event that already happened", backoff, u)
	}
}

// An event during the cycle that would not have moved the pod (a bind,
// which helps only pod affinity, for a pod that lacked cpu) leaves it to
// wait for the next event, as kube-scheduler's queueing hints do; one that
// would have moved it sends it to backoffQ.
func TestOnlyARelevantEventDuringTheCycleSendsTheFailedPodToBackoff(t *testing.T) {
	cases := []struct {
		name        string
		rejectedBy  []string
		plugins     []string
		wantBackoff bool
	}{
		{"a bind does not help a pod that lacked cpu", []string{"NodeResourcesFit"}, []string{"InterPodAffinity", "PodTopologySpread"}, false},
		{"a bind may help a pod rejected by pod affinity", []string{"InterPodAffinity"}, []string{"InterPodAffinity", "PodTopologySpread"}, true},
		{"a bind may help a pod rejected by several plugins, one of them pod affinity", []string{"NodeResourcesFit", "PodTopologySpread"}, []string{"InterPodAffinity", "PodTopologySpread"}, true},
		{"any event may help a pod no plugin is known to have rejected", nil, []string{"InterPodAffinity"}, true},
		{"a deletion may help any pod", []string{"NodeResourcesFit"}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := New(Config{Clock: newFakeClock()})
			q.Add(st.MakePod().Obj())
			p := pop(t, q)
			cycle := q.SchedulingCycle()
			q.MoveAllToActiveOrBackoff(AssignedPodAdd, tc.plugins...)
			p.UnschedulablePlugins = sets.New(tc.rejectedBy...)
			q.AddUnschedulable(p, cycle, true)
			if _, backoff, _ := q.Len(); (backoff == 1) != tc.wantBackoff {
				t.Fatalf("backoff=%d, want the pod in backoffQ: %v", backoff, tc.wantBackoff)
			}
		})
	}
}

func TestUpdateOfSpecRequeuesButStatusUpdateDoesNot(t *testing.T) {
	cases := []struct {
		name   string
		change func(p *corev1.Pod)
		moved  bool
	}{
		{"a status-only update (the scheduler's own condition) leaves it waiting", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse}}
		}, false},
		{"a new toleration gives it another try", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}, true},
		{"a label change gives it another try", func(p *corev1.Pod) { p.Labels = map[string]string{"x": "y"} }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			q := New(Config{Clock: clock})
			old := st.MakePod().Obj()
			q.Add(old)
			p := pop(t, q)
			q.AddUnschedulable(p, q.SchedulingCycle(), true)
			clock.Step(time.Minute)
			updated := old.DeepCopy()
			tc.change(updated)
			updated.ResourceVersion = "2"
			q.Update(old, updated)
			if active, _, _ := q.Len(); (active == 1) != tc.moved {
				t.Fatalf("active=%d, want moved=%v", active, tc.moved)
			}
		})
	}
}

func TestRunMovesBackedOffPodsOnTheFakeClock(t *testing.T) {
	clock := newFakeClock()
	q := New(Config{Clock: clock})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q.Add(st.MakePod().Obj())
	p := pop(t, q)
	q.AddUnschedulable(p, q.SchedulingCycle(), false)
	go q.Run(ctx)
	deadline := time.Now().Add(5 * time.Second)
	for {
		clock.Step(100 * time.Millisecond)
		if active, _, _ := q.Len(); active == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run never moved the pod out of backoff")
		}
		time.Sleep(time.Millisecond)
	}
	if got := pop(t, q); got.Attempts != 2 {
		t.Fatalf("attempts %d, want 2", got.Attempts)
	}
}

func TestDeleteRemovesThePodEverywhere(t *testing.T) {
	q := New(Config{Clock: newFakeClock()})
	a, b := st.MakePod().Name("a").Obj(), st.MakePod().Name("b").Obj()
	q.Add(a)
	q.Add(b)
	p := pop(t, q)
	q.AddUnschedulable(p, q.SchedulingCycle(), true)
	q.Delete(a)
	q.Delete(b)
	if act, back, u := q.Len(); act+back+u != 0 {
		t.Fatalf("left: %d %d %d", act, back, u)
	}
}

// A preemptor held while its victims are being deleted waits whatever
// happens (an event, even one during its cycle, or a spec change) until it
// is released; then the next event moves it, or at once if retried.
func TestAHeldPodWaitsUntilReleased(t *testing.T) {
	clock := newFakeClock()
	q := New(Config{Clock: clock})
	old := st.MakePod().Obj()
	q.Add(old)
	p := pop(t, q)
	cycle := q.SchedulingCycle()
	q.Hold(p.Pod)
	q.MoveAllToActiveOrBackoff(AssignedPodDelete) // another preemptor's victim went during the cycle
	q.AddUnschedulable(p, cycle, true)
	clock.Step(2 * time.Second)
	q.MoveAllToActiveOrBackoff(AssignedPodDelete)
	updated := old.DeepCopy()
	updated.Labels = map[string]string{"x": "y"}
	q.Update(old, updated)
	q.FlushBackoffCompleted()
	if active, backoff, u := q.Len(); active != 0 || backoff != 0 || u != 1 {
		t.Fatalf("active=%d backoff=%d unschedulable=%d: a held pod must keep waiting", active, backoff, u)
	}
	q.Release(updated, false)
	if _, _, u := q.Len(); u != 1 {
		t.Fatal("a released pod should wait for the next event")
	}
	q.MoveAllToActiveOrBackoff(AssignedPodDelete) // its victim is gone
	if active, _, _ := q.Len(); active != 1 {
		t.Fatal("the event after its release should move it")
	}
	if got := pop(t, q); got.Pod.Labels["x"] != "y" {
		t.Fatal("the held pod missed its update")
	}

	// Released to retry (its preemption's calls failed), it goes at once.
	q.Add(old)
	p = pop(t, q)
	q.Hold(p.Pod)
	q.AddUnschedulable(p, q.SchedulingCycle(), true)
	clock.Step(2 * time.Second)
	q.Release(p.Pod, true)
	if active, _, _ := q.Len(); active != 1 {
		t.Fatal("a pod released to retry should be active")
	}
	pop(t, q)

	// Released before it is put back, it is put back as any other pod.
	q.Add(old)
	p = pop(t, q)
	q.Hold(p.Pod)
	q.Release(p.Pod, false)
	q.MoveAllToActiveOrBackoff(NodeAdd)
	q.AddUnschedulable(p, q.SchedulingCycle()-1, true)
	if _, backoff, _ := q.Len(); backoff != 1 {
		t.Fatal("a pod released before its failure was put back should not be held")
	}
}

// When activeQ is empty, Pop takes a pod rejected by plugins from backoffQ
// at once rather than idle (kube-scheduler's SchedulerPopFromBackoffQ);
// within one backoff window, in activeQ's order. A pod that failed with an
// error waits its whole backoff, and activeQ always comes first.
func TestAnIdlePopTakesRejectedPodsFromBackoff(t *testing.T) {
	clock := newFakeClock()
	q := New(Config{Clock: clock})
	fail := func(pod *corev1.Pod, rejectedBy ...string) {
		t.Helper()
		q.Add(pod)
		p := pop(t, q)
		p.UnschedulablePlugins = sets.New(rejectedBy...)
		q.MoveAllToActiveOrBackoff(NodeAdd) // an event during the cycle: to backoff, not unschedulable
		q.AddUnschedulable(p, q.SchedulingCycle(), true)
	}
	fail(st.MakePod().Name("error").Obj())
	fail(st.MakePod().Name("low").Priority(1).Obj(), "NodeResourcesFit")
	fail(st.MakePod().Name("high").Priority(100).Obj(), "NodeResourcesFit")
	if _, backoff, _ := q.Len(); backoff != 3 {
		t.Fatalf("backoff=%d, want 3", backoff)
	}
	q.Add(st.MakePod().Name("new").Obj())
	var got []string
	for range 3 {
		got = append(got, pop(t, q).Pod.Name)
	}
	if want := []string{"new", "high", "low"}; !slices.Equal(got, want) {
		t.Fatalf("popped %v, want %v", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if p, err := q.Pop(ctx); err == nil {
		t.Fatalf("popped %s, which failed with an error, before its backoff", p.Pod.Name)
	}
	clock.Step(2 * time.Second)
	q.FlushBackoffCompleted()
	if p := pop(t, q); p.Pod.Name != "error" || p.Attempts != 2 {
		t.Fatalf("popped %s (attempts %d), want error's second attempt", p.Pod.Name, p.Attempts)
	}
}

func TestAWaitingPopWakesForABackedOffPod(t *testing.T) {
	q := New(Config{Clock: newFakeClock()})
	q.Add(st.MakePod().Obj())
	p := pop(t, q)
	popped := make(chan *QueuedPodInfo, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	go func() {
		p, _ := q.Pop(ctx)
		popped <- p
	}()
	time.Sleep(10 * time.Millisecond) // let it block
	p.UnschedulablePlugins = sets.New("NodeResourcesFit")
	q.AddUnschedulable(p, q.SchedulingCycle(), false)
	select {
	case got := <-popped:
		if got == nil || got.Attempts != 2 {
			t.Fatalf("popped %v, want the pod's second attempt: Pop did not wake for the pod put in backoffQ", got)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Pop never returned")
	}
}
