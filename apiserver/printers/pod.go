package printers

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeUnreachablePodReason is the Status.Reason the node lifecycle controller
// gives pods on a node that stopped reporting.
const nodeUnreachablePodReason = "NodeLost"

// Row conditions let clients tell finished pods apart without parsing STATUS.
var (
	podSucceededConditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodSucceeded), Message: "The pod has completed successfully."}}
	podFailedConditions    = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodFailed), Message: "The pod failed."}}
)

// podRow prints NAME READY STATUS RESTARTS AGE IP NODE NOMINATED-NODE READINESS-GATES.
func podRow(pod *corev1.Pod, now time.Time) metav1.TableRow {
	st := podStatus(pod)
	restarts := strconv.Itoa(st.restarts)
	if st.restarts != 0 && !st.lastRestart.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", st.restarts, since(st.lastRestart, now))
	}
	r := row(
		pod.Name,
		fmt.Sprintf("%d/%d", st.ready, st.total),
		st.reason,
		restarts,
		since(pod.CreationTimestamp.Time, now),
		orNone(podIP(pod)),
		orNone(pod.Spec.NodeName),
		orNone(pod.Status.NominatedNodeName),
		readinessGates(pod),
	)
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		r.Conditions = podSucceededConditions
	case corev1.PodFailed:
		r.Conditions = podFailedConditions
	}
	return r
}

// podSummary is what the READY, STATUS and RESTARTS columns show.
type podSummary struct {
	ready, total int
	reason       string
	restarts     int
	lastRestart  time.Time
}

// podStatus works out READY, STATUS and RESTARTS. The order of the checks is
// upstream's and decides which reason wins, so keep it.
func podStatus(pod *corev1.Pod) podSummary {
	s := podSummary{total: len(pod.Spec.Containers), reason: string(pod.Status.Phase)}
	if pod.Status.Reason != "" {
		s.reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			s.reason = corev1.PodReasonSchedulingGated
		}
	}

	// Sidecars (restartable init containers) run alongside the app
	// containers, so they count towards READY.
	initSpecs := make(map[string]*corev1.Container, len(pod.Spec.InitContainers))
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		initSpecs[c.Name] = c
		if isSidecar(c) {
			s.total++
		}
	}

	// While the pod initializes, all init containers' restarts count; once
	// it runs, only the sidecars' do, plus the app containers'.
	var sidecarRestarts int
	var lastSidecarRestart time.Time
	initializing := false
	for i, cs := range pod.Status.InitContainerStatuses {
		sidecar := isSidecar(initSpecs[cs.Name])
		s.restarts += int(cs.RestartCount)
		s.lastRestart = laterTermination(s.lastRestart, cs)
		if sidecar {
			sidecarRestarts += int(cs.RestartCount)
			lastSidecarRestart = laterTermination(lastSidecarRestart, cs)
		}
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			continue
		case sidecar && cs.Started != nil && *cs.Started:
			if cs.Ready {
				s.ready++
			}
			continue
		case cs.State.Terminated != nil:
			t := cs.State.Terminated
			switch {
			case t.Reason != "":
				s.reason = "Init:" + t.Reason
			case t.Signal != 0:
				s.reason = fmt.Sprintf("Init:Signal:%d", t.Signal)
			default:
				s.reason = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
			}
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing":
			s.reason = "Init:" + cs.State.Waiting.Reason
		default:
			s.reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		// The first init container that has not succeeded decides STATUS.
		initializing = true
		break
	}

	if !initializing || hasCondition(pod.Status.Conditions, corev1.PodInitialized) {
		s.restarts, s.lastRestart = sidecarRestarts, lastSidecarRestart
		hasRunning := false
		// Backwards, so the first container with a reason wins.
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := pod.Status.ContainerStatuses[i]
			s.restarts += int(cs.RestartCount)
			s.lastRestart = laterTermination(s.lastRestart, cs)
			switch {
			case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
				s.reason = cs.State.Waiting.Reason
			case cs.State.Terminated != nil && cs.State.Terminated.Reason != "":
				s.reason = cs.State.Terminated.Reason
			case cs.State.Terminated != nil && cs.State.Terminated.Signal != 0:
				s.reason = fmt.Sprintf("Signal:%d", cs.State.Terminated.Signal)
			case cs.State.Terminated != nil:
				s.reason = fmt.Sprintf("ExitCode:%d", cs.State.Terminated.ExitCode)
			case cs.Ready && cs.State.Running != nil:
				hasRunning = true
				s.ready++
			}
		}
		// One container finished but another still runs: the pod is not done.
		if s.reason == "Completed" && hasRunning {
			if hasCondition(pod.Status.Conditions, corev1.PodReady) {
				s.reason = "Running"
			} else {
				s.reason = "NotReady"
			}
		}
	}

	switch {
	case pod.DeletionTimestamp != nil && pod.Status.Reason == nodeUnreachablePodReason:
		s.reason = "Unknown"
	case pod.DeletionTimestamp != nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
		s.reason = "Terminating"
	}
	return s
}

// isSidecar reports whether c is a restartable init container.
func isSidecar(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// laterTermination returns the later of last and the time cs last finished.
func laterTermination(last time.Time, cs corev1.ContainerStatus) time.Time {
	if t := cs.LastTerminationState.Terminated; t != nil && last.Before(t.FinishedAt.Time) {
		return t.FinishedAt.Time
	}
	return last
}

// hasCondition reports whether the pod condition of type t is True.
func hasCondition(conditions []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podIP picks the IP as the v1-to-internal conversion upstream does:
// status.podIP wins over status.podIPs, which older kubelets did not set.
func podIP(pod *corev1.Pod) string {
	if pod.Status.PodIP != "" {
		return pod.Status.PodIP
	}
	if len(pod.Status.PodIPs) > 0 {
		return pod.Status.PodIPs[0].IP
	}
	return ""
}

// readinessGates shows how many readiness gates are True, as "1/2".
func readinessGates(pod *corev1.Pod) string {
	if len(pod.Spec.ReadinessGates) == 0 {
		return "<none>"
	}
	trueGates := 0
	for _, g := range pod.Spec.ReadinessGates {
		for _, c := range pod.Status.Conditions {
			if c.Type == g.ConditionType {
				if c.Status == corev1.ConditionTrue {
					trueGates++
				}
				break
			}
		}
	}
	return fmt.Sprintf("%d/%d", trueGates, len(pod.Spec.ReadinessGates))
}

// orNone shows an unset value as "<none>", as kubectl users expect.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
