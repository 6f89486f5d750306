package framework

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// NodeMatchesPod reports whether node satisfies pod's nodeSelector and
// required node affinity (terms ORed, expressions within a term ANDed;
// matchFields on metadata.name).
func NodeMatchesPod(spec *corev1.PodSpec, node *corev1.Node) bool {
	if len(spec.NodeSelector) > 0 && !labels.SelectorFromSet(spec.NodeSelector).Matches(labels.Set(node.Labels)) {
		return false
	}
	if spec.Affinity == nil || spec.Affinity.NodeAffinity == nil || spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	terms := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for _, t := range terms {
		if termMatches(t, node) {
			return true
		}
	}
	return false
}

func termMatches(t corev1.NodeSelectorTerm, node *corev1.Node) bool {
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		return false
	}
	for _, e := range t.MatchExpressions {
		if !requirementMatches(e, labels.Set(node.Labels)) {
			return false
		}
	}
	for _, e := range t.MatchFields {
		if e.Key != "metadata.name" || !requirementMatches(e, labels.Set{"metadata.name": node.Name}) {
			return false
		}
	}
	return true
}

var ops = map[corev1.NodeSelectorOperator]selection.Operator{
	corev1.NodeSelectorOpIn: selection.In, corev1.NodeSelectorOpNotIn: selection.NotIn,
	corev1.NodeSelectorOpExists: selection.Exists, corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	corev1.NodeSelectorOpGt: selection.GreaterThan, corev1.NodeSelectorOpLt: selection.LessThan,
}

func requirementMatches(e corev1.NodeSelectorRequirement, set labels.Set) bool {
	op, ok := ops[e.Operator]
	if !ok {
		return false
	}
	r, err := labels.NewRequirement(e.Key, op, e.Values)
	if err != nil {
		return false
	}
	return r.Matches(set)
}
