package resourcequota

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	"minik/internal/quota"
)

// Kind names one counted resource: its plural and API group.
type Kind struct{ Resource, Group string }

// Objects are the objects of one namespace, by kind. Only the kinds
// that were observed have an entry: a kind the apiserver does not serve
// has none.
type Objects map[Kind][]runtime.Object

// kindOf is the kind whose objects count toward name
// (internal/quota.CountedBy); ok is false if none does.
func kindOf(name corev1.ResourceName) (Kind, bool) {
	r, g, ok := quota.CountedBy(name)
	return Kind{r, g}, ok
}

// Kinds returns the kinds whose objects count toward a name of the
// quotas' spec.hard, each once and sorted: what a sync of their
// namespace observes.
func Kinds(quotas []*corev1.ResourceQuota) []Kind {
	var out []Kind
	for _, q := range quotas {
		for name := range q.Spec.Hard {
			if k, ok := kindOf(name); ok && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.SortFunc(out, func(a, b Kind) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource))
	})
	return out
}

// counts reports whether a name of q's spec.hard counts objects of kind.
func counts(q *corev1.ResourceQuota, kind Kind) bool {
	for name := range q.Spec.Hard {
		if k, ok := kindOf(name); ok && k == kind {
			return true
		}
	}
	return false
}

// Status computes what a quota's status should be: hard is spec.hard,
// and used, for every hard name whose kind objs holds, the usage of the
// objects the quota covers (the same rules internal/quota.Admit charges
// by). A name of a kind objs lacks (one the apiserver does not serve,
// or a name nothing counts toward) keeps the usage it has, or stays
// without one, as upstream's: a usage is computed only from objects
// that were observed.
func Status(q *corev1.ResourceQuota, objs Objects, now time.Time) corev1.ResourceQuotaStatus {
	hard := q.Spec.Hard.DeepCopy()
	names := quota.Names(hard)
	used := corev1.ResourceList{}
	for _, n := range names {
		if k, ok := kindOf(n); ok && observed(objs, k) {
			used[n] = *resource.NewQuantity(0, hard[n].Format)
		} else if u, ok := q.Status.Used[n]; ok {
			used[n] = u.DeepCopy()
		}
	}
	for kind, list := range objs {
		matching := quota.Matching(kind.Resource, kind.Group, names)
		if len(matching) == 0 {
			continue
		}
		for _, o := range list {
			if !quota.MatchesScopes(q, o) {
				continue
			}
			quota.Add(used, quota.Mask(quota.Usage(kind.Resource, kind.Group, o, now), matching))
		}
	}
	return corev1.ResourceQuotaStatus{Hard: hard, Used: used}
}

func observed(objs Objects, k Kind) bool {
	_, ok := objs[k]
	return ok
}

// StatusChanged reports whether the stored status differs from want.
func StatusChanged(have, want corev1.ResourceQuotaStatus) bool {
	return !equality.Semantic.DeepEqual(have.Hard, want.Hard) || !equality.Semantic.DeepEqual(have.Used, want.Used)
}

// NeedsLiveList reports whether the usage of kind that quota q should
// have (want) must come from a live list rather than from a cache at
// resourceVersion cacheRev: a create commits its object and its charge
// at one revision, so a cache older than the quota may lack a charged
// object. A usage is lowered only from a list at least as new as q.
func NeedsLiveList(q *corev1.ResourceQuota, want corev1.ResourceQuotaStatus, kind Kind, cacheRev int64) bool {
	return cacheRev < parseRV(q.ResourceVersion) && Lowers(q, want, kind)
}

// Lowers reports whether want would lower a usage of q that objects of
// kind count toward.
func Lowers(q *corev1.ResourceQuota, want corev1.ResourceQuotaStatus, kind Kind) bool {
	for _, name := range quota.Matching(kind.Resource, kind.Group, quota.Names(want.Used)) {
		have, ok := q.Status.Used[name]
		if w := want.Used[name]; ok && w.Cmp(have) < 0 {
			return true
		}
	}
	return false
}
