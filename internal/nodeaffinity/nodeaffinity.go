// Package nodeaffinity is minik's one implementation of "does this node
// match this node selector": a pod's spec.nodeSelector and required node
// affinity (scheduler, kubelet admission, DaemonSet controller, topology
// spread), its preferred terms (the scheduler's score), and a
// PersistentVolume's node affinity.
//
// It behaves as k8s.io/component-helpers/scheduling/corev1/nodeaffinity
// (its tests hold the two side by side), but a match allocates nothing:
// component-helpers builds a field set for every node it checks, which was
// most of the scheduler's filter work for a pod with node affinity.
package nodeaffinity

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// nodeNameField is the one field a term's matchFields may name.
const nodeNameField = "metadata.name"

// term is one parsed NodeSelectorTerm: its requirements on labels and on
// fields, ANDed, or why it does not parse.
type term struct {
	labels labels.Selector // nil: no matchExpressions
	fields fields.Selector // nil: no matchFields
	errs   []error
}

// nodeFields shows a node's fields to a fields.Selector without building
// a map; a struct of one pointer fits an interface without an allocation.
type nodeFields struct{ node *corev1.Node }

func (f nodeFields) Has(name string) bool { return name == nodeNameField }
func (f nodeFields) Get(name string) string {
	if name == nodeNameField {
		return f.node.Name
	}
	return ""
}

// matches reports whether node meets every requirement of t. A node
// without a name (a template) is not held to matchFields, as in Kubernetes.
func (t *term) matches(node *corev1.Node) bool {
	if t.labels != nil && !t.labels.Matches(labels.Set(node.Labels)) {
		return false
	}
	if t.fields != nil && node.Name != "" && !t.fields.Matches(nodeFields{node}) {
		return false
	}
	return true
}

// isEmpty: a term with no requirements selects nothing.
func isEmpty(t *corev1.NodeSelectorTerm) bool {
	return len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0
}

func parseTerm(t *corev1.NodeSelectorTerm, path *field.Path) term {
	var out term
	if len(t.MatchExpressions) > 0 {
		sel, errs := labelSelector(t.MatchExpressions, path.Child("matchExpressions"))
		out.labels, out.errs = sel, errs
	}
	if len(t.MatchFields) > 0 {
		sel, errs := fieldSelector(t.MatchFields, path.Child("matchFields"))
		out.fields, out.errs = sel, append(out.errs, errs...)
	}
	return out
}

var labelOperators = map[corev1.NodeSelectorOperator]selection.Operator{
	corev1.NodeSelectorOpIn:           selection.In,
	corev1.NodeSelectorOpNotIn:        selection.NotIn,
	corev1.NodeSelectorOpExists:       selection.Exists,
	corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	corev1.NodeSelectorOpGt:           selection.GreaterThan,
	corev1.NodeSelectorOpLt:           selection.LessThan,
}

var supportedLabelOperators = []corev1.NodeSelectorOperator{
	corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
	corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt,
}

// labelSelector turns matchExpressions into a label selector; apimachinery's
// labels.NewRequirement checks keys and values (Gt and Lt take one integer).
func labelSelector(reqs []corev1.NodeSelectorRequirement, path *field.Path) (labels.Selector, []error) {
	sel := labels.NewSelector()
	var errs []error
	for i, r := range reqs {
		p := path.Index(i)
		op, ok := labelOperators[r.Operator]
		if !ok {
			errs = append(errs, field.NotSupported(p.Child("operator"), r.Operator, supportedLabelOperators))
			continue
		}
		req, err := labels.NewRequirement(r.Key, op, r.Values, field.WithPath(p))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sel = sel.Add(*req)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return sel, nil
}

// fieldSelector turns matchFields into a field selector: In and NotIn,
// each with exactly one value.
func fieldSelector(reqs []corev1.NodeSelectorRequirement, path *field.Path) (fields.Selector, []error) {
	var sels []fields.Selector
	var errs []error
	for i, r := range reqs {
		p := path.Index(i)
		if r.Operator != corev1.NodeSelectorOpIn && r.Operator != corev1.NodeSelectorOpNotIn {
			errs = append(errs, field.NotSupported(p.Child("operator"), r.Operator,
				[]corev1.NodeSelectorOperator{corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn}))
			continue
		}
		if len(r.Values) != 1 {
			errs = append(errs, field.Invalid(p.Child("values"), r.Values, "must have one element"))
			continue
		}
		if r.Operator == corev1.NodeSelectorOpIn {
			sels = append(sels, fields.OneTermEqualSelector(r.Key, r.Values[0]))
		} else {
			sels = append(sels, fields.OneTermNotEqualSelector(r.Key, r.Values[0]))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return fields.AndSelectors(sels...), nil
}

// Selector is a parsed NodeSelector: its terms are ORed. A term that does
// not parse matches no node; its errors are told only when no term
// matches, so one bad term does not stop the others (Kubernetes' "lazy
// error" selector, which the scheduler uses for pods).
type Selector struct {
	terms []term
}

// NewSelector parses ns. Empty terms are dropped: they select nothing.
func NewSelector(ns *corev1.NodeSelector) *Selector {
	path := field.NewPath("nodeSelectorTerms")
	s := &Selector{terms: make([]term, 0, len(ns.NodeSelectorTerms))}
	for i := range ns.NodeSelectorTerms {
		if t := &ns.NodeSelectorTerms[i]; !isEmpty(t) {
			s.terms = append(s.terms, parseTerm(t, path.Index(i)))
		}
	}
	return s
}

// Match reports whether node matches a term. When none does, the error
// holds the parse errors of the terms that could not be checked.
func (s *Selector) Match(node *corev1.Node) (bool, error) {
	if node == nil {
		return false, nil
	}
	var errs []error
	for i := range s.terms {
		t := &s.terms[i]
		if len(t.errs) > 0 {
			errs = append(errs, t.errs...)
			continue
		}
		if t.matches(node) {
			return true, nil
		}
	}
	return false, utilerrors.Flatten(utilerrors.NewAggregate(errs))
}

// MatchNodeSelectorTerms reports whether node matches ns, for a
// PersistentVolume's node affinity (the same lazy errors as a pod's).
func MatchNodeSelectorTerms(node *corev1.Node, ns *corev1.NodeSelector) (bool, error) {
	return NewSelector(ns).Match(node)
}

// RequiredNodeAffinity is what a pod needs of its node: its nodeSelector
// and its required node affinity, both.
type RequiredNodeAffinity struct {
	labels   labels.Selector // nil: no nodeSelector
	selector *Selector       // nil: no required node affinity
}

// GetRequiredNodeAffinity parses a pod's nodeSelector and required node
// affinity.
func GetRequiredNodeAffinity(pod *corev1.Pod) RequiredNodeAffinity {
	return NewRequiredNodeAffinity(pod.Spec.NodeSelector, pod.Spec.Affinity)
}

// NewRequiredNodeAffinity is GetRequiredNodeAffinity for a pod template's
// fields (the DaemonSet controller has no pod yet).
func NewRequiredNodeAffinity(nodeSelector map[string]string, affinity *corev1.Affinity) RequiredNodeAffinity {
	var r RequiredNodeAffinity
	if len(nodeSelector) > 0 {
		r.labels = labels.SelectorFromSet(nodeSelector)
	}
	if affinity != nil && affinity.NodeAffinity != nil && affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		r.selector = NewSelector(affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
	}
	return r
}

// Match reports whether the pod may run on node; the error is the required
// terms' parse errors when none matched.
func (r RequiredNodeAffinity) Match(node *corev1.Node) (bool, error) {
	if r.labels != nil && !r.labels.Matches(labels.Set(node.Labels)) {
		return false, nil
	}
	if r.selector != nil {
		return r.selector.Match(node)
	}
	return true, nil
}

// PreferredSchedulingTerms are a pod's preferred node affinity, parsed.
type PreferredSchedulingTerms struct {
	terms   []term
	weights []int64
}

// NewPreferredSchedulingTerms parses terms, leaving out those of weight 0
// and empty ones; any term that does not parse is an error.
func NewPreferredSchedulingTerms(terms []corev1.PreferredSchedulingTerm) (*PreferredSchedulingTerms, error) {
	out := &PreferredSchedulingTerms{}
	var root *field.Path // the terms' paths start at their index: "[0].matchExpressions[1]"
	var errs []error
	for i := range terms {
		pt := &terms[i]
		if pt.Weight == 0 || isEmpty(&pt.Preference) {
			continue
		}
		t := parseTerm(&pt.Preference, root.Index(i))
		if len(t.errs) > 0 {
			errs = append(errs, t.errs...)
			continue
		}
		out.terms = append(out.terms, t)
		out.weights = append(out.weights, int64(pt.Weight))
	}
	if len(errs) > 0 {
		return nil, utilerrors.Flatten(utilerrors.NewAggregate(errs))
	}
	return out, nil
}

// Score is the sum of the weights of the terms node matches.
func (p *PreferredSchedulingTerms) Score(node *corev1.Node) int64 {
	var score int64
	for i := range p.terms {
		if p.terms[i].matches(node) {
			score += p.weights[i]
		}
	}
	return score
}
