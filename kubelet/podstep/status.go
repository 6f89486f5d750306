package podstep

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik/kubelet/runtime"
	"minik/proto/cri"
)

// Waiting reasons, as Kubernetes names them.
const (
	ReasonContainerCreating          = "ContainerCreating"
	ReasonPodInitializing            = "PodInitializing"
	ReasonCrashLoopBackOff           = "CrashLoopBackOff"
	ReasonErrImagePull               = "ErrImagePull"
	ReasonImagePullBackOff           = "ImagePullBackOff"
	ReasonErrImageNeverPull          = "ErrImageNeverPull"
	ReasonInvalidImageName           = "InvalidImageName"
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	ReasonCreateContainerError       = "CreateContainerError"
	ReasonRunContainerError          = "RunContainerError"
)

const containerIDPrefix = "containerd://"

func timeOf(ns int64) metav1.Time {
	if ns == 0 {
		return metav1.Time{}
	}
	return metav1.NewTime(time.Unix(0, ns).Truncate(time.Second))
}

func terminated(c *cri.ContainerStatus) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{
		ExitCode: c.ExitCode, Reason: c.Reason, Message: c.Message,
		StartedAt: timeOf(c.StartedAt), FinishedAt: timeOf(c.FinishedAt), ContainerID: containerIDPrefix + c.Id,
	}
}

// containerStatus computes one container's status.
func containerStatus(pod *corev1.Pod, c *corev1.Container, obs *runtime.Pod, st *State, now time.Time, waitReason string) corev1.ContainerStatus {
	cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image}
	cur, prev := obs.Latest(c.Name)
	if cur == nil {
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: waitReason}
		if w, ok := st.Waiting[c.Name]; ok {
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
		}
		return cs
	}
	cs.ContainerID = containerIDPrefix + cur.Id
	cs.ImageID = cur.ImageRef
	cs.RestartCount = int32(restartCount(cur))
	if prev != nil && prev.State == cri.ContainerState_CONTAINER_EXITED {
		cs.LastTerminationState.Terminated = terminated(prev)
	}
	started := false
	switch cur.State {
	case cri.ContainerState_CONTAINER_RUNNING:
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: timeOf(cur.StartedAt)}
		started = c.StartupProbe == nil || st.Started[cur.Id]
		cs.Started = &started
		cs.Ready = started && (c.ReadinessProbe == nil || st.Ready[cur.Id])
	case cri.ContainerState_CONTAINER_EXITED:
		cs.Started = &started
		willRestart := shouldRestart(pod.Spec.RestartPolicy, cur) && !IsTerminal(pod, st)
		isInit := false
		for i := range pod.Spec.InitContainers {
			isInit = isInit || pod.Spec.InitContainers[i].Name == c.Name
		}
		if isInit && cur.ExitCode == 0 {
			willRestart = false
		}
		if willRestart {
			// Waiting to restart: the exit is the last state.
			cs.LastTerminationState = corev1.ContainerState{Terminated: terminated(cur)}
			if w, ok := st.Waiting[c.Name]; ok {
				cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
			} else {
				cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: ReasonCrashLoopBackOff,
					Message: backOffMessage(st.BackOff[c.Name], c.Name, pod.Name+"_"+pod.Namespace+"("+string(pod.UID)+")")}
			}
		} else {
			cs.State.Terminated = terminated(cur)
		}
	default:
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: ReasonContainerCreating}
	}
	return cs
}

// ComputeStatus is the pod's status as Kubernetes defines it, from what
// the runtime holds and what the kubelet remembers. It has no side effects.
func ComputeStatus(pod *corev1.Pod, obs *runtime.Pod, st *State, now time.Time, hostIP string) corev1.PodStatus {
	old := pod.Status
	s := corev1.PodStatus{
		HostIP: hostIP, HostIPs: []corev1.HostIP{{IP: hostIP}},
		QOSClass:          QOSClass(pod),
		NominatedNodeName: old.NominatedNodeName,
	}
	if !st.StartTime.IsZero() {
		t := metav1.NewTime(st.StartTime.Truncate(time.Second))
		s.StartTime = &t
	}
	if old.StartTime != nil {
		s.StartTime = old.StartTime
	}
	if st.Rejected != nil {
		s.Phase = corev1.PodFailed
		s.Reason, s.Message = st.Rejected.Reason, st.Rejected.Message
		s.Conditions = conditions(old.Conditions, now, []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		})
		return s
	}
	if len(obs.Sandboxes) > 0 && obs.Sandboxes[0].Ip != "" {
		s.PodIP = obs.Sandboxes[0].Ip
		s.PodIPs = []corev1.PodIP{{IP: s.PodIP}}
	} else if pod.Spec.HostNetwork {
		s.PodIP = hostIP
		s.PodIPs = []corev1.PodIP{{IP: hostIP}}
	} else if old.PodIP != "" {
		s.PodIP, s.PodIPs = old.PodIP, old.PodIPs
	}

	// Init containers.
	initDone := true
	var incomplete []string
	initFailed := false
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := containerStatus(pod, c, obs, st, now, ReasonPodInitializing)
		if i == 0 || initDone {
			if cs.State.Waiting != nil && cs.State.Waiting.Reason == ReasonPodInitializing {
				cs.State.Waiting.Reason = ReasonPodInitializing
			}
		}
		s.InitContainerStatuses = append(s.InitContainerStatuses, cs)
		if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
			initDone = false
			incomplete = append(incomplete, c.Name)
			if cs.State.Terminated != nil && pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
				initFailed = true
			}
		}
	}
	// Ephemeral containers: never restarted, never ready.
	for i := range pod.Spec.EphemeralContainers {
		c := (*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		cs := containerStatus(pod, c, obs, st, now, ReasonContainerCreating)
		if cur, _ := obs.Latest(c.Name); cur != nil && cur.State == cri.ContainerState_CONTAINER_EXITED {
			cs.State = corev1.ContainerState{Terminated: terminated(cur)}
			cs.LastTerminationState = corev1.ContainerState{}
		}
		cs.Ready = false
		s.EphemeralContainerStatuses = append(s.EphemeralContainerStatuses, cs)
	}
	// App containers.
	waitReason := ReasonContainerCreating
	if !initDone {
		waitReason = ReasonPodInitializing
	}
	var running, waitingN, stopped, succeeded int
	var unready []string
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs := containerStatus(pod, c, obs, st, now, waitReason)
		s.ContainerStatuses = append(s.ContainerStatuses, cs)
		switch {
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.LastTerminationState.Terminated != nil:
			stopped++
		default:
			waitingN++
		}
		if !cs.Ready {
			unready = append(unready, c.Name)
		}
	}

	// Phase (Kubernetes' getPhase).
	switch {
	case old.Phase == corev1.PodSucceeded || old.Phase == corev1.PodFailed:
		s.Phase = old.Phase // terminal phases never change
	case st.Evicted != nil:
		s.Phase = corev1.PodFailed
	case initFailed:
		s.Phase = corev1.PodFailed
	case !initDone:
		s.Phase = corev1.PodPending
	case waitingN > 0:
		s.Phase = corev1.PodPending
	case running > 0:
		s.Phase = corev1.PodRunning
	case stopped > 0:
		switch {
		case pod.Spec.RestartPolicy == corev1.RestartPolicyAlways:
			s.Phase = corev1.PodRunning
		case stopped == succeeded:
			s.Phase = corev1.PodSucceeded
		case pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure:
			s.Phase = corev1.PodRunning
		default:
			s.Phase = corev1.PodFailed
		}
	default:
		s.Phase = corev1.PodPending
	}

	// Conditions.
	terminal := s.Phase == corev1.PodSucceeded || s.Phase == corev1.PodFailed
	cond := func(t corev1.PodConditionType, ok bool, reason, msg string) corev1.PodCondition {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionTrue}
		if !ok {
			c.Status, c.Reason, c.Message = corev1.ConditionFalse, reason, msg
		}
		return c
	}
	initCond := cond(corev1.PodInitialized, initDone, "ContainersNotInitialized",
		fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(incomplete, " ")))
	if terminal && initDone {
		initCond.Reason = "PodCompleted"
	}
	readyReason, readyMsg := "ContainersNotReady", fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	if terminal {
		readyReason, readyMsg = "PodCompleted", ""
	}
	allReady := len(unready) == 0 && !terminal && initDone
	conds := []corev1.PodCondition{
		initCond,
		cond(corev1.PodReady, allReady, readyReason, readyMsg),
		cond(corev1.ContainersReady, allReady, readyReason, readyMsg),
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
	}
	if ev := st.Evicted; ev != nil {
		s.Reason, s.Message = ev.Reason, ev.Message
		conds = append(conds, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: corev1.PodReasonTerminationByKubelet, Message: ev.Message})
	}
	s.Conditions = conditions(old.Conditions, now, conds)
	return s
}

// conditions keeps each condition's lastTransitionTime while its status
// does not change, and any condition the kubelet does not own.
func conditions(old []corev1.PodCondition, now time.Time, cur []corev1.PodCondition) []corev1.PodCondition {
	byType := map[corev1.PodConditionType]corev1.PodCondition{}
	for _, c := range old {
		byType[c.Type] = c
	}
	owned := map[corev1.PodConditionType]bool{}
	out := make([]corev1.PodCondition, 0, len(cur)+len(old))
	for _, c := range cur {
		owned[c.Type] = true
		if prev, ok := byType[c.Type]; ok && prev.Status == c.Status {
			c.LastTransitionTime = prev.LastTransitionTime
			if c.Type == corev1.PodScheduled && prev.Reason != "" {
				c = prev
			}
		} else {
			c.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
		}
		out = append(out, c)
	}
	for _, c := range old {
		if !owned[c.Type] {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return condOrder(out[i].Type) < condOrder(out[j].Type) })
	return out
}

func condOrder(t corev1.PodConditionType) int {
	switch t {
	case corev1.PodInitialized:
		return 0
	case corev1.PodReady:
		return 1
	case corev1.ContainersReady:
		return 2
	case corev1.PodScheduled:
		return 3
	}
	return 4
}

// StatusEqual compares statuses ignoring nothing: an unchanged status is
// not sent again.
func StatusEqual(a, b corev1.PodStatus) bool { return apiequality.Semantic.DeepEqual(a, b) }

// QOSClass is Kubernetes' QoS rule: Guaranteed when every container has
// equal cpu and memory requests and limits, BestEffort when none has any,
// else Burstable.
func QOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	anySet, guaranteed := false, true
	for _, c := range all {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[r]
			lim, hasLim := c.Resources.Limits[r]
			if hasReq && !req.IsZero() || hasLim && !lim.IsZero() {
				anySet = true
			}
			if !hasLim || lim.IsZero() {
				guaranteed = false
			} else if hasReq && req.Cmp(lim) != 0 {
				guaranteed = false
			}
		}
	}
	switch {
	case !anySet:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}
