package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	testingclock "k8s.io/utils/clock/testing"

	"minik/scheduler/framework"
	"minik/scheduler/internal/st"
	"minik/scheduler/queue"
)

func TestAPreemptorIsReleasedWhenItsLastVictimIsDeleted(t *testing.T) {
	ps := newPreemptions()
	pod := func(name string) *corev1.Pod { return st.MakePod().Name(name).Obj() }
	a, b := pod("a"), pod("b")
	v1, v2, shared := pod("v1"), pod("v2"), pod("shared")
	present := func(types.UID) bool { return true }
	held := 0
	hold := func() { held++ }
	if ps.start(a, nil, present, hold) || held != 0 {
		t.Fatal("a preemptor with nothing to wait for must not wait")
	}
	ps.start(a, []*corev1.Pod{v1, shared}, present, hold)
	ps.start(b, []*corev1.Pod{shared, v2}, present, hold)
	if held != 2 {
		t.Fatalf("held %d preemptors, want 2", held)
	}
	if got := ps.victimDeleted(v1.UID); got != nil {
		t.Fatalf("released %v with a victim left", got)
	}
	ps.victimTerminating(shared.UID)
	if w := ps.terminatingWaiters(); len(w) != 1 || w[0].pod != a {
		t.Fatalf("waiting on terminating victims only: %v, want a (b's v2 still runs)", w)
	}
	if got := ps.victimDeleted(shared.UID); len(got) != 1 || got[0] != a {
		t.Fatalf("released %v, want a (its last victim went; b waits for v2)", got)
	}
	if got := ps.forget(b.UID); got != b {
		t.Fatal("forget should return the held pod")
	}
	if got := ps.victimDeleted(v2.UID); got != nil || ps.count.Load() != 0 {
		t.Fatalf("a forgotten preemption released %v; %d victims still tracked", got, ps.count.Load())
	}
}

// A victim the informer already saw deleted (it left the cache before the
// preemption was noted: another preemptor was deleting it too) is not
// waited for: no deletion event would come to release the pod.
func TestAVictimAlreadyDeletedIsNotWaitedFor(t *testing.T) {
	ps := newPreemptions()
	preemptor := st.MakePod().Name("p").Obj()
	gone, running := st.MakePod().Name("gone").Obj(), st.MakePod().Name("running").Obj()
	inCache := func(uid types.UID) bool { return uid == running.UID }
	if ps.start(preemptor, []*corev1.Pod{gone}, inCache, func() {}) {
		t.Fatal("held for a victim already deleted")
	}
	ps.start(preemptor, []*corev1.Pod{gone, running}, inCache, func() {})
	if got := ps.victimDeleted(running.UID); len(got) != 1 {
		t.Fatalf("released %v, want the preemptor once the victim still in the cache went", got)
	}
}

// A victim deleted while its preemptor is being held (another preemptor
// is deleting it too) releases the preemptor only once the hold is in
// place: a release before the hold would leave the pod held until the
// queue's 60s flush (the stall seen once in about 40 Preemption runs of
// bench-scheduler).
func TestAVictimDeletedDuringTheHoldReleasesAfterIt(t *testing.T) {
	ps := newPreemptions()
	preemptor, victim := st.MakePod().Name("p").Obj(), st.MakePod().Name("v").Obj()
	released := make(chan []*corev1.Pod)
	ps.start(preemptor, []*corev1.Pod{victim}, func(types.UID) bool { return true }, func() {
		go func() { released <- ps.victimDeleted(victim.UID) }()
		select {
		case got := <-released:
			t.Errorf("the victim released %v before its preemptor was held", got)
		case <-time.After(50 * time.Millisecond):
		}
	})
	if got := <-released; len(got) != 1 || got[0] != preemptor {
		t.Fatalf("released %v, want the preemptor", got)
	}
}

// preemptionScene is a scheduler with a fake clock and pending pods, whose
// fail pops the next one, schedules it, runs preemption and puts it back
// as unschedulable, as scheduleOne does.
type preemptionScene struct {
	t *testing.T
	s *Scheduler
}

func newPreemptionScene(t *testing.T, nodes []*corev1.Node, pods []*corev1.Pod, pending ...*corev1.Pod) *preemptionScene {
	s := newTestScheduler(nodes, pods)
	s.log = slog.New(slog.DiscardHandler)
	s.queue = queue.New(queue.Config{Clock: testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))})
	for _, p := range pending {
		s.queue.Add(p)
	}
	return &preemptionScene{t, s}
}

func (sc *preemptionScene) fail() *preemption {
	sc.t.Helper()
	s := sc.s
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	qp, err := s.queue.Pop(ctx)
	if err != nil {
		sc.t.Fatal(err)
	}
	cycle := s.queue.SchedulingCycle()
	state := framework.NewCycleState()
	s.cache.UpdateSnapshot(s.snapshot)
	_, err = s.schedulePod(ctx, state, qp.Pod)
	var fe *framework.FitError
	if !errors.As(err, &fe) {
		sc.t.Fatalf("got %v, want a FitError", err)
	}
	p := s.preempt(state, qp.Pod, fe)
	if p != nil { // as handleFailure: it comes back nominated
		qp.PodInfo = framework.NewPodInfo(withNomination(qp.Pod, p.node))
	}
	qp.UnschedulablePlugins = sets.New[string]()
	for _, st := range fe.Statuses {
		qp.UnschedulablePlugins.Insert(st.Plugin())
	}
	s.queue.AddUnschedulable(qp, cycle, true)
	return p
}

// terminate and remove do what the pod informer's handlers do.
func (sc *preemptionScene) terminate(p *corev1.Pod) {
	terminating := (&st.PodWrapper{Pod: *p.DeepCopy()}).PreemptedTerminating().Obj()
	sc.s.cache.UpdatePod(p, terminating)
	sc.s.inflight.victimTerminating(p.UID)
	sc.s.queue.MoveAllToActiveOrBackoff(queue.AssignedPodDelete) // a deletion elsewhere
}

func (sc *preemptionScene) remove(p *corev1.Pod) {
	sc.s.cache.RemovePod(p)
	sc.s.podDeleted(p)
	sc.s.queue.MoveAllToActiveOrBackoff(queue.AssignedPodDelete)
}

func (sc *preemptionScene) retried() bool {
	active, backoff, _ := sc.s.queue.Len()
	return active+backoff > 0
}

// A pod that preempted is held until its victim is deleted: other pods'
// deletions elsewhere do not retry it, before its victim terminates (it
// would see it still running and preempt again) or after (its nominated
// node is still full and it may not preempt again). The deletion of its
// victim does, and its next cycle places it there.
func TestAPreemptorIsHeldUntilItsVictimIsDeleted(t *testing.T) {
	node := st.MakeNode().Name("a").Capacity("cpu", "2", "memory", "8Gi", "pods", "110").Obj()
	victim := st.MakePod().Name("victim").Node("a").Priority(1).Req("cpu", "2").Obj()
	urgent := st.MakePod().Name("urgent").Priority(1000).Req("cpu", "1").Obj()
	sc := newPreemptionScene(t, []*corev1.Node{node}, []*corev1.Pod{victim}, urgent)
	if p := sc.fail(); p == nil || p.node != "a" || len(p.victims) != 1 {
		t.Fatalf("preemption %+v, want node a and one victim", p)
	}
	sc.s.queue.MoveAllToActiveOrBackoff(queue.AssignedPodDelete)
	if sc.retried() {
		t.Fatal("another pod's deletion retried the preemptor while its victim runs")
	}
	sc.terminate(victim)
	if sc.retried() {
		t.Fatal("another pod's deletion retried the preemptor while its victim terminates")
	}
	sc.remove(victim)
	if !sc.retried() {
		t.Fatal("the preemptor was not retried when its victim was deleted")
	}
	if node, err := sc.s.try(urgent); err != nil || node != "a" {
		t.Fatalf("placed on %q (%v), want a", node, err)
	}
}

// While its victims terminate, a preemptor is retried by room made
// elsewhere that fits it, not by room promised to another pod nominated
// there (kube-scheduler would retry it and find no node); a node added
// retries it too. Before its victims terminate, neither does.
func TestAPreemptorWhoseVictimsTerminateTakesRoomMadeElsewhere(t *testing.T) {
	a := st.MakeNode().Name("a").Capacity("cpu", "2", "memory", "8Gi", "pods", "110").Obj()
	b := st.MakeNode().Name("b").Capacity("cpu", "3", "memory", "8Gi", "pods", "110").Obj()
	victim := st.MakePod().Name("victim").Node("a").Priority(1).Req("cpu", "2").Obj()
	big := st.MakePod().Name("big").Node("b").Priority(2000).Req("cpu", "2").Obj()
	small := st.MakePod().Name("small").Node("b").Priority(2000).Req("cpu", "500m").Obj()
	urgent := st.MakePod().Name("urgent").Priority(1000).Req("cpu", "1").Obj()
	rival := st.MakePod().Name("rival").Priority(1000).Req("cpu", "2").Obj()
	sc := newPreemptionScene(t, []*corev1.Node{a, b}, []*corev1.Pod{victim, big, small}, urgent)
	if p := sc.fail(); p == nil || p.node != "a" {
		t.Fatalf("preemption %+v, want node a", p)
	}
	c := st.MakeNode().Name("c").Capacity("cpu", "2", "memory", "8Gi", "pods", "110").Obj()
	sc.s.cache.AddNode(c)
	sc.s.nodeChanged()
	sc.s.queue.MoveAllToActiveOrBackoff(queue.NodeAdd)
	if sc.retried() {
		t.Fatal("a node added retried the preemptor while its victim runs")
	}
	sc.s.cache.RemoveNode(c)

	sc.terminate(victim)
	sc.s.nominator.add(rival, "b")
	sc.remove(big) // b: 3 cpu, small's 0.5 and rival's 2 promised
	if sc.retried() {
		t.Fatal("room promised to a pod as important was taken as room for the preemptor")
	}
	sc.s.nominator.delete(rival)
	sc.remove(small) // b: 3 cpu free
	if !sc.retried() {
		t.Fatal("room made elsewhere did not retry the preemptor")
	}
	if node, err := sc.s.try(urgent); err != nil || node != "b" {
		t.Fatalf("placed on %q (%v), want b, whose room it was retried for", node, err)
	}
}

// A preemptor whose victims terminate is retried when a node is added.
func TestANodeAddedRetriesAPreemptorWhoseVictimsTerminate(t *testing.T) {
	a := st.MakeNode().Name("a").Capacity("cpu", "2", "memory", "8Gi", "pods", "110").Obj()
	victim := st.MakePod().Name("victim").Node("a").Priority(1).Req("cpu", "2").Obj()
	urgent := st.MakePod().Name("urgent").Priority(1000).Req("cpu", "1").Obj()
	sc := newPreemptionScene(t, []*corev1.Node{a}, []*corev1.Pod{victim}, urgent)
	sc.fail()
	sc.terminate(victim)
	sc.s.cache.AddNode(st.MakeNode().Name("c").Capacity("cpu", "2", "memory", "8Gi", "pods", "110").Obj())
	sc.s.nodeChanged()
	sc.s.queue.MoveAllToActiveOrBackoff(queue.NodeAdd)
	if !sc.retried() {
		t.Fatal("a node added did not retry the preemptor")
	}
}

// A pod nominated to a node where pods of lower priority terminate may
// not preempt again (kube-scheduler: "not eligible due to a terminating
// pod on the nominated node"); it waits for them as for its own victims
// (here its nomination outlived the scheduler that made it).
func TestAPreemptorNotEligibleWaitsForThePodsTerminatingOnItsNode(t *testing.T) {
	a := st.MakeNode().Name("a").Capacity("cpu", "2", "memory", "8Gi", "pods", "110").Obj()
	victim := st.MakePod().Name("victim").Node("a").Priority(1).Req("cpu", "2").PreemptedTerminating().Obj()
	urgent := st.MakePod().Name("urgent").Priority(1000).Req("cpu", "1").NominatedNode("a").Obj()
	sc := newPreemptionScene(t, []*corev1.Node{a}, []*corev1.Pod{victim}, urgent)
	if p := sc.fail(); p != nil {
		t.Fatalf("preempted %+v, want not eligible", p)
	}
	sc.s.queue.MoveAllToActiveOrBackoff(queue.AssignedPodDelete)
	if sc.retried() {
		t.Fatal("another pod's deletion retried the pod while the pod it waits for terminates")
	}
	sc.remove(victim)
	if !sc.retried() {
		t.Fatal("the pod was not retried when the terminating pod was deleted")
	}
}

// A later preemptor may take a nominated pod's room on its node (both fit
// once its victim goes too). Retried before that victim's deletion is
// seen, the first pod does not pick it again: it waits for it.
func TestAPreemptorWaitsForAVictimAnotherPreemptionIsDeleting(t *testing.T) {
	a := st.MakeNode().Name("a").Capacity("cpu", "2", "memory", "8Gi", "pods", "110").Obj()
	v1 := st.MakePod().Name("v1").Node("a").Priority(1).Req("cpu", "1").Obj()
	v2 := st.MakePod().Name("v2").Node("a").Priority(1).Req("cpu", "1").Obj()
	first := st.MakePod().Name("first").Priority(1000).Req("cpu", "1").Obj()
	second := st.MakePod().Name("second").Priority(1000).Req("cpu", "1").Obj()
	sc := newPreemptionScene(t, []*corev1.Node{a}, []*corev1.Pod{v1, v2}, first, second)
	p := sc.fail()
	if p == nil || len(p.victims) != 1 {
		t.Fatalf("first preemption %+v, want one victim on a", p)
	}
	victim, other := v1, v2
	if p.victims[0].Name == "v2" {
		victim, other = v2, v1
	}
	sc.terminate(victim)
	sc.remove(victim)
	if p := sc.fail(); p == nil || len(p.victims) != 1 || p.victims[0].Name != other.Name {
		t.Fatalf("second preemption %+v, want %s", p, other.Name)
	}
	if p := sc.fail(); p != nil {
		t.Fatalf("the first pod preempted again (%+v) while %s's deletion is under way", p, other.Name)
	}
	sc.s.queue.MoveAllToActiveOrBackoff(queue.AssignedPodDelete)
	if sc.retried() {
		t.Fatal("the first pod was retried while it waits")
	}
	sc.remove(other)
	if active, backoff, _ := sc.s.queue.Len(); active+backoff != 2 {
		t.Fatalf("%d pods retried once the last victim went, want both preemptors", active+backoff)
	}
}
