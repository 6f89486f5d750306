package podstep

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"minik/kubelet/runtime"
)

func condition(s corev1.PodStatus, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func TestComputePodStatus(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pod         *corev1.Pod
		obs         *runtime.Pod
		state       func(*State)
		phase       corev1.PodPhase
		ready       corev1.ConditionStatus
		initialized corev1.ConditionStatus
		waiting     string // reason of the first app container's Waiting state
		terminated  string // reason of its terminated state
		restarts    int32
	}{
		{name: "a pod without containers yet is Pending, ContainerCreating", pod: makePod("a").Obj(), obs: makeObs().Sandbox(true).Obj(),
			phase: corev1.PodPending, ready: corev1.ConditionFalse, initialized: corev1.ConditionTrue, waiting: ReasonContainerCreating},
		{name: "app containers wait with PodInitializing while init runs", pod: makePod("a").Init("i").Obj(), obs: makeObs().Sandbox(true).Running("i", 0).Obj(),
			phase: corev1.PodPending, ready: corev1.ConditionFalse, initialized: corev1.ConditionFalse, waiting: ReasonPodInitializing},
		{name: "a running container without probes is ready", pod: makePod("a").Obj(), obs: makeObs().Sandbox(true).Running("a", 0).Obj(),
			phase: corev1.PodRunning, ready: corev1.ConditionTrue, initialized: corev1.ConditionTrue},
		{name: "a readiness probe not yet passed keeps the pod unready", pod: makePod("a").Readiness().Obj(), obs: makeObs().Sandbox(true).Running("a", 0).Obj(),
			phase: corev1.PodRunning, ready: corev1.ConditionFalse, initialized: corev1.ConditionTrue},
		{name: "a passed readiness probe makes it ready", pod: makePod("a").Readiness().Obj(), obs: makeObs().Sandbox(true).Running("a", 0).Obj(),
			state: func(s *State) { s.Ready["a-0"] = true }, phase: corev1.PodRunning, ready: corev1.ConditionTrue, initialized: corev1.ConditionTrue},
		{name: "a crash-looping container is Running, CrashLoopBackOff, with its restarts", pod: makePod("a").Obj(),
			obs:   makeObs().Sandbox(true).Exited("a", 1, 3, t0).Obj(),
			state: func(s *State) { s.BackOff["a"] = 40 * time.Second },
			phase: corev1.PodRunning, ready: corev1.ConditionFalse, initialized: corev1.ConditionTrue, waiting: ReasonCrashLoopBackOff, restarts: 3},
		{name: "all succeeded with Never is Succeeded", pod: makePod("a").Policy(corev1.RestartPolicyNever).Obj(),
			obs: makeObs().Sandbox(false).Exited("a", 0, 0, t0).Obj(), phase: corev1.PodSucceeded, ready: corev1.ConditionFalse, initialized: corev1.ConditionTrue, terminated: "Completed"},
		{name: "a failure with Never is Failed", pod: makePod("a").Policy(corev1.RestartPolicyNever).Obj(),
			obs: makeObs().Sandbox(false).Exited("a", 3, 0, t0).Obj(), phase: corev1.PodFailed, ready: corev1.ConditionFalse, initialized: corev1.ConditionTrue, terminated: "Error"},
		{name: "a failed init container with Never fails the pod", pod: makePod("a").Init("i").Policy(corev1.RestartPolicyNever).Obj(),
			obs: makeObs().Sandbox(true).Exited("i", 1, 0, t0).Obj(), phase: corev1.PodFailed, ready: corev1.ConditionFalse, initialized: corev1.ConditionFalse, waiting: ReasonPodInitializing},
		{name: "an image pull failure shows as the Waiting reason", pod: makePod("a").Obj(), obs: makeObs().Sandbox(true).Obj(),
			state: func(s *State) { s.Waiting["a"] = Waiting{Reason: ReasonImagePullBackOff} },
			phase: corev1.PodPending, ready: corev1.ConditionFalse, initialized: corev1.ConditionTrue, waiting: ReasonImagePullBackOff},
		{name: "a rejected pod is Failed with the admission reason", pod: makePod("a").Obj(), obs: makeObs().Obj(),
			state: func(s *State) { s.Rejected = &Failure{Reason: "OutOfcpu", Message: "no cpu"} }, phase: corev1.PodFailed},
		{name: "a terminal phase never changes back", pod: makePod("a").Phase(corev1.PodSucceeded).Obj(),
			obs: makeObs().Sandbox(false).Exited("a", 0, 0, t0).Obj(), phase: corev1.PodSucceeded, ready: corev1.ConditionFalse, initialized: corev1.ConditionTrue, terminated: "Completed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := NewState(time.Time{})
			st.StartTime = t0
			if tc.state != nil {
				tc.state(st)
			}
			s := ComputeStatus(tc.pod, tc.obs, st, t0, "192.168.1.1")
			if s.Phase != tc.phase {
				t.Errorf("phase %s, want %s", s.Phase, tc.phase)
			}
			if tc.ready != "" && condition(s, corev1.PodReady) != tc.ready {
				t.Errorf("Ready %s, want %s", condition(s, corev1.PodReady), tc.ready)
			}
			if tc.ready != "" && condition(s, corev1.ContainersReady) != tc.ready {
				t.Errorf("ContainersReady %s, want %s", condition(s, corev1.ContainersReady), tc.ready)
			}
			if tc.initialized != "" && condition(s, corev1.PodInitialized) != tc.initialized {
				t.Errorf("Initialized %s, want %s", condition(s, corev1.PodInitialized), tc.initialized)
			}
			if tc.phase == corev1.PodFailed && tc.ready == "" {
				if s.Reason != "OutOfcpu" {
					t.Errorf("reason %q, want %q", s.Reason, "OutOfcpu")
				}
				return
			}
			if s.HostIP != "192.168.1.1" || s.StartTime == nil || s.QOSClass != corev1.PodQOSBestEffort {
				t.Errorf("hostIP %q startTime %v qos %q", s.HostIP, s.StartTime, s.QOSClass)
			}
			cs := s.ContainerStatuses[0]
			gotWaiting, gotTerm := "", ""
			if cs.State.Waiting != nil {
				gotWaiting = cs.State.Waiting.Reason
			}
			if cs.State.Terminated != nil {
				gotTerm = cs.State.Terminated.Reason
			}
			if gotWaiting != tc.waiting || gotTerm != tc.terminated {
				t.Errorf("state Waiting %q terminated %q, want %q %q", gotWaiting, gotTerm, tc.waiting, tc.terminated)
			}
			if cs.RestartCount != tc.restarts {
				t.Errorf("restartCount %d, want %d", cs.RestartCount, tc.restarts)
			}
			if tc.waiting == ReasonCrashLoopBackOff && cs.LastTerminationState.Terminated == nil {
				t.Error("a crash-looping container has no lastState.terminated")
			}
		})
	}
}

func TestEvictedPodStatus(t *testing.T) {
	msg := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "
	st := NewState(time.Time{})
	st.Evicted = &Failure{Reason: "Evicted", Message: msg}
	s := ComputeStatus(makePod("a").Obj(), makeObs().Sandbox(false).Exited("a", 137, 0, t0).Obj(), st, t0, "192.168.1.1")
	if s.Phase != corev1.PodFailed || s.Reason != "Evicted" || s.Message != msg {
		t.Errorf("phase %s reason %q message %q, want Failed, Evicted and the eviction message", s.Phase, s.Reason, s.Message)
	}
	if term := s.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 137 {
		t.Errorf("container state %+v, want terminated with 137 (restartPolicy Always does not restart an evicted pod)", s.ContainerStatuses[0].State)
	}
	var target *corev1.PodCondition
	for i := range s.Conditions {
		if s.Conditions[i].Type == corev1.DisruptionTarget {
			target = &s.Conditions[i]
		}
	}
	if target == nil || target.Status != corev1.ConditionTrue || target.Reason != "TerminationByKubelet" || target.Message != msg {
		t.Errorf("DisruptionTarget condition %+v, want True, TerminationByKubelet, the message", target)
	}
	if condition(s, corev1.PodReady) != corev1.ConditionFalse {
		t.Errorf("Ready %s, want False", condition(s, corev1.PodReady))
	}
}

func TestQOSClass(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		name string
		res  corev1.ResourceRequirements
		want corev1.PodQOSClass
	}{
		{"no requests or limits is BestEffort", corev1.ResourceRequirements{}, corev1.PodQOSBestEffort},
		{"equal requests and limits is Guaranteed", corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")}}, corev1.PodQOSGuaranteed},
		{"limits alone are Guaranteed", corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")}}, corev1.PodQOSGuaranteed},
		{"a request alone is Burstable", corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}}, corev1.PodQOSBurstable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := makePod("a").Obj()
			p.Spec.Containers[0].Resources = tc.res
			if got := QOSClass(p); got != tc.want {
				t.Errorf("QOSClass = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestEphemeralContainerStatus(t *testing.T) {
	for _, tc := range []struct {
		name       string
		obs        *runtime.Pod
		running    bool
		terminated int32 // exit code, -1 for not terminated
		waiting    string
	}{
		{name: "an ephemeral container not yet started waits in ContainerCreating",
			obs: makeObs().Sandbox(true).Running("a", 0).Obj(), terminated: -1, waiting: ReasonContainerCreating},
		{name: "a running ephemeral container is running but never ready",
			obs: makeObs().Sandbox(true).Running("a", 0).Running("dbg", 0).Obj(), running: true, terminated: -1},
		{name: "an exited ephemeral container is terminated, not crash-looping (it never restarts)",
			obs: makeObs().Sandbox(true).Running("a", 0).Exited("dbg", 2, 0, t0).Obj(), terminated: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := makePod("a").Debug("dbg", "a").Obj()
			s := ComputeStatus(pod, tc.obs, NewState(time.Time{}), t0.Add(time.Minute), "192.0.2.1")
			if len(s.EphemeralContainerStatuses) != 1 {
				t.Fatalf("ephemeral statuses %+v, want one", s.EphemeralContainerStatuses)
			}
			cs := s.EphemeralContainerStatuses[0]
			if cs.Name != "dbg" || cs.Ready || (cs.State.Running != nil) != tc.running {
				t.Errorf("status %+v, want dbg, not ready, running %v", cs, tc.running)
			}
			if got := cs.State.Terminated; (got != nil) != (tc.terminated >= 0) || got != nil && got.ExitCode != tc.terminated {
				t.Errorf("terminated %+v, want exit code %d", got, tc.terminated)
			}
			if w := cs.State.Waiting; (w != nil || tc.waiting != "") && (w == nil || w.Reason != tc.waiting) {
				t.Errorf("Waiting %+v, want %q", w, tc.waiting)
			}
			if len(s.ContainerStatuses) != 1 || s.Phase != corev1.PodRunning {
				t.Errorf("the pod's own status changed: phase %s, %d container statuses", s.Phase, len(s.ContainerStatuses))
			}
		})
	}
}
