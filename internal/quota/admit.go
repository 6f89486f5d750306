package quota

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Admit decides the create of obj (of resource.group), or with old its
// update from old, against the quotas of its namespace, as upstream's
// ResourceQuota admission: each quota that covers obj and limits
// something obj uses must have usage stats for it, every container must
// name cpu and memory a quota limits, and used + requested must stay
// within hard for every quota. An update requests only what obj uses
// beyond old (a Service turned NodePort, a claim grown). It returns
// copies of the quotas to charge, with status.used raised by that, or an
// error to answer as 403 (nil, nil: nothing to charge).
func Admit(resource, group string, obj, old runtime.Object, quotas []*corev1.ResourceQuota, now time.Time) ([]*corev1.ResourceQuota, error) {
	var covering []*corev1.ResourceQuota
	for _, q := range quotas {
		if !MatchesScopes(q, obj) {
			continue
		}
		restricted := Matching(resource, group, Names(q.Status.Hard))
		if len(restricted) == 0 {
			continue
		}
		if pod, ok := obj.(*corev1.Pod); ok {
			if err := podConstraints(pod, restricted); err != nil {
				return nil, fmt.Errorf("failed quota: %s: %w", q.Name, err)
			}
		}
		var unknown []string
		for _, r := range restricted {
			if _, ok := q.Status.Used[r]; !ok {
				unknown = append(unknown, string(r))
			}
		}
		if len(unknown) > 0 {
			return nil, fmt.Errorf("status unknown for quota: %s, resources: %s", q.Name, strings.Join(unknown, ","))
		}
		covering = append(covering, q)
	}
	if len(covering) == 0 {
		return nil, nil
	}
	delta := Usage(resource, group, obj, now)
	if old != nil {
		delta = Subtract(delta, Usage(resource, group, old, now))
	}
	for k, v := range delta {
		if v.Sign() <= 0 {
			delete(delta, k)
		}
	}
	var charged []*corev1.ResourceQuota
	for _, q := range covering {
		requested := Mask(delta, Names(q.Status.Hard))
		if len(requested) == 0 {
			continue
		}
		used := q.Status.Used.DeepCopy()
		Add(used, requested)
		var exceeded []corev1.ResourceName
		for _, k := range Names(requested) {
			if u := used[k]; u.Cmp(q.Status.Hard[k]) > 0 {
				exceeded = append(exceeded, k)
			}
		}
		if len(exceeded) > 0 {
			return nil, fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s", q.Name,
				String(Mask(requested, exceeded)), String(Mask(q.Status.Used, exceeded)), String(Mask(q.Status.Hard, exceeded)))
		}
		c := q.DeepCopy()
		c.Status.Used = used
		charged = append(charged, c)
	}
	return charged, nil
}

// ChargesOnUpdate reports whether an update of resource.group can change
// what it charges, so that quota admission runs on it too: as upstream's
// evaluators, a Service (its type and ports) and a claim (its storage
// request, grown by a resize). Other kinds are charged on create only.
func ChargesOnUpdate(resource, group string) bool {
	return group == "" && (resource == "services" || resource == "persistentvolumeclaims")
}
