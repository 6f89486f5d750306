package framework

import (
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// ToleratesTaint reports whether one toleration tolerates a taint, by
// Kubernetes' own rules (k8s.io/api's Toleration.ToleratesTaint):
//   - an empty effect matches every effect;
//   - an empty key with operator Exists matches every key;
//   - operator Exists ignores the value; Equal (the default) compares it.
//
// The alpha operators Lt and Gt (feature TaintTolerationComparisonOperators)
// are off, as in Kubernetes by default: they tolerate nothing.
func ToleratesTaint(tol *corev1.Toleration, taint *corev1.Taint) bool {
	return tol.ToleratesTaint(logr.Discard(), taint, false)
}

// TolerationsTolerateTaint reports whether any of tols tolerates taint.
func TolerationsTolerateTaint(tols []corev1.Toleration, taint *corev1.Taint) bool {
	for i := range tols {
		if ToleratesTaint(&tols[i], taint) {
			return true
		}
	}
	return false
}

// FindUntoleratedTaint returns the first taint accepted by include that
// none of tols tolerates.
func FindUntoleratedTaint(taints []corev1.Taint, tols []corev1.Toleration, include func(*corev1.Taint) bool) (*corev1.Taint, bool) {
	for i := range taints {
		t := &taints[i]
		if include != nil && !include(t) {
			continue
		}
		if !TolerationsTolerateTaint(tols, t) {
			return t, true
		}
	}
	return nil, false
}

// NodeSelector is a list of nodeSelectorTerms parsed once, to be matched
// against many nodes. Terms are ORed; within a term every expression and
// field must match. A term with no requirement, or an invalid one, matches
// nothing, as in Kubernetes.
type NodeSelector struct {
	terms []nodeSelectorTerm
}

type nodeSelectorTerm struct {
	labels labels.Selector // nil: no label expressions
	fields []corev1.NodeSelectorRequirement
	valid  bool
}

// NewNodeSelector parses terms.
func NewNodeSelector(terms []corev1.NodeSelectorTerm) *NodeSelector {
	ns := &NodeSelector{terms: make([]nodeSelectorTerm, len(terms))}
	for i := range terms {
		ns.terms[i] = newNodeSelectorTerm(&terms[i])
	}
	return ns
}

func newNodeSelectorTerm(t *corev1.NodeSelectorTerm) nodeSelectorTerm {
	out := nodeSelectorTerm{fields: t.MatchFields, valid: len(t.MatchExpressions)+len(t.MatchFields) > 0}
	if len(t.MatchExpressions) > 0 {
		sel, ok := nodeSelectorRequirementsAsSelector(t.MatchExpressions)
		out.labels, out.valid = sel, out.valid && ok
	}
	return out
}

func (t *nodeSelectorTerm) match(node *corev1.Node) bool {
	if !t.valid || t.labels != nil && !t.labels.Matches(labels.Set(node.Labels)) {
		return false
	}
	for _, r := range t.fields {
		if !matchField(node, r) {
			return false
		}
	}
	return true
}

// Match reports whether node matches any term.
func (ns *NodeSelector) Match(node *corev1.Node) bool {
	for i := range ns.terms {
		if ns.terms[i].match(node) {
			return true
		}
	}
	return false
}

// MatchNodeSelectorTerms reports whether node matches any of terms. To
// match many nodes, parse the terms once with NewNodeSelector.
func MatchNodeSelectorTerms(node *corev1.Node, terms []corev1.NodeSelectorTerm) bool {
	return NewNodeSelector(terms).Match(node)
}

// MatchNodeSelectorTerm reports whether node matches one term.
func MatchNodeSelectorTerm(node *corev1.Node, term *corev1.NodeSelectorTerm) bool {
	t := newNodeSelectorTerm(term)
	return t.match(node)
}

func nodeSelectorRequirementsAsSelector(reqs []corev1.NodeSelectorRequirement) (labels.Selector, bool) {
	sel := labels.NewSelector()
	for _, r := range reqs {
		var op selection.Operator
		switch r.Operator {
		case corev1.NodeSelectorOpIn:
			op = selection.In
		case corev1.NodeSelectorOpNotIn:
			op = selection.NotIn
		case corev1.NodeSelectorOpExists:
			op = selection.Exists
		case corev1.NodeSelectorOpDoesNotExist:
			op = selection.DoesNotExist
		case corev1.NodeSelectorOpGt:
			op = selection.GreaterThan
		case corev1.NodeSelectorOpLt:
			op = selection.LessThan
		default:
			return nil, false
		}
		req, err := labels.NewRequirement(r.Key, op, r.Values)
		if err != nil {
			return nil, false
		}
		sel = sel.Add(*req)
	}
	return sel, true
}

// matchField supports the one field Kubernetes allows: metadata.name,
// with In or NotIn and one value.
func matchField(node *corev1.Node, r corev1.NodeSelectorRequirement) bool {
	if r.Key != "metadata.name" || len(r.Values) != 1 {
		return false
	}
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return node.Name == r.Values[0]
	case corev1.NodeSelectorOpNotIn:
		return node.Name != r.Values[0]
	}
	return false
}

// GetPodPriority returns spec.priority, or 0.
func GetPodPriority(pod *corev1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// DefaultNormalizeScore maps scores to 0..maxPriority in proportion to the
// largest one; with reverse, the largest becomes 0 and 0 becomes
// maxPriority. All zero scores stay 0 (or all become maxPriority when
// reversed).
func DefaultNormalizeScore(maxPriority int64, reverse bool, scores []NodeScore) *Status {
	var top int64
	for _, s := range scores {
		top = max(top, s.Score)
	}
	if top == 0 {
		if reverse {
			for i := range scores {
				scores[i].Score = maxPriority
			}
		}
		return nil
	}
	for i := range scores {
		s := maxPriority * scores[i].Score / top
		if reverse {
			s = maxPriority - s
		}
		scores[i].Score = s
	}
	return nil
}
