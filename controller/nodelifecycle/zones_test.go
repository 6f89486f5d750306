package nodelifecycle

import (
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik/controller/internal/testutil"
)

var evictionCfg = DefaultEvictionConfig()

// zoneNodes returns ready and notReady nodes labeled with zone.
func zoneNodes(zone string, ready, notReady int) []*corev1.Node {
	var out []*corev1.Node
	for i := range ready + notReady {
		st := corev1.ConditionTrue
		if i >= ready {
			st = corev1.ConditionUnknown
		}
		b := testutil.Node(zone+"-"+string(rune('a'+i))).Condition(corev1.NodeReady, st, testutil.T0)
		if zone != "" {
			b = b.Label(corev1.LabelTopologyZone, zone)
		}
		out = append(out, b.Obj())
	}
	return out
}

func zk(zone string) string { return ":\x00:" + zone }

func TestZoneKey(t *testing.T) {
	if got := ZoneKey(testutil.Node("n").Obj()); got != "" {
		t.Errorf("an unlabeled node is in zone %q, want \"\"", got)
	}
	both := testutil.Node("n").Label(corev1.LabelTopologyRegion, "eu").Label(corev1.LabelTopologyZone, "eu-1").Obj()
	beta := testutil.Node("n").Label(corev1.LabelFailureDomainBetaRegion, "eu").Label(corev1.LabelFailureDomainBetaZone, "eu-1").Obj()
	if ZoneKey(both) != "eu:\x00:eu-1" || ZoneKey(beta) != ZoneKey(both) {
		t.Errorf("keys %q %q", ZoneKey(both), ZoneKey(beta))
	}
}

func TestComputeZoneState(t *testing.T) {
	cases := []struct {
		ready, notReady int
		want            ZoneState
	}{
		{3, 0, StateNormal},
		{0, 1, StateFullDisruption},
		{0, 5, StateFullDisruption},
		{1, 2, StateNormal},            // two not ready are never a disruption
		{2, 3, StatePartialDisruption}, // 60% ≥ 55%
		{3, 3, StateNormal},            // 50% < 55%
		{9, 11, StatePartialDisruption},
	}
	for _, tc := range cases {
		var conds []*corev1.NodeCondition
		for _, n := range zoneNodes("z", tc.ready, tc.notReady) {
			conds = append(conds, condition(n, corev1.NodeReady))
		}
		if got := ComputeZoneState(conds, 0.55); got != tc.want {
			t.Errorf("%d ready, %d not: %s, want %s", tc.ready, tc.notReady, got, tc.want)
		}
	}
	if got := ComputeZoneState([]*corev1.NodeCondition{nil}, 0.55); got != StateFullDisruption {
		t.Errorf("a node without a Ready condition counts as not ready: %s", got)
	}
}

func TestJudgeZones(t *testing.T) {
	cat := func(groups ...[]*corev1.Node) []*corev1.Node { return slices.Concat(groups...) }
	cases := []struct {
		name      string
		nodes     []*corev1.Node
		prev      map[string]ZoneState
		wantState map[string]ZoneState
		wantRates map[string]float64
		wantAll   bool
		entered   bool
		left      bool
	}{
		{name: "new healthy zones start at the normal rate",
			nodes:     cat(zoneNodes("a", 2, 0), zoneNodes("b", 1, 0)),
			wantState: map[string]ZoneState{zk("a"): StateNormal, zk("b"): StateNormal},
			wantRates: map[string]float64{zk("a"): 0.1, zk("b"): 0.1}},
		{name: "an unchanged zone keeps its rate (no reset)",
			nodes:     zoneNodes("a", 2, 1),
			prev:      map[string]ZoneState{zk("a"): StateNormal},
			wantState: map[string]ZoneState{zk("a"): StateNormal}, wantRates: map[string]float64{}},
		{name: "a small partially disrupted zone stops tainting; a fully disrupted one beside a healthy zone keeps the normal rate",
			nodes:     cat(zoneNodes("a", 1, 3), zoneNodes("b", 0, 2), zoneNodes("c", 1, 0)),
			prev:      map[string]ZoneState{zk("a"): StateNormal, zk("b"): StateNormal, zk("c"): StateNormal},
			wantState: map[string]ZoneState{zk("a"): StatePartialDisruption, zk("b"): StateFullDisruption, zk("c"): StateNormal},
			wantRates: map[string]float64{zk("a"): 0, zk("b"): 0.1}},
		{name: "a large partially disrupted zone taints at the secondary rate",
			nodes:     zoneNodes("a", 20, 31),
			prev:      map[string]ZoneState{zk("a"): StateNormal},
			wantState: map[string]ZoneState{zk("a"): StatePartialDisruption}, wantRates: map[string]float64{zk("a"): 0.01}},
		{name: "one unlabeled node down is a fully disrupted cluster: taints are withheld",
			nodes:     zoneNodes("", 0, 1),
			prev:      map[string]ZoneState{"": StateNormal},
			wantState: map[string]ZoneState{"": StateFullDisruption}, wantRates: map[string]float64{"": 0},
			wantAll: true, entered: true},
		{name: "staying fully disrupted changes nothing",
			nodes:     cat(zoneNodes("a", 0, 2), zoneNodes("b", 0, 1)),
			prev:      map[string]ZoneState{zk("a"): StateFullDisruption, zk("b"): StateFullDisruption},
			wantState: map[string]ZoneState{zk("a"): StateFullDisruption, zk("b"): StateFullDisruption}, wantRates: map[string]float64{},
			wantAll: true},
		{name: "leaving full disruption resets every zone's rate, the still fully disrupted ones to normal",
			nodes:     cat(zoneNodes("a", 0, 2), zoneNodes("b", 1, 0)),
			prev:      map[string]ZoneState{zk("a"): StateFullDisruption, zk("b"): StateFullDisruption},
			wantState: map[string]ZoneState{zk("a"): StateFullDisruption, zk("b"): StateNormal},
			wantRates: map[string]float64{zk("a"): 0.1, zk("b"): 0.1}, left: true},
		{name: "a node excluded from disruption checks does not count",
			nodes: cat(zoneNodes("a", 1, 0), func() []*corev1.Node {
				n := zoneNodes("b", 0, 1)
				n[0].Labels[LabelExcludeDisruption] = ""
				return n
			}()),
			prev:      map[string]ZoneState{zk("a"): StateNormal},
			wantState: map[string]ZoneState{zk("a"): StateNormal}, wantRates: map[string]float64{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := JudgeZones(tc.nodes, tc.prev, evictionCfg)
			if !maps.Equal(d.States, tc.wantState) || !maps.Equal(d.Rates, tc.wantRates) {
				t.Errorf("states %v rates %v, want %v %v", d.States, d.Rates, tc.wantState, tc.wantRates)
			}
			if d.AllFullyDisrupted != tc.wantAll || d.EnteredFullDisruption != tc.entered || d.LeftFullDisruption != tc.left {
				t.Errorf("all %v entered %v left %v, want %v %v %v", d.AllFullyDisrupted, d.EnteredFullDisruption, d.LeftFullDisruption, tc.wantAll, tc.entered, tc.left)
			}
		})
	}
}

func TestJudgeZonesTakesAZeroPolicyAsGiven(t *testing.T) {
	cases := []struct {
		name      string
		cfg       EvictionConfig
		nodes     []*corev1.Node
		wantState ZoneState
		wantRate  float64
	}{
		{name: "a rate of 0 taints no node of a healthy zone",
			cfg:   EvictionConfig{Rate: 0, SecondaryRate: 0.01, UnhealthyZoneThreshold: 0.55, LargeClusterSizeThreshold: 50},
			nodes: zoneNodes("a", 3, 1), wantState: StateNormal, wantRate: 0},
		{name: "unhealthy zone threshold 0: more than two not-ready nodes make any zone partially disrupted",
			cfg:   EvictionConfig{Rate: 0.1, SecondaryRate: 0.01, UnhealthyZoneThreshold: 0, LargeClusterSizeThreshold: 50},
			nodes: zoneNodes("a", 20, 3), wantState: StatePartialDisruption, wantRate: 0},
		{name: "large cluster size threshold 0: every partially disrupted zone is large and taints at the secondary rate",
			cfg:   EvictionConfig{Rate: 0.1, SecondaryRate: 0.01, UnhealthyZoneThreshold: 0.55, LargeClusterSizeThreshold: 0},
			nodes: zoneNodes("a", 1, 3), wantState: StatePartialDisruption, wantRate: 0.01},
		{name: "a secondary rate of 0 taints no node of a large partially disrupted zone",
			cfg:   EvictionConfig{Rate: 0.1, SecondaryRate: 0, UnhealthyZoneThreshold: 0.55, LargeClusterSizeThreshold: 0},
			nodes: zoneNodes("a", 1, 3), wantState: StatePartialDisruption, wantRate: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := JudgeZones(tc.nodes, nil, tc.cfg)
			if d.States[zk("a")] != tc.wantState || d.Rates[zk("a")] != tc.wantRate {
				t.Fatalf("state %s rate %v, want %s %v", d.States[zk("a")], d.Rates[zk("a")], tc.wantState, tc.wantRate)
			}
		})
	}
}

func always(string) bool { return true }

func TestTaintQueue(t *testing.T) {
	t0 := testutil.T0
	t.Run("a zone lets one node out at once, then one per 1/rate", func(t *testing.T) {
		q := NewTaintQueue(0.1)
		for _, n := range []string{"a", "b", "c"} {
			q.Add("z", n)
		}
		if got := q.Pop(t0, always); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("at t0: %v", got)
		}
		if next := q.NextIn(t0); next != 10*time.Second {
			t.Fatalf("next in %v, want 10s", next)
		}
		if got := q.Pop(t0.Add(9*time.Second), always); len(got) != 0 {
			t.Fatalf("at 9s: %v", got)
		}
		if got := q.Pop(t0.Add(10*time.Second), always); !slices.Equal(got, []string{"b"}) {
			t.Fatalf("at 10s: %v", got)
		}
		if got := q.Pop(t0.Add(time.Hour), always); !slices.Equal(got, []string{"c"}) {
			t.Fatalf("a bucket holds one token, however long it waited: %v", got)
		}
	})
	t.Run("zones have their own buckets", func(t *testing.T) {
		q := NewTaintQueue(0.1)
		q.Add("z1", "a")
		q.Add("z1", "b")
		q.Add("z2", "c")
		if got := q.Pop(t0, always); !slices.Equal(got, []string{"a", "c"}) {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("a queue whose default rate is 0 lets nobody out of a new zone", func(t *testing.T) {
		q := NewTaintQueue(0)
		q.Add("z", "a")
		if got := q.Pop(t0.Add(time.Hour), always); len(got) != 0 || q.NextIn(t0) != 0 {
			t.Fatalf("got %v, next %v", got, q.NextIn(t0))
		}
	})
	t.Run("rate 0 lets nobody out and has no next time", func(t *testing.T) {
		q := NewTaintQueue(0.1)
		q.Add("z", "a")
		q.SetRate("z", 0, t0)
		if got := q.Pop(t0.Add(time.Hour), always); len(got) != 0 || q.NextIn(t0) != 0 {
			t.Fatalf("got %v, next %v", got, q.NextIn(t0))
		}
	})
	t.Run("a rate change after an empty bucket does not let an extra node out", func(t *testing.T) {
		q := NewTaintQueue(0.1)
		q.Add("z", "a")
		q.Add("z", "b")
		q.Pop(t0, always)
		q.SetRate("z", 0.5, t0.Add(time.Second))
		if got := q.Pop(t0.Add(time.Second), always); len(got) != 0 {
			t.Fatalf("got %v", got)
		}
		if next := q.NextIn(t0.Add(time.Second)); next != 2*time.Second {
			t.Fatalf("next in %v, want 2s at the new rate", next)
		}
	})
	t.Run("setting the same rate keeps the bucket", func(t *testing.T) {
		q := NewTaintQueue(0.1)
		q.Add("z", "a")
		q.Add("z", "b")
		q.Pop(t0, always)
		q.SetRate("z", 0.1, t0)
		if got := q.Pop(t0.Add(time.Second), always); len(got) != 0 {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("a node that no longer needs the taint leaves without using the token", func(t *testing.T) {
		q := NewTaintQueue(0.1)
		q.Add("z", "ready-again")
		q.Add("z", "b")
		if got := q.Pop(t0, func(n string) bool { return n != "ready-again" }); !slices.Equal(got, []string{"b"}) {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("Add is idempotent and Remove takes a node out", func(t *testing.T) {
		q := NewTaintQueue(0.1)
		if !q.Add("z", "a") || q.Add("z", "a") || !q.Add("z", "b") || !q.Remove("a") || q.Remove("a") {
			t.Fatal("Add/Remove results wrong")
		}
		if got := q.Waiting("z"); !slices.Equal(got, []string{"b"}) {
			t.Fatalf("waiting %v", got)
		}
		if !q.Add("other", "b") || len(q.Waiting("z")) != 0 || !slices.Equal(q.Waiting("other"), []string{"b"}) {
			t.Fatalf("a node that changed zones waits in both: %v %v", q.Waiting("z"), q.Waiting("other"))
		}
	})
}

func TestDesiredTaintsWhenTheZoneAllows(t *testing.T) {
	n := testutil.Node("n").Condition(corev1.NodeReady, corev1.ConditionUnknown, testutil.T0).Taint(TaintUnreachable, corev1.TaintEffectNoSchedule).Obj()
	taints, changed, await := desiredTaints(n, testutil.T0, true)
	got := taintSet(taints)
	if !changed || await || !got["node.kubernetes.io/unreachable:NoExecute"] || len(got) != 2 {
		t.Fatalf("taints %v changed %v await %v", got, changed, await)
	}
	for _, tn := range taints {
		if tn.Effect == corev1.TaintEffectNoExecute && (tn.TimeAdded == nil || !tn.TimeAdded.Time.Equal(testutil.T0)) {
			t.Errorf("NoExecute taint without timeAdded: %+v", tn)
		}
	}
	if rest, had := withoutNoExecute(&corev1.Node{Spec: corev1.NodeSpec{Taints: taints}}); !had || len(rest) != 1 || rest[0].Effect != corev1.TaintEffectNoSchedule {
		t.Fatalf("withoutNoExecute left %v", rest)
	}
}
