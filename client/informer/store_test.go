package informer

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestStore(t *testing.T) {
	type op struct {
		upsert *corev1.Pod
		remove string
	}
	tests := []struct {
		name      string
		ops       []op
		index     string
		value     string
		wantIndex []string
		wantKeys  []string
	}{
		{
			name:      "unscheduled pods are indexed under an empty node name",
			ops:       []op{{upsert: makePod("a").Obj()}, {upsert: makePod("b").Node("n1").Obj()}},
			index:     NodeNameIndex,
			wantIndex: []string{"default/a"},
			wantKeys:  []string{"default/a", "default/b"},
		},
		{
			name:  "binding a pod moves it to its node's entry",
			ops:   []op{{upsert: makePod("a").Obj()}, {upsert: makePod("a").Node("n1").Obj()}},
			index: NodeNameIndex, value: "n1",
			wantIndex: []string{"default/a"},
			wantKeys:  []string{"default/a"},
		},
		{
			name:      "binding a pod removes it from the empty node name",
			ops:       []op{{upsert: makePod("a").Obj()}, {upsert: makePod("a").Node("n1").Obj()}},
			index:     NodeNameIndex,
			wantIndex: nil,
			wantKeys:  []string{"default/a"},
		},
		{
			name:  "removing an object removes it from every index",
			ops:   []op{{upsert: makePod("a").NS("x").Obj()}, {upsert: makePod("b").NS("x").Obj()}, {remove: "x/a"}},
			index: NamespaceIndex, value: "x",
			wantIndex: []string{"x/b"},
			wantKeys:  []string{"x/b"},
		},
		{
			name:  "removing an unknown key changes nothing",
			ops:   []op{{upsert: makePod("a").Obj()}, {remove: "default/zzz"}},
			index: NamespaceIndex, value: "default",
			wantIndex: []string{"default/a"},
			wantKeys:  []string{"default/a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore[corev1.Pod]()
			for _, o := range tt.ops {
				if o.upsert != nil {
					s.upsert(o.upsert)
				} else {
					s.remove(o.remove)
				}
			}
			var got []string
			for _, p := range s.ByIndex(tt.index, tt.value) {
				got = append(got, KeyOf(p))
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.wantIndex) {
				t.Errorf("ByIndex(%q, %q) = %v, want %v", tt.index, tt.value, got, tt.wantIndex)
			}
			keys := s.Keys()
			slices.Sort(keys)
			if !slices.Equal(keys, tt.wantKeys) || s.Len() != len(tt.wantKeys) || len(s.List()) != len(tt.wantKeys) {
				t.Errorf("keys %v (Len %d), want %v", keys, s.Len(), tt.wantKeys)
			}
		})
	}
}

func TestAddIndexCoversObjectsAlreadyStored(t *testing.T) {
	s := newStore[corev1.Pod]()
	s.upsert(makePod("a").Label("tier", "front").Obj())
	if err := s.addIndex("tier", func(p *corev1.Pod) []string { return []string{p.Labels["tier"]} }); err != nil {
		t.Fatal(err)
	}
	if got := s.ByIndex("tier", "front"); len(got) != 1 || got[0].Name != "a" {
		t.Errorf("ByIndex(tier, front) = %v, want pod a", got)
	}
}

func TestKeyOfClusterScopedObjectsIsTheName(t *testing.T) {
	if got := KeyOf(&corev1.Node{}); got != "" {
		t.Errorf("KeyOf(empty node) = %q", got)
	}
	n := &corev1.Node{}
	n.Name = "n1"
	if got := KeyOf(n); got != "n1" {
		t.Errorf("KeyOf(node n1) = %q, want n1", got)
	}
	if got := Key("ns", "p"); got != "ns/p" {
		t.Errorf("Key(ns, p) = %q, want ns/p", got)
	}
}

func TestNonPodStoresHaveNoNodeNameIndex(t *testing.T) {
	s := newStore[corev1.Node]()
	n := &corev1.Node{}
	n.Name = "n1"
	s.upsert(n)
	if got := s.ByIndex(NodeNameIndex, ""); len(got) != 0 {
		t.Errorf("node store has a node name index: %v", got)
	}
	if got := s.ByIndex(NamespaceIndex, ""); len(got) != 1 {
		t.Errorf("cluster-scoped objects are under namespace \"\": got %v", got)
	}
}
