package framework

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestMatchMemoAgreesWithMatches: whatever order terms and pods come in,
// the memo answers what AffinityTerm.Matches answers. The terms differ
// only in what the key must tell apart (a nil and an empty selector, the
// namespaces, a namespace selector, matchLabelKeys); the pods share
// labels across namespaces and namespaces across label sets.
func TestMatchMemoAgreesWithMatches(t *testing.T) {
	nsLabels := map[string]labels.Set{"a": {"team": "x"}, "b": {"team": "y"}}
	owner := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Labels: map[string]string{"app": "web", "tier": "1"}}}
	sel := func(ml map[string]string) *metav1.LabelSelector { return &metav1.LabelSelector{MatchLabels: ml} }
	sources := []corev1.PodAffinityTerm{
		{LabelSelector: nil},
		{LabelSelector: &metav1.LabelSelector{}},
		{LabelSelector: sel(map[string]string{"app": "web"})},
		{LabelSelector: sel(map[string]string{"app": "web"}), Namespaces: []string{"b"}},
		{LabelSelector: sel(map[string]string{"app": "web"}), Namespaces: []string{"a", "b"}},
		{LabelSelector: sel(map[string]string{"app": "web"}), NamespaceSelector: &metav1.LabelSelector{}},
		{LabelSelector: sel(map[string]string{"app": "web"}), NamespaceSelector: sel(map[string]string{"team": "y"})},
		{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"2", "3"}}}}},
		{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tier", Operator: metav1.LabelSelectorOpDoesNotExist}}}},
		{LabelSelector: &metav1.LabelSelector{}, MatchLabelKeys: []string{"tier"}},
		{LabelSelector: &metav1.LabelSelector{}, MismatchLabelKeys: []string{"tier"}},
	}
	var terms []AffinityTerm
	for i := range sources {
		at, err := newAffinityTerm(owner, &sources[i])
		if err != nil {
			t.Fatal(err)
		}
		terms = append(terms, at)
	}
	var pods []*PodInfo
	for _, ns := range []string{"a", "b", "c"} {
		for _, l := range []map[string]string{nil, {"app": "web"}, {"app": "web", "tier": "1"}, {"app": "web", "tier": "2"}, {"app": "db"}} {
			pods = append(pods, NewPodInfo(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Labels: l}}))
		}
	}
	m := NewMatchMemo(func(ns string) labels.Set { return nsLabels[ns] })
	for round := range 2 { // the second round answers from the memo
		for i := range terms {
			for _, p := range pods {
				var nl labels.Set
				if terms[i].NamespaceSelector != nil {
					nl = nsLabels[p.Pod.Namespace]
				}
				want := terms[i].Matches(p.Pod, nl)
				if got := m.Matches(&terms[i], p); got != want {
					t.Errorf("round %d, term %d (%v), pod %s/%v: memo says %v, Matches %v", round, i,
						fmt.Sprint(sources[i]), p.Pod.Namespace, p.Pod.Labels, got, want)
				}
			}
		}
	}
	// Pods with equal labels share a key whatever the map's order; a term
	// and a hand-built PodInfo (no key) are matched directly.
	p1 := NewPodInfo(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Labels: map[string]string{"x": "1", "y": "2"}}})
	p2 := NewPodInfo(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Labels: map[string]string{"y": "2", "x": "1"}}})
	if p1.labelsKey != p2.labelsKey {
		t.Error("equal labels got different keys")
	}
	if p3 := NewPodInfo(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Labels: p1.Pod.Labels}}); p3.labelsKey == p1.labelsKey {
		t.Error("pods in different namespaces share a key")
	}
	handMade := &PodInfo{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Labels: map[string]string{"app": "web"}}}}
	if !m.Matches(&terms[2], handMade) {
		t.Error("a PodInfo without a key is not matched")
	}
}
