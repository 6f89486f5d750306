package job

import (
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// policyMatch is what a Job's pod failure policy says about one failed
// pod: the action of the first rule that matches ("" if none does), and
// for FailJob the message the Job fails with.
type policyMatch struct {
	action  batchv1.PodFailurePolicyAction
	message string
}

// countsAsFailure says whether the failure counts towards backoffLimit
// (and backoffLimitPerIndex): all do but those an Ignore rule matched.
func (m policyMatch) countsAsFailure() bool {
	return m.action != batchv1.PodFailurePolicyActionIgnore
}

// matchPodFailurePolicy evaluates the rules of job's pod failure policy,
// in order, against failed pod p. A rule on exit codes matches a container
// (or init container, optionally only the one named) that terminated with
// a non-zero code In or NotIn its values; a rule on pod conditions matches
// a condition of p with the pattern's type and status.
func matchPodFailurePolicy(job *batchv1.Job, p *corev1.Pod) policyMatch {
	policy := job.Spec.PodFailurePolicy
	if policy == nil {
		return policyMatch{}
	}
	for i, rule := range policy.Rules {
		var message string
		switch {
		case rule.OnExitCodes != nil:
			cs := matchingContainer(p, rule.OnExitCodes)
			if cs == nil {
				continue
			}
			message = fmt.Sprintf("Container %s for pod %s/%s failed with exit code %v matching %v rule at index %d",
				cs.Name, p.Namespace, p.Name, cs.State.Terminated.ExitCode, rule.Action, i)
		case len(rule.OnPodConditions) > 0:
			c := matchingCondition(p, rule.OnPodConditions)
			if c == nil {
				continue
			}
			message = fmt.Sprintf("Pod %s/%s has condition %v matching %v rule at index %d", p.Namespace, p.Name, c.Type, rule.Action, i)
		default:
			continue
		}
		if rule.Action != batchv1.PodFailurePolicyActionFailJob {
			message = ""
		}
		return policyMatch{action: rule.Action, message: message}
	}
	return policyMatch{}
}

// matchingContainer returns the first container status of p, regular
// containers before init containers, that matches req.
func matchingContainer(p *corev1.Pod, req *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	for _, statuses := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for i := range statuses {
			cs := &statuses[i]
			term := cs.State.Terminated
			// A container still running or that exited 0 did not fail.
			if term == nil || term.ExitCode == 0 || req.ContainerName != nil && *req.ContainerName != cs.Name {
				continue
			}
			listed := slices.Contains(req.Values, term.ExitCode)
			switch req.Operator {
			case batchv1.PodFailurePolicyOnExitCodesOpIn:
				if listed {
					return cs
				}
			case batchv1.PodFailurePolicyOnExitCodesOpNotIn:
				if !listed {
					return cs
				}
			}
		}
	}
	return nil
}

// matchingCondition returns the first condition of p that one of the
// patterns names with its status.
func matchingCondition(p *corev1.Pod, patterns []batchv1.PodFailurePolicyOnPodConditionsPattern) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		for _, pat := range patterns {
			if c.Type == pat.Type && c.Status == pat.Status {
				return c
			}
		}
	}
	return nil
}
