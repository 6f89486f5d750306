package informer

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func byNodeName(p *corev1.Pod) string { return p.Spec.NodeName }

func TestSplitHandsEachChildItsSlice(t *testing.T) {
	for _, tc := range []struct {
		name string
		list []*corev1.Pod
		// early children are made before the parent runs, late ones once
		// it has handed out its first list (before any watch event).
		early, late []string
		watch       []string
		// want is, per child key, the handler calls its first child sees.
		want map[string][]string
	}{
		{
			name:  "a child made before the parent runs gets its key's objects from the first list, and no other key's",
			list:  []*corev1.Pod{makePod("a").Node("n1").RV("10").Obj(), makePod("b").Node("n2").RV("10").Obj()},
			early: []string{"n1", "n2"},
			watch: []string{added(makePod("c").Node("n2").RV("11").Obj())},
			want:  map[string][]string{"n1": {"add default/a@10"}, "n2": {"add default/b@10", "add default/c@11"}},
		},
		{
			name:  "a child made after the parent synced starts from what its key holds, then follows the watch",
			list:  []*corev1.Pod{makePod("a").Node("n1").RV("10").Obj(), makePod("b").Node("n2").RV("10").Obj()},
			late:  []string{"n1"},
			watch: []string{modified(makePod("a").Node("n1").RV("11").Obj())},
			want:  map[string][]string{"n1": {"add default/a@10", "update default/a@10->11"}},
		},
		{
			name:  "an object whose key changes leaves the old key's children and reaches the new key's as an add",
			list:  []*corev1.Pod{makePod("a").RV("10").Obj()},
			early: []string{"", "n1"},
			watch: []string{modified(makePod("a").Node("n1").RV("11").Obj())},
			want:  map[string][]string{"": {"add default/a@10", "delete default/a@10"}, "n1": {"add default/a@11"}},
		},
		{
			name:  "a delete reaches only the children of its key, with the final state",
			list:  []*corev1.Pod{makePod("a").Node("n1").RV("10").Obj(), makePod("b").Node("n2").RV("10").Obj()},
			early: []string{"n1", "n2"},
			watch: []string{deleted(makePod("a").Node("n1").RV("12").Obj()), added(makePod("d").Node("n2").RV("13").Obj())},
			want:  map[string][]string{"n1": {"add default/a@10", "delete default/a@12"}, "n2": {"add default/b@10", "add default/d@13"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, c := newFakeAPI(t)
			parent, parentRec := newPodInformer(t, c, Config{Clock: newFakeClock(0)})
			split := NewSplit(parent, byNodeName)
			recs := map[string]*recorder{}
			children := map[string]*Informer[corev1.Pod]{}
			child := func(key string) {
				children[key] = split.Child(key)
				recs[key] = newRecorder()
				children[key].AddHandler(recs[key].handler())
				start(t, children[key])
			}
			f.lists <- listPage{rv: "10", pods: tc.list}
			for _, key := range tc.early {
				child(key)
			}
			start(t, parent)
			waitSynced(t, parent)
			for range tc.list {
				next(t, parentRec.calls, "the parent's first list")
			}
			for _, key := range tc.late {
				child(key)
			}
			for _, inf := range children {
				waitSynced(t, inf)
			}
			f.watches <- watchScript{frames: tc.watch, end: endHold}
			for range tc.watch {
				next(t, parentRec.calls, "the parent's watch event")
			}
			for key, want := range tc.want {
				recs[key].expect(t, want...)
			}
			// The parent has handled every event, and feeds children
			// synchronously: nothing more can come.
			for _, rec := range recs {
				rec.expectNone(t)
			}
		})
	}
}

func TestSplitStopsFeedingAChildWhoseRunEnded(t *testing.T) {
	f, c := newFakeAPI(t)
	parent, parentRec := newPodInformer(t, c, Config{Clock: newFakeClock(0), Logger: slog.New(slog.DiscardHandler)})
	split := NewSplit(parent, byNodeName)
	stopped := split.Child("n1")
	kept := split.Child("n1")
	rec := newRecorder()
	kept.AddHandler(rec.handler())
	start(t, kept)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- stopped.Run(ctx) }()
	f.lists <- listPage{rv: "10"}
	f.watches <- watchScript{frames: []string{added(makePod("a").Node("n1").RV("11").Obj())}, end: endHold}
	start(t, parent)
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the stopped child's Run did not return")
	}
	next(t, parentRec.calls, "the parent's watch event")

	rec.expect(t, "add default/a@11")
	split.mu.Lock()
	defer split.mu.Unlock()
	if got := split.children["n1"]; len(got) != 1 || got[0] != kept {
		t.Errorf("children of n1 = %v, want only the running one", got)
	}
}
