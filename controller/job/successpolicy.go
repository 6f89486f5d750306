package job

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
)

// matchSuccessPolicy returns whether the completed indexes of job meet a
// rule of its success policy (Indexed Jobs only), and then the message of
// the SuccessCriteriaMet condition, which names the first such rule as
// Kubernetes words it: "Matched rules at index 0".
func matchSuccessPolicy(job *batchv1.Job, completed intervals) (string, bool) {
	if job.Spec.SuccessPolicy == nil || !isIndexed(job) || completed.total() == 0 {
		return "", false
	}
	completions := int(*job.Spec.Completions)
	for i, rule := range job.Spec.SuccessPolicy.Rules {
		if ruleMet(rule, completed, completions) {
			return fmt.Sprintf("Matched rules at index %d", i), true
		}
	}
	return "", false
}

// ruleMet reports whether completed meets rule: every index of
// succeededIndexes, or succeededCount of them; without succeededIndexes,
// succeededCount indexes of any.
func ruleMet(rule batchv1.SuccessPolicyRule, completed intervals, completions int) bool {
	if rule.SucceededIndexes == nil {
		return rule.SucceededCount != nil && completed.total() >= int(*rule.SucceededCount)
	}
	required := parseIntervals(*rule.SucceededIndexes, completions)
	if len(required) == 0 {
		return false // as Kubernetes, a rule whose indexes do not parse matches nothing
	}
	done := required.intersect(completed).total()
	return done == required.total() || rule.SucceededCount != nil && done >= int(*rule.SucceededCount)
}
