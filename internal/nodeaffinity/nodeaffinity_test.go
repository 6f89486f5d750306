package nodeaffinity

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	upstream "k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func affinity(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
}

func TestRequiredNodeAffinity(t *testing.T) {
	zoneA := node("n1", map[string]string{"zone": "a", "gpus": "4"})
	cases := []struct {
		name     string
		selector map[string]string
		affinity *corev1.Affinity
		node     *corev1.Node
		match    bool
		err      string
	}{
		{name: "nothing asked", node: zoneA, match: true},
		{name: "nodeSelector", selector: map[string]string{"zone": "a"}, node: zoneA, match: true},
		{name: "nodeSelector misses", selector: map[string]string{"zone": "b"}, node: zoneA},
		{name: "In", affinity: affinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req("zone", corev1.NodeSelectorOpIn, "a", "b")}}), node: zoneA, match: true},
		{name: "NotIn", affinity: affinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req("zone", corev1.NodeSelectorOpNotIn, "a")}}), node: zoneA},
		{name: "Gt", affinity: affinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req("gpus", corev1.NodeSelectorOpGt, "3")}}), node: zoneA, match: true},
		{name: "Gt takes an integer, not a quantity", node: zoneA,
			affinity: affinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req("gpus", corev1.NodeSelectorOpGt, "1k")}}),
			err:      `nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: "1k": for 'Gt', 'Lt' operators, the value must be an integer`},
		{name: "an empty operator is not supported", node: zoneA,
			affinity: affinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req("zone", "", "a")}}),
			err:      `nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"`},
		{name: "a bad term does not stop a good one", node: zoneA, match: true, affinity: affinity(
			corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req("zone", "Bad")}},
			corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req("zone", corev1.NodeSelectorOpExists)}})},
		{name: "an empty term selects nothing", node: zoneA, affinity: affinity(corev1.NodeSelectorTerm{})},
		{name: "matchFields by name", node: zoneA, match: true,
			affinity: affinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{req("metadata.name", corev1.NodeSelectorOpIn, "n1")}})},
		{name: "matchFields NotIn", node: zoneA,
			affinity: affinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{req("metadata.name", corev1.NodeSelectorOpNotIn, "n1")}})},
		{name: "matchFields takes one value", node: zoneA,
			affinity: affinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{req("metadata.name", corev1.NodeSelectorOpIn, "n1", "n2")}}),
			err:      `nodeSelectorTerms[0].matchFields[0].values: Invalid value: ["n1","n2"]: must have one element`},
		{name: "a node without a name is not held to matchFields", node: node("", map[string]string{"zone": "a"}), match: true,
			affinity: affinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{req("metadata.name", corev1.NodeSelectorOpIn, "n1")}})},
		{name: "labels and fields are ANDed", node: zoneA, affinity: affinity(corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{req("zone", corev1.NodeSelectorOpIn, "a")},
			MatchFields:      []corev1.NodeSelectorRequirement{req("metadata.name", corev1.NodeSelectorOpIn, "n2")}})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			match, err := NewRequiredNodeAffinity(c.selector, c.affinity).Match(c.node)
			if match != c.match || fmt.Sprint(err) != fmt.Sprint(errOrNil(c.err)) {
				t.Errorf("Match = %v, %v; want %v, %v", match, err, c.match, c.err)
			}
		})
	}
}

func errOrNil(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func TestMatchAllocatesNothing(t *testing.T) {
	r := NewRequiredNodeAffinity(map[string]string{"zone": "a"}, affinity(corev1.NodeSelectorTerm{
		MatchExpressions: []corev1.NodeSelectorRequirement{req("zone", corev1.NodeSelectorOpIn, "a", "b")},
		MatchFields:      []corev1.NodeSelectorRequirement{req("metadata.name", corev1.NodeSelectorOpNotIn, "n2")}}))
	n := node("n1", map[string]string{"zone": "a"})
	if allocs := testing.AllocsPerRun(100, func() { _, _ = r.Match(n) }); allocs != 0 {
		t.Errorf("Match allocates %v times", allocs)
	}
}

// TestSameAsComponentHelpers checks random selectors and nodes against
// k8s.io/component-helpers, whose behaviour this package keeps.
func TestSameAsComponentHelpers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	values := func() []string {
		out := []string{}
		for range rng.IntN(3) {
			out = append(out, pick("a", "b", "1", "3", "10", "-2", "1k", "", "bad value!"))
		}
		return out
	}
	ops := []corev1.NodeSelectorOperator{corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
		corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, "", "Bad"}
	requirements := func(keys ...string) []corev1.NodeSelectorRequirement {
		var out []corev1.NodeSelectorRequirement
		for range rng.IntN(3) {
			out = append(out, corev1.NodeSelectorRequirement{Key: pick(keys...), Operator: ops[rng.IntN(len(ops))], Values: values()})
		}
		return out
	}
	randomTerm := func() corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: requirements("k", "n", "Bad Key!"), MatchFields: requirements("metadata.name", "spec.unschedulable")}
	}
	for i := range 5000 {
		var terms []corev1.NodeSelectorTerm
		for range rng.IntN(3) {
			terms = append(terms, randomTerm())
		}
		ns := &corev1.NodeSelector{NodeSelectorTerms: terms}
		labels := map[string]string{}
		for _, k := range []string{"k", "n"} {
			if rng.IntN(3) > 0 {
				labels[k] = pick("a", "b", "1", "3", "10", "-2")
			}
		}
		nodeSelector := map[string]string{}
		if rng.IntN(4) == 0 {
			nodeSelector["k"] = pick("a", "b")
		}
		n := node(pick("a", "b", ""), labels)
		aff := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: ns}}

		gotMatch, gotErr := NewRequiredNodeAffinity(nodeSelector, aff).Match(n)
		wantMatch, wantErr := upstream.NewRequiredNodeAffinity(nodeSelector, aff).Match(n)
		if gotMatch != wantMatch || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("case %d: required %+v on %+v: got %v, %v; component-helpers %v, %v", i, ns, n.ObjectMeta, gotMatch, gotErr, wantMatch, wantErr)
		}

		gotMatch, gotErr = MatchNodeSelectorTerms(n, ns)
		wantMatch, wantErr = corev1helpers.MatchNodeSelectorTerms(n, ns)
		if gotMatch != wantMatch || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("case %d: terms %+v on %+v: got %v, %v; component-helpers %v, %v", i, ns, n.ObjectMeta, gotMatch, gotErr, wantMatch, wantErr)
		}

		var preferred []corev1.PreferredSchedulingTerm
		for _, term := range terms {
			preferred = append(preferred, corev1.PreferredSchedulingTerm{Weight: int32(rng.IntN(3)), Preference: term})
		}
		got, gotErr := NewPreferredSchedulingTerms(preferred)
		want, wantErr := upstream.NewPreferredSchedulingTerms(preferred)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("case %d: preferred %+v: got %v; component-helpers %v", i, preferred, gotErr, wantErr)
		}
		if gotErr == nil && got.Score(n) != want.Score(n) {
			t.Fatalf("case %d: preferred %+v on %+v: score %d; component-helpers %d", i, preferred, n.ObjectMeta, got.Score(n), want.Score(n))
		}
	}
}

// BenchmarkMatch is the scheduler's filter for SchedulingNodeAffinity's
// pods (a zone In two values) on one node, here and in component-helpers.
func BenchmarkMatch(b *testing.B) {
	aff := affinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		req("topology.kubernetes.io/zone", corev1.NodeSelectorOpIn, "zone1", "zone2")}})
	n := node("node-1", map[string]string{"kubernetes.io/hostname": "node-1", "topology.kubernetes.io/zone": "zone1"})
	b.Run("minik", func(b *testing.B) {
		r := NewRequiredNodeAffinity(nil, aff)
		b.ReportAllocs()
		for b.Loop() {
			_, _ = r.Match(n)
		}
	})
	b.Run("component-helpers", func(b *testing.B) {
		r := upstream.NewRequiredNodeAffinity(nil, aff)
		b.ReportAllocs()
		for b.Loop() {
			_, _ = r.Match(n)
		}
	})
}
