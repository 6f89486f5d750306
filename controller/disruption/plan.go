// Package disruption keeps PodDisruptionBudget status current, which the
// apiserver's eviction reads (status.disruptionsAllowed):
//
//	pdb/pod event ─▶ queue(pdb) ─▶ pods matching its selector
//	   ─▶ expected pods: minAvailable as a number → the matching pods;
//	      otherwise → the scale of their controllers (RC, Deployment, RS, StatefulSet,
//	      else any kind's scale subresource)
//	   ─▶ Plan: event NoControllers when a percentage or maxUnavailable needs a scale it lacks;
//	      Compute: desiredHealthy, currentHealthy (ready, not being deleted),
//	      disruptionsAllowed = max(0, current − desired), condition DisruptionAllowed
//	   ─▶ the actions through a framework.Sink: the event, UpdateStatus if the status changed
//	   ─▶ requeue when a recorded eviction times out
package disruption

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik/controller/framework"
)

// DisruptedPodTimeout is how long an eviction the apiserver recorded in
// status.disruptedPods is trusted to show up as a deletion.
const DisruptedPodTimeout = 2 * time.Minute

// Condition reasons, as in Kubernetes.
const (
	ReasonSufficientPods   = policyv1.SufficientPodsReason
	ReasonInsufficientPods = policyv1.InsufficientPodsReason
	ReasonSyncFailed       = policyv1.SyncFailedReason
)

// Input is what one computation needs.
type Input struct {
	PDB *policyv1.PodDisruptionBudget
	// Pods are the pods matching the selector.
	Pods []*corev1.Pod
	// ControllerScale is the sum of spec.replicas over the distinct
	// controllers of Pods; ScaleErr says why it could not be found (a
	// noControllersError from errNoController brings the NoControllers
	// event).
	ControllerScale int32
	ScaleErr        error
	Now             time.Time
}

// ActionType says what an Action does.
type ActionType string

// The actions of a sync.
const (
	// RecordNoControllers records the event NoControllers: the budget
	// needs its pods' controllers' scale, which Message says is unknown.
	RecordNoControllers ActionType = "RecordNoControllers"
	// UpdateStatus writes PDB, which has its new status.
	UpdateStatus ActionType = "UpdateStatus"
)

// Action is one step for the driver, about PDB.
type Action struct {
	Type    ActionType
	PDB     *policyv1.PodDisruptionBudget
	Message string
}

// String names the action and its budget.
func (a Action) String() string { return string(a.Type) + " " + a.PDB.Namespace + "/" + a.PDB.Name }

// Output is what to do about one budget, and when to look again.
type Output = framework.Output[Action]

// Plan returns the writes for in.PDB: the new status if it changed,
// after the event of a scale it needed and found no controller for; and to look again
// when the first eviction the apiserver recorded times out.
func Plan(in Input) Output {
	var out Output
	pdb := in.PDB
	if errors.As(in.ScaleErr, new(noControllersError)) && (pdb.Spec.MaxUnavailable != nil || pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type != intstr.Int) {
		out.Actions = append(out.Actions, Action{Type: RecordNoControllers, PDB: pdb, Message: in.ScaleErr.Error()})
	}
	st := Compute(in)
	for _, t := range st.DisruptedPods {
		if d := t.Add(DisruptedPodTimeout).Sub(in.Now); out.RequeueAfter == 0 || d < out.RequeueAfter {
			out.RequeueAfter = d
		}
	}
	if !Equal(pdb.Status, st) {
		cp := pdb.DeepCopy()
		cp.Status = st
		out.Actions = append(out.Actions, Action{Type: UpdateStatus, PDB: cp})
	}
	return out
}

// Compute returns the new status of in.PDB.
func Compute(in Input) policyv1.PodDisruptionBudgetStatus {
	pdb := in.PDB
	st := policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation,
		Conditions: append([]metav1.Condition(nil), pdb.Status.Conditions...)}
	// Keep recent evictions the apiserver recorded, for pods still there.
	present := map[string]*corev1.Pod{}
	for _, p := range in.Pods {
		present[p.Name] = p
	}
	for name, t := range pdb.Status.DisruptedPods {
		p := present[name]
		if p == nil || p.DeletionTimestamp != nil || t.Add(DisruptedPodTimeout).Before(in.Now) {
			continue
		}
		if st.DisruptedPods == nil {
			st.DisruptedPods = map[string]metav1.Time{}
		}
		st.DisruptedPods[name] = t
	}
	for _, p := range in.Pods {
		if _, disrupted := st.DisruptedPods[p.Name]; disrupted {
			continue
		}
		if p.DeletionTimestamp == nil && framework.IsPodReady(p) {
			st.CurrentHealthy++
		}
	}
	expected, desired, err := desiredHealthy(in)
	if err != nil {
		st.DisruptionsAllowed = 0
		st.CurrentHealthy, st.DesiredHealthy, st.ExpectedPods = pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy, pdb.Status.ExpectedPods
		setCondition(&st, metav1.ConditionFalse, ReasonSyncFailed, err.Error(), in.Now)
		return st
	}
	st.ExpectedPods, st.DesiredHealthy = expected, desired
	st.DisruptionsAllowed = max(0, st.CurrentHealthy-desired)
	if st.DisruptionsAllowed > 0 {
		setCondition(&st, metav1.ConditionTrue, ReasonSufficientPods, "", in.Now)
	} else {
		setCondition(&st, metav1.ConditionFalse, ReasonInsufficientPods, "", in.Now)
	}
	return st
}

// desiredHealthy returns the expected pod count and how many must stay
// healthy: percentages and maxUnavailable round up, as in Kubernetes.
func desiredHealthy(in Input) (expected, desired int32, err error) {
	spec := in.PDB.Spec
	switch {
	case spec.MaxUnavailable != nil:
		if in.ScaleErr != nil {
			return 0, 0, in.ScaleErr
		}
		expected = in.ControllerScale
		mu, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, err
		}
		return expected, max(0, expected-int32(mu)), nil
	case spec.MinAvailable != nil && spec.MinAvailable.Type == intstr.Int:
		return int32(len(in.Pods)), spec.MinAvailable.IntVal, nil
	case spec.MinAvailable != nil:
		if in.ScaleErr != nil {
			return 0, 0, in.ScaleErr
		}
		expected = in.ControllerScale
		ma, err := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, 0, err
		}
		return expected, int32(ma), nil
	}
	return int32(len(in.Pods)), 0, nil
}

func setCondition(st *policyv1.PodDisruptionBudgetStatus, status metav1.ConditionStatus, reason, msg string, now time.Time) {
	c := metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: st.ObservedGeneration, LastTransitionTime: metav1.NewTime(now)}
	for i, x := range st.Conditions {
		if x.Type == c.Type {
			if x.Status == c.Status {
				c.LastTransitionTime = x.LastTransitionTime
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

// Equal reports whether two statuses say the same.
func Equal(a, b policyv1.PodDisruptionBudgetStatus) bool {
	return apiequality.Semantic.DeepEqual(a, b)
}

// noControllersError says that a pod has no controller, or none whose
// scale was found: the event NoControllers. Other scale errors (a kind
// without a scale subresource, a failed read) only fail the budget safe.
type noControllersError struct{ pod string }

func (e noControllersError) Error() string {
	return fmt.Sprintf("found no controllers for pod %q", e.pod)
}

// errNoController explains a pod whose controller's scale is unknown.
func errNoController(p *corev1.Pod) error { return noControllersError{p.Name} }
