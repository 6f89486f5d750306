package kubelet

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
