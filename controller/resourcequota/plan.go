package resourcequota

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik/controller/framework"
)

// ActionType says what an Action does.
type ActionType string

// UpdateStatus writes a quota's status.
const UpdateStatus ActionType = "UpdateStatus"

// Action is one write.
type Action struct {
	Type ActionType
	// Quota is the quota with the status to write.
	Quota *corev1.ResourceQuota
}

// String names the action and its quota, as "UpdateStatus ns/q".
func (a Action) String() string { return string(a.Type) + " " + a.Quota.Namespace + "/" + a.Quota.Name }

// Output is what a namespace's quotas need.
type Output = framework.Output[Action]

// Plan decides which quotas of one namespace need their status
// rewritten from objs, the namespace's objects, and to look at them
// again in ResyncPeriod; a namespace without quotas needs nothing.
func Plan(quotas []*corev1.ResourceQuota, objs Objects, now time.Time) Output {
	var out Output
	if len(quotas) == 0 {
		return out
	}
	for _, q := range quotas {
		want := Status(q, objs, now)
		if !StatusChanged(q.Status, want) {
			continue
		}
		next := q.DeepCopy()
		next.Status = want
		out.Actions = append(out.Actions, Action{Type: UpdateStatus, Quota: next})
	}
	out.RequeueAfter = ResyncPeriod
	return out
}
