package prober

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestProbeHost(t *testing.T) {
	httpGet := func(host string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: host, Port: intstr.FromInt32(8080)}}}
	}
	tcp := func(host string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: host, Port: intstr.FromInt32(80)}}}
	}
	exec := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	cases := []struct {
		name      string
		probe     *corev1.Probe
		podIP     string
		wantHost  string
		wantKnown bool
	}{
		{"an httpGet probe of a pod without an IP waits (never http://:8080/)", httpGet(""), "", "", false},
		{"a tcpSocket probe of a pod without an IP waits", tcp(""), "", "", false},
		{"an httpGet probe targets the pod's IP once it has one", httpGet(""), "10.244.0.5", "10.244.0.5", true},
		{"a tcpSocket probe targets the pod's IP once it has one", tcp(""), "10.244.0.5", "10.244.0.5", true},
		{"a probe with its own host needs no pod IP", httpGet("127.0.0.1"), "", "127.0.0.1", true},
		{"a tcpSocket probe with its own host needs no pod IP", tcp("example.test"), "", "example.test", true},
		{"an exec probe needs no address", exec, "", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host, known := probeHost(tc.probe, tc.podIP)
			if host != tc.wantHost || known != tc.wantKnown {
				t.Errorf("probeHost = %q, %v; want %q, %v", host, known, tc.wantHost, tc.wantKnown)
			}
		})
	}
}

func TestThresholds(t *testing.T) {
	type step struct {
		ok      bool
		changed bool // a verdict is reported
		verdict Result
		done    bool
	}
	pass, fail := true, false
	cases := []struct {
		name             string
		kind             Kind
		success, failure int32
		steps            []step
	}{
		{"readiness needs successThreshold successes in a row, then reports ready once", Readiness, 2, 3, []step{
			{ok: pass}, {ok: fail}, {ok: pass},
			{ok: pass, changed: true, verdict: Result{Kind: Readiness, Success: true}},
			{ok: pass},
		}},
		{"a ready container becomes unready after failureThreshold failures, and ready again", Readiness, 1, 2, []step{
			{ok: pass, changed: true, verdict: Result{Kind: Readiness, Success: true}},
			{ok: fail},
			{ok: fail, changed: true, verdict: Result{Kind: Readiness}},
			{ok: fail},
			{ok: pass, changed: true, verdict: Result{Kind: Readiness, Success: true}},
		}},
		{"a container never ready is not reported unready", Readiness, 1, 1, []step{
			{ok: fail}, {ok: fail},
		}},
		{"liveness restarts after failureThreshold failures in a row and stops probing", Liveness, 1, 3, []step{
			{ok: fail}, {ok: fail}, {ok: pass}, {ok: fail}, {ok: fail},
			{ok: fail, changed: true, done: true, verdict: Result{Kind: Liveness, Message: "Container c failed liveness probe, will be restarted"}},
		}},
		{"startup reports started at its first success and stops probing", Startup, 1, 3, []step{
			{ok: fail},
			{ok: pass, changed: true, done: true, verdict: Result{Kind: Startup, Success: true}},
		}},
		{"startup restarts the container after failureThreshold failures", Startup, 1, 2, []step{
			{ok: fail},
			{ok: fail, changed: true, done: true, verdict: Result{Kind: Startup, Message: "Container c failed startup probe, will be restarted"}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			th := thresholds{kind: tc.kind, container: "c", success: tc.success, failure: tc.failure}
			for i, s := range tc.steps {
				verdict, changed, done := th.observe(s.ok)
				if changed != s.changed || done != s.done || verdict != s.verdict {
					t.Fatalf("outcome %d (ok=%v): verdict %+v changed %v done %v; want %+v, %v, %v",
						i+1, s.ok, verdict, changed, done, s.verdict, s.changed, s.done)
				}
			}
		})
	}
}
