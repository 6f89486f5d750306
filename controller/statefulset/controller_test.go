package statefulset

import (
	"context"
	"log/slog"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"minik/client"
	"minik/controller/framework"
	"minik/controller/internal/history"
	"minik/controller/internal/synctest"
)

// TestSyncRunsThePlanThroughTheSink drives the controller's sync over
// caches filled by hand and a FakeSink: no apiserver.
func TestSyncRunsThePlanThroughTheSink(t *testing.T) {
	// current is the revision of set's template, made by an earlier sync
	// (so that sync writes none), newest of set's revisions.
	current := func(set *appsv1.StatefulSet) *appsv1.ControllerRevision {
		data, err := history.Patch(&set.Spec.Template)
		if err != nil {
			t.Fatal(err)
		}
		hash := history.Hash(data, nil)
		return history.New(set, "apps/v1", "StatefulSet", history.Name(set.Name, hash), hash, set.Spec.Template.Labels, data, 2)
	}
	// old is an earlier revision no pod uses any more.
	old := func(set *appsv1.StatefulSet) *appsv1.ControllerRevision {
		return history.New(set, "apps/v1", "StatefulSet", "kv-old", "old", nil, []byte(`{"old":true}`), 1)
	}
	noHistory := func(s *appsv1.StatefulSet) { s.Spec.RevisionHistoryLimit = ptr.To[int32](0) }
	cases := []struct {
		name      string
		set       *appsv1.StatefulSet
		old       bool // the set has an unused older revision too
		expecting bool // an earlier sync's creates are not all seen yet
		fail      ActionType
		wantDone  []string // the actions performed
		wantErr   string
	}{
		{name: "a new set creates its first pod, then writes its status",
			set:      makeSet(2),
			wantDone: []string{"ManagePods create [kv-0] delete []", "UpdateStatus replicas=0 ready=0 updated=0"}},
		{name: "a pod's claim is made before it, and unused revisions beyond the limit are pruned",
			set: makeSet(1, withClaims, noHistory), old: true,
			wantDone: []string{"CreateClaim data-kv-0", "ManagePods create [kv-0] delete []", "DeleteRevision kv-old",
				"UpdateStatus replicas=0 ready=0 updated=0"}},
		{name: "with creates not yet seen it makes no claim or pod, but still prunes and writes the status",
			set: makeSet(1, withClaims, noHistory), old: true, expecting: true,
			wantDone: []string{"DeleteRevision kv-old", "UpdateStatus replicas=0 ready=0 updated=0"}},
		{name: "a refused claim fails the sync with its error; the other writes are still done",
			set: makeSet(1, withClaims), fail: CreateClaim,
			wantDone: []string{"ManagePods create [kv-0] delete []", "UpdateStatus replicas=0 ready=0 updated=0"},
			wantErr:  "CreateClaim data-kv-0: refused"},
		{name: "a set no longer in the cache is nothing to do"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inf := framework.NewInformers(&client.Client{}, slog.New(slog.DiscardHandler))
			if tc.set != nil {
				inf.StatefulSets.Replace([]*appsv1.StatefulSet{tc.set})
				revs := []*appsv1.ControllerRevision{current(tc.set)}
				if tc.old {
					revs = append(revs, old(tc.set))
				}
				inf.ControllerRevisions.Replace(revs)
			}
			sink := synctest.Refusing(func(a Action) bool { return a.Type == tc.fail })
			sc := New(&client.Client{}, inf, nil, testingclock.NewFakeClock(now), slog.New(slog.DiscardHandler))
			sc.sink = func(*appsv1.StatefulSet) framework.Sink[Action] { return sink }
			if tc.expecting {
				sc.expect.Expect("default/kv", 1, nil)
			}
			_, err := sc.sync(context.Background(), "default/kv")
			synctest.Check(t, err, tc.wantErr, sink, tc.wantDone)
		})
	}
}
