package webhook

import (
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Attributes describe one admission request, as upstream's
// admission.Attributes.
type Attributes struct {
	Operation   admissionv1.Operation
	Kind        schema.GroupVersionKind
	Resource    schema.GroupVersionResource
	SubResource string
	// Namespace is the object's namespace; for a Namespace object, its
	// own name (as upstream).
	Namespace string
	Name      string
	// Object is the new object (nil on delete); OldObject the stored one
	// (update and delete). Both are in the version of Resource, with
	// their apiVersion and kind set.
	Object, OldObject runtime.Object
	// Options are the write's CreateOptions, UpdateOptions,
	// DeleteOptions, or a connection's options.
	Options  runtime.Object
	DryRun   bool
	UserInfo authenticationv1.UserInfo
	// NamespaceLabels returns the labels of the request's namespace; it
	// is called only when a webhook has a namespace selector.
	NamespaceLabels func() (map[string]string, error)
	// Equivalents are the other versions the apiserver serves of
	// Resource, through which a matchPolicy Equivalent webhook matches.
	Equivalents []Equivalent
}

// Equivalent is another version of the request's resource, with the
// kind of the request's object (for its subresource) in that version.
type Equivalent struct {
	Resource schema.GroupVersionResource
	Kind     schema.GroupVersionKind
}

// invocation is how a webhook is called: the resource its rule named
// and the kind the object is sent as.
type invocation struct {
	Resource schema.GroupVersionResource
	Kind     schema.GroupVersionKind
}

// exempt reports the requests no webhook is called for: writes of the
// webhook configurations themselves, so that no webhook can lock the
// cluster out of removing it.
func (a *Attributes) exempt() bool {
	return a.Resource.Group == admissionregistrationv1.GroupName &&
		(a.Resource.Resource == "validatingwebhookconfigurations" || a.Resource.Resource == "mutatingwebhookconfigurations")
}

// ruleMatches is upstream's rules.Matcher: operation, group, version,
// resource/subresource (res standing for the request's resource) and
// scope.
func ruleMatches(r *admissionregistrationv1.RuleWithOperations, a *Attributes, res schema.GroupVersionResource) bool {
	if !ruleNames(r, a.Operation, res, a.SubResource) {
		return false
	}
	if r.Scope == nil || *r.Scope == admissionregistrationv1.AllScopes {
		return true
	}
	isNamespace := a.Resource.Group == "" && a.Resource.Resource == "namespaces"
	switch *r.Scope {
	case admissionregistrationv1.NamespacedScope:
		return !isNamespace && a.Namespace != ""
	case admissionregistrationv1.ClusterScope:
		return isNamespace || a.Namespace == ""
	}
	return false
}

// invocationFor is upstream's rule match under the hook's matchPolicy:
// a rule naming the request's resource wins; else, for Equivalent, the
// first rule (in order) naming one of its other versions, whose kind
// the webhook then gets.
func (h *Hook) invocationFor(a *Attributes) (*invocation, bool) {
	for i := range h.Rules {
		if ruleMatches(&h.Rules[i], a, a.Resource) {
			return &invocation{Resource: a.Resource, Kind: a.Kind}, true
		}
	}
	if !h.Equivalent {
		return nil, false
	}
	for i := range h.Rules {
		for _, eq := range a.Equivalents {
			if ruleMatches(&h.Rules[i], a, eq.Resource) {
				return &invocation{Resource: eq.Resource, Kind: eq.Kind}, true
			}
		}
	}
	return nil, false
}

// ruleNames is the part of a rule that needs no object: operation,
// group, version, resource and subresource.
func ruleNames(r *admissionregistrationv1.RuleWithOperations, op admissionv1.Operation, res schema.GroupVersionResource, sub string) bool {
	opMatch := false
	for _, o := range r.Operations {
		if o == admissionregistrationv1.OperationAll || string(o) == string(op) {
			opMatch = true
			break
		}
	}
	if !opMatch || !oneOf(r.APIGroups, res.Group) || !oneOf(r.APIVersions, res.Version) {
		return false
	}
	for _, rs := range r.Resources {
		name, subName, _ := strings.Cut(rs, "/")
		if (name == "*" || name == res.Resource) && (subName == "*" || subName == sub) {
			return true
		}
	}
	return false
}

// MayCall reports whether a webhook of s has a rule naming op on res
// and sub, or (for a matchPolicy Equivalent webhook) on one of the other
// versions of res that others returns (nil: none; asked only if such a
// webhook is there): when none has, the caller need not build the
// request (a copy of the object in the client's version) at all. Every
// write asks, so a Set without webhooks answers without any work.
func (s *Set) MayCall(op admissionv1.Operation, res schema.GroupVersionResource, sub string, others func() []schema.GroupVersionResource) bool {
	if s == nil {
		return false
	}
	var otherVersions []schema.GroupVersionResource
	asked := false
	for _, h := range s.Hooks {
		for i := range h.Rules {
			if ruleNames(&h.Rules[i], op, res, sub) {
				return true
			}
			if !h.Equivalent || others == nil {
				continue
			}
			if !asked {
				otherVersions, asked = others(), true
			}
			for _, o := range otherVersions {
				if ruleNames(&h.Rules[i], op, o, sub) {
					return true
				}
			}
		}
	}
	return false
}

func oneOf(list []string, v string) bool {
	for _, s := range list {
		if s == "*" || s == v {
			return true
		}
	}
	return false
}

// matches decides whether h is called for a, and how: a rule matches,
// the object selector selects the new or the old object, and the
// namespace selector selects the request's namespace (cluster-scoped
// objects other than namespaces always pass it). A failed namespace
// lookup is an error.
func (h *Hook) matches(a *Attributes) (*invocation, error) {
	inv, ok := h.invocationFor(a)
	if !ok {
		return nil, nil
	}
	if !h.ObjectSelector.Empty() && !selects(h.ObjectSelector, a.Object) && !selects(h.ObjectSelector, a.OldObject) {
		return nil, nil
	}
	if h.NamespaceSelector.Empty() {
		return inv, nil
	}
	isNamespace := a.Resource.Group == "" && a.Resource.Resource == "namespaces"
	if a.Namespace == "" && !isNamespace {
		return inv, nil
	}
	var nsLabels map[string]string
	if isNamespace && a.SubResource == "" && (a.Operation == admissionv1.Create || a.Operation == admissionv1.Update) {
		// The namespace being written: its new labels (the stored
		// namespace has not got them yet).
		m, err := meta.Accessor(a.Object)
		if err != nil {
			return nil, err
		}
		nsLabels = m.GetLabels()
	} else {
		var err error
		if nsLabels, err = a.NamespaceLabels(); err != nil {
			return nil, err
		}
	}
	if !h.NamespaceSelector.Matches(labels.Set(nsLabels)) {
		return nil, nil
	}
	return inv, nil
}

func selects(sel labels.Selector, obj runtime.Object) bool {
	if obj == nil {
		return false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	return sel.Matches(labels.Set(m.GetLabels()))
}
