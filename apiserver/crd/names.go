package crd

import (
	"fmt"
	"slices"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GroupNames are names already taken in a group: by another CRD's
// accepted names or by a built-in resource.
type GroupNames struct {
	Resources map[string]bool // plurals, singulars and short names
	Kinds     map[string]bool // kinds and list kinds
}

// NewGroupNames returns an empty set.
func NewGroupNames() GroupNames {
	return GroupNames{Resources: map[string]bool{}, Kinds: map[string]bool{}}
}

// Add records the names of one resource.
func (g GroupNames) Add(n apiextv1.CustomResourceDefinitionNames) {
	for _, r := range append([]string{n.Plural, n.Singular}, n.ShortNames...) {
		if r != "" {
			g.Resources[r] = true
		}
	}
	for _, k := range []string{n.Kind, n.ListKind} {
		if k != "" {
			g.Kinds[k] = true
		}
	}
}

// Status computes a CRD's status as upstream's naming and establishing
// controllers do: the requested names are accepted unless another
// resource of the group holds one of them (NamesAccepted False with
// PluralConflict, SingularConflict, ShortNamesConflict, KindConflict or
// ListKindConflict, and the old accepted names kept); a CRD whose names
// were accepted once is Established. taken must not include c's own
// names. The storage version joins storedVersions.
func Status(c *apiextv1.CustomResourceDefinition, taken GroupNames, now metav1.Time) apiextv1.CustomResourceDefinitionStatus {
	st := *c.Status.DeepCopy()
	req := c.Spec.Names
	reason, msg := "", ""
	conflict := func(r, name string) {
		if reason == "" {
			reason, msg = r, fmt.Sprintf("%q is already in use", name)
		}
	}
	if taken.Resources[req.Plural] {
		conflict("PluralConflict", req.Plural)
	}
	if req.Singular != "" && taken.Resources[req.Singular] {
		conflict("SingularConflict", req.Singular)
	}
	for _, s := range req.ShortNames {
		if taken.Resources[s] {
			conflict("ShortNamesConflict", s)
		}
	}
	if taken.Kinds[req.Kind] {
		conflict("KindConflict", req.Kind)
	}
	if taken.Kinds[req.ListKind] {
		conflict("ListKindConflict", req.ListKind)
	}
	accepted := apiextv1.CustomResourceDefinitionCondition{Type: apiextv1.NamesAccepted, Status: apiextv1.ConditionTrue,
		Reason: "NoConflicts", Message: "no conflicts found"}
	if reason != "" {
		accepted.Status, accepted.Reason, accepted.Message = apiextv1.ConditionFalse, reason, msg
	} else {
		st.AcceptedNames = *req.DeepCopy()
	}
	setCondition(&st, accepted, now)
	established := apiextv1.CustomResourceDefinitionCondition{Type: apiextv1.Established, Status: apiextv1.ConditionTrue,
		Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"}
	if st.AcceptedNames.Plural == "" {
		established.Status, established.Reason, established.Message = apiextv1.ConditionFalse, "NotAccepted", "not all names are accepted"
	}
	if !conditionIs(&st, apiextv1.Established, apiextv1.ConditionTrue) || established.Status == apiextv1.ConditionTrue {
		setCondition(&st, established, now)
	}
	for _, v := range c.Spec.Versions {
		if v.Storage && !slices.Contains(st.StoredVersions, v.Name) {
			st.StoredVersions = append(st.StoredVersions, v.Name)
		}
	}
	if st.StoredVersions == nil {
		st.StoredVersions = []string{}
	}
	return st
}

// Terminating is the condition of a CRD whose objects are being removed
// (failed, with the error, when a removal failed).
func Terminating(st *apiextv1.CustomResourceDefinitionStatus, failure error, now metav1.Time) {
	cond := apiextv1.CustomResourceDefinitionCondition{Type: apiextv1.Terminating, Status: apiextv1.ConditionTrue,
		Reason: "InstanceDeletionInProgress", Message: "CustomResource deletion is in progress"}
	if failure != nil {
		cond.Reason, cond.Message = "InstanceDeletionFailed", fmt.Sprintf("could not list instances: %v", failure)
	}
	setCondition(st, cond, now)
}

func conditionIs(st *apiextv1.CustomResourceDefinitionStatus, t apiextv1.CustomResourceDefinitionConditionType, s apiextv1.ConditionStatus) bool {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c.Status == s
		}
	}
	return false
}

// setCondition adds or replaces a condition, keeping its transition time
// when its status did not change.
func setCondition(st *apiextv1.CustomResourceDefinitionStatus, c apiextv1.CustomResourceDefinitionCondition, now metav1.Time) {
	c.LastTransitionTime = now
	for i := range st.Conditions {
		if st.Conditions[i].Type == c.Type {
			if st.Conditions[i].Status == c.Status {
				c.LastTransitionTime = st.Conditions[i].LastTransitionTime
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}
