package framework

// The API's rules the plugins share with the kubelet and the controllers
// (tolerations, node affinity, a pod's priority and requests) come from
// k8s.io/component-helpers, as in kube-scheduler: PodRequests (types.go)
// is its resource rule in the scheduler's units.

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
