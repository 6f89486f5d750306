package resourcequota

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	"minik/internal/quota"
)

// Kind names one counted resource: its plural and API group.
type Kind struct{ Resource, Group string }

// Objects are the objects of one namespace, by kind.
type Objects map[Kind][]runtime.Object

// Status computes what a quota's status should be: hard is spec.hard,
// and used, for every hard name, the usage of the objects the quota
// covers (the same rules internal/quota.Admit charges by). Names no
// object counts against are 0.
func Status(q *corev1.ResourceQuota, objs Objects, now time.Time) corev1.ResourceQuotaStatus {
	hard := q.Spec.Hard.DeepCopy()
	names := quota.Names(hard)
	used := corev1.ResourceList{}
	for _, n := range names {
		used[n] = *resource.NewQuantity(0, hard[n].Format)
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
