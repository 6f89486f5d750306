package printers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

type podCase struct {
	name                            string
	pod                             *corev1.Pod
	wantReady, wantStatus, wantRest string
}

// podCases are the STATUS, READY and RESTARTS rules kubectl users rely on.
var podCases = []podCase{
	{
		name:      "a pod not yet scheduled shows its phase",
		pod:       makePod("pending").Containers("app").Phase(corev1.PodPending).Obj(),
		wantReady: "0/1", wantStatus: "Pending", wantRest: "0",
	},
	{
		name: "a pod the scheduler cannot place still shows Pending",
		pod: makePod("unschedulable").Containers("app").Phase(corev1.PodPending).
			Condition(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonUnschedulable).Obj(),
		wantReady: "0/1", wantStatus: "Pending", wantRest: "0",
	},
	{
		name: "a pod held by a scheduling gate shows SchedulingGated",
		pod: makePod("gated").Containers("app").Phase(corev1.PodPending).
			Condition(corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonSchedulingGated).Obj(),
		wantReady: "0/1", wantStatus: "SchedulingGated", wantRest: "0",
	},
	{
		name: "a pod whose container is ready shows Running",
		pod: makePod("running").Containers("app").Phase(corev1.PodRunning).
			Statuses(status("app").Running().Ready()).Obj(),
		wantReady: "1/1", wantStatus: "Running", wantRest: "0",
	},
	{
		name: "a running container that is not ready is not counted as ready",
		pod: makePod("unready").Containers("app", "log").Phase(corev1.PodRunning).
			Statuses(status("app").Running().Ready(), status("log").Running()).Obj(),
		wantReady: "1/2", wantStatus: "Running", wantRest: "0",
	},
	{
		name: "a container being created shows ContainerCreating",
		pod: makePod("creating").Containers("app").Phase(corev1.PodPending).
			Statuses(status("app").Waiting("ContainerCreating")).Obj(),
		wantReady: "0/1", wantStatus: "ContainerCreating", wantRest: "0",
	},
	{
		name: "an image that cannot be pulled shows the waiting reason",
		pod: makePod("pull-backoff").Containers("app").Phase(corev1.PodPending).
			Statuses(status("app").Waiting("ImagePullBackOff")).Obj(),
		wantReady: "0/1", wantStatus: "ImagePullBackOff", wantRest: "0",
	},
	{
		name: "a crash-looping container shows CrashLoopBackOff and when it last restarted",
		pod: makePod("crashloop").Containers("app").Phase(corev1.PodRunning).
			Statuses(status("app").Waiting("CrashLoopBackOff").Restarts(3, 5*time.Minute)).Obj(),
		wantReady: "0/1", wantStatus: "CrashLoopBackOff", wantRest: "3 (5m ago)",
	},
	{
		name: "restarts of all containers add up and the latest one is shown",
		pod: makePod("restarts").Containers("app", "log").Phase(corev1.PodRunning).
			Statuses(
				status("app").Running().Ready().Restarts(2, 30*time.Minute),
				status("log").Running().Ready().Restarts(1, 90*time.Second),
			).Obj(),
		wantReady: "2/2", wantStatus: "Running", wantRest: "3 (90s ago)",
	},
	{
		name: "restarts without a recorded termination show just the count",
		pod: makePod("restarts-no-time").Containers("app").Phase(corev1.PodRunning).
			Statuses(status("app").Running().Ready().Restarts(4, 0)).Obj(),
		wantReady: "1/1", wantStatus: "Running", wantRest: "4",
	},
	{
		name: "the first container with a reason decides STATUS",
		pod: makePod("first-reason").Containers("app", "log").Phase(corev1.PodRunning).
			Statuses(status("app").Waiting("CrashLoopBackOff"), status("log").Waiting("ImagePullBackOff")).Obj(),
		wantReady: "0/2", wantStatus: "CrashLoopBackOff", wantRest: "0",
	},
	{
		name: "a pod whose containers all finished shows Completed",
		pod: makePod("completed").Containers("app").Phase(corev1.PodSucceeded).
			Statuses(status("app").Terminated("Completed", 0)).Obj(),
		wantReady: "0/1", wantStatus: "Completed", wantRest: "0",
	},
	{
		name: "a failed container shows its terminated reason",
		pod: makePod("error").Containers("app").Phase(corev1.PodFailed).
			Statuses(status("app").Terminated("Error", 1)).Obj(),
		wantReady: "0/1", wantStatus: "Error", wantRest: "0",
	},
	{
		name: "a container killed by a signal without a reason shows Signal:N",
		pod: makePod("signal").Containers("app").Phase(corev1.PodFailed).
			Statuses(status("app").Signaled(9, 137)).Obj(),
		wantReady: "0/1", wantStatus: "Signal:9", wantRest: "0",
	},
	{
		name: "a container that exited without a reason shows ExitCode:N",
		pod: makePod("exitcode").Containers("app").Phase(corev1.PodFailed).
			Statuses(status("app").Terminated("", 2)).Obj(),
		wantReady: "0/1", wantStatus: "ExitCode:2", wantRest: "0",
	},
	{
		name: "a finished container beside a running one shows Running if the pod is ready",
		pod: makePod("partly-done-ready").Containers("job", "server").Phase(corev1.PodRunning).
			Condition(corev1.PodReady, corev1.ConditionTrue, "").
			Statuses(status("job").Terminated("Completed", 0), status("server").Running().Ready()).Obj(),
		wantReady: "1/2", wantStatus: "Running", wantRest: "0",
	},
	{
		name: "a finished container beside a running one shows NotReady if the pod is not ready",
		pod: makePod("partly-done").Containers("job", "server").Phase(corev1.PodRunning).
			Condition(corev1.PodReady, corev1.ConditionFalse, "").
			Statuses(status("job").Terminated("Completed", 0), status("server").Running().Ready()).Obj(),
		wantReady: "1/2", wantStatus: "NotReady", wantRest: "0",
	},
	{
		name: "a pod running its first init container shows Init:0/2",
		pod: makePod("init-0").InitContainers("migrate", "seed").Containers("app").Phase(corev1.PodPending).
			InitStatuses(status("migrate").Running(), status("seed").Waiting("PodInitializing")).
			Statuses(status("app").Waiting("PodInitializing")).Obj(),
		wantReady: "0/1", wantStatus: "Init:0/2", wantRest: "0",
	},
	{
		name: "a pod past its first init container shows Init:1/2",
		pod: makePod("init-1").InitContainers("migrate", "seed").Containers("app").Phase(corev1.PodPending).
			InitStatuses(status("migrate").Terminated("Completed", 0), status("seed").Running()).
			Statuses(status("app").Waiting("PodInitializing")).Obj(),
		wantReady: "0/1", wantStatus: "Init:1/2", wantRest: "0",
	},
	{
		name: "an init container waiting on PodInitializing counts as not started",
		pod: makePod("init-waiting").InitContainers("migrate").Containers("app").Phase(corev1.PodPending).
			InitStatuses(status("migrate").Waiting("PodInitializing")).Obj(),
		wantReady: "0/1", wantStatus: "Init:0/1", wantRest: "0",
	},
	{
		name: "a failed init container shows Init:Error",
		pod: makePod("init-error").InitContainers("migrate").Containers("app").Phase(corev1.PodPending).
			InitStatuses(status("migrate").Terminated("Error", 1)).
			Statuses(status("app").Waiting("PodInitializing")).Obj(),
		wantReady: "0/1", wantStatus: "Init:Error", wantRest: "0",
	},
	{
		name: "a crash-looping init container shows Init:CrashLoopBackOff and its restarts",
		pod: makePod("init-crashloop").InitContainers("migrate").Containers("app").Phase(corev1.PodPending).
			InitStatuses(status("migrate").Waiting("CrashLoopBackOff").Restarts(4, 2*time.Minute)).
			Statuses(status("app").Waiting("PodInitializing")).Obj(),
		wantReady: "0/1", wantStatus: "Init:CrashLoopBackOff", wantRest: "4 (2m ago)",
	},
	{
		name: "an init container that exited without a reason shows Init:ExitCode:N",
		pod: makePod("init-exitcode").InitContainers("migrate").Containers("app").Phase(corev1.PodPending).
			InitStatuses(status("migrate").Terminated("", 3)).Obj(),
		wantReady: "0/1", wantStatus: "Init:ExitCode:3", wantRest: "0",
	},
	{
		name: "an init container killed by a signal shows Init:Signal:N",
		pod: makePod("init-signal").InitContainers("migrate").Containers("app").Phase(corev1.PodPending).
			InitStatuses(status("migrate").Signaled(9, 137)).Obj(),
		wantReady: "0/1", wantStatus: "Init:Signal:9", wantRest: "0",
	},
	{
		name: "init container restarts stop counting once the pod is initialized",
		pod: makePod("init-done").InitContainers("migrate").Containers("app").Phase(corev1.PodRunning).
			Condition(corev1.PodInitialized, corev1.ConditionTrue, "").
			InitStatuses(status("migrate").Terminated("Completed", 0).Restarts(2, 20*time.Minute)).
			Statuses(status("app").Running().Ready()).Obj(),
		wantReady: "1/1", wantStatus: "Running", wantRest: "0",
	},
	{
		// Upstream quirk, kept: running app containers set no reason.
		name: "an initialized pod keeps a failed init container's reason while its app runs",
		pod: makePod("init-failed-later").InitContainers("migrate").Containers("app").Phase(corev1.PodRunning).
			Condition(corev1.PodInitialized, corev1.ConditionTrue, "").
			InitStatuses(status("migrate").Terminated("Error", 1)).
			Statuses(status("app").Running().Ready()).Obj(),
		wantReady: "1/1", wantStatus: "Init:Error", wantRest: "0",
	},
	{
		name: "a started sidecar counts towards READY and lets the pod run",
		pod: makePod("sidecar").Sidecars("proxy").Containers("app").Phase(corev1.PodRunning).
			Condition(corev1.PodInitialized, corev1.ConditionTrue, "").
			InitStatuses(status("proxy").Running().Started().Ready()).
			Statuses(status("app").Running().Ready()).Obj(),
		wantReady: "2/2", wantStatus: "Running", wantRest: "0",
	},
	{
		name: "a sidecar that has not started yet holds the pod in Init",
		pod: makePod("sidecar-starting").Sidecars("proxy").Containers("app").Phase(corev1.PodPending).
			InitStatuses(status("proxy").Running().NotStarted()).
			Statuses(status("app").Waiting("PodInitializing")).Obj(),
		wantReady: "0/2", wantStatus: "Init:0/1", wantRest: "0",
	},
	{
		name: "sidecar restarts still count once the pod is initialized",
		pod: makePod("sidecar-restarts").Sidecars("proxy").Containers("app").Phase(corev1.PodRunning).
			Condition(corev1.PodInitialized, corev1.ConditionTrue, "").
			InitStatuses(status("proxy").Running().Started().Ready().Restarts(2, 3*time.Minute)).
			Statuses(status("app").Running().Ready().Restarts(1, time.Hour)).Obj(),
		wantReady: "2/2", wantStatus: "Running", wantRest: "3 (3m ago)",
	},
	{
		name: "a pod being deleted shows Terminating",
		pod: makePod("terminating").Containers("app").Phase(corev1.PodRunning).Deleting().
			Statuses(status("app").Running().Ready()).Obj(),
		wantReady: "1/1", wantStatus: "Terminating", wantRest: "0",
	},
	{
		name: "a finished pod being deleted keeps its final status",
		pod: makePod("completed-deleting").Containers("app").Phase(corev1.PodSucceeded).Deleting().
			Statuses(status("app").Terminated("Completed", 0)).Obj(),
		wantReady: "0/1", wantStatus: "Completed", wantRest: "0",
	},
	{
		name: "a pod on an unreachable node shows NodeLost",
		pod: makePod("node-lost").Containers("app").Phase(corev1.PodRunning).Reason("NodeLost").
			Statuses(status("app").Running().Ready()).Obj(),
		wantReady: "1/1", wantStatus: "NodeLost", wantRest: "0",
	},
	{
		name: "a pod being deleted on an unreachable node shows Unknown",
		pod: makePod("node-lost-deleting").Containers("app").Phase(corev1.PodRunning).Reason("NodeLost").Deleting().
			Statuses(status("app").Running().Ready()).Obj(),
		wantReady: "1/1", wantStatus: "Unknown", wantRest: "0",
	},
	{
		name:      "an evicted pod shows the reason the kubelet gave",
		pod:       makePod("evicted").Containers("app").Phase(corev1.PodFailed).Reason("Evicted").Obj(),
		wantReady: "0/1", wantStatus: "Evicted", wantRest: "0",
	},
}

func TestPodStatusColumns(t *testing.T) {
	for _, tc := range podCases {
		t.Run(tc.name, func(t *testing.T) {
			r := printOne(t, "Pod", tc.pod)
			got := []any{cell(t, "Pod", r, "Ready"), cell(t, "Pod", r, "Status"), cell(t, "Pod", r, "Restarts")}
			want := []any{tc.wantReady, tc.wantStatus, tc.wantRest}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("READY, STATUS, RESTARTS (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodTableMatchesGolden(t *testing.T) {
	objs := make([]runtime.Object, 0, len(podCases))
	for _, tc := range podCases {
		objs = append(objs, tc.pod)
	}
	objs = append(objs,
		makePod("wide").Containers("app").Phase(corev1.PodRunning).
			Node("node-1").Nominated("node-2").IPs(true, "10.0.0.5", "fd00::5").
			ReadinessGates("example.com/lb", "example.com/dns").
			Condition("example.com/lb", corev1.ConditionTrue, "").
			Condition("example.com/dns", corev1.ConditionFalse, "").
			Statuses(status("app").Running().Ready()).Obj(),
		makePod("ips-only").Containers("app").Phase(corev1.PodRunning).IPs(false, "10.0.0.6").
			Statuses(status("app").Running().Ready()).Obj(),
	)
	table, err := ToTable("Pod", objs, IncludeNone, now)
	if err != nil {
		t.Fatal(err)
	}
	assertGolden(t, "pod.golden", render(t, table))
}

func TestPodWideColumns(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []any // IP, NODE, NOMINATED NODE, READINESS GATES
	}{
		{
			name: "an unscheduled pod shows <none> for every wide column",
			pod:  makePod("bare").Containers("app").Obj(),
			want: []any{"<none>", "<none>", "<none>", "<none>"},
		},
		{
			name: "status.podIP wins over a different status.podIPs",
			pod:  makePod("ip").Containers("app").IPs(false, "fd00::5").IPs(true, "10.0.0.5").Obj(),
			want: []any{"10.0.0.5", "<none>", "<none>", "<none>"},
		},
		{
			name: "status.podIPs is used when status.podIP is unset",
			pod:  makePod("ips").Containers("app").IPs(false, "10.0.0.6", "fd00::6").Obj(),
			want: []any{"10.0.0.6", "<none>", "<none>", "<none>"},
		},
		{
			name: "readiness gates count only gates whose condition is True",
			pod: makePod("gates").Containers("app").Node("node-1").Nominated("node-2").
				ReadinessGates("a", "b", "c").Condition("a", corev1.ConditionTrue, "").Condition("b", corev1.ConditionFalse, "").Obj(),
			want: []any{"<none>", "node-1", "node-2", "1/3"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := printOne(t, "Pod", tc.pod)
			got := []any{cell(t, "Pod", r, "IP"), cell(t, "Pod", r, "Node"), cell(t, "Pod", r, "Nominated Node"), cell(t, "Pod", r, "Readiness Gates")}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("wide columns (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodRowConditions(t *testing.T) {
	tests := []struct {
		name  string
		phase corev1.PodPhase
		want  []metav1.TableRowCondition
	}{
		{"a running pod has no row condition", corev1.PodRunning, nil},
		{"a succeeded pod is marked Completed with reason Succeeded", corev1.PodSucceeded, []metav1.TableRowCondition{{
			Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "The pod has completed successfully.",
		}}},
		{"a failed pod is marked Completed with reason Failed", corev1.PodFailed, []metav1.TableRowCondition{{
			Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: "Failed", Message: "The pod failed.",
		}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := printOne(t, "Pod", makePod("p").Containers("app").Phase(tc.phase).Obj())
			if diff := cmp.Diff(tc.want, r.Conditions); diff != "" {
				t.Errorf("row conditions (-want +got):\n%s", diff)
			}
		})
	}
}
