package defaults

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestPod(t *testing.T) {
	withPorts := ctr("app", "nginx:1.25")
	withPorts.Ports = []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 53, Protocol: corev1.ProtocolUDP}}
	wantPorts := defaultedCtr(withPorts, corev1.PullIfNotPresent)
	wantPorts.Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}, {ContainerPort: 53, Protocol: corev1.ProtocolUDP}}
	wantHostPorts := defaultedCtr(withPorts, corev1.PullIfNotPresent)
	wantHostPorts.Ports = []corev1.ContainerPort{
		{ContainerPort: 80, HostPort: 80, Protocol: corev1.ProtocolTCP},
		{ContainerPort: 53, HostPort: 53, Protocol: corev1.ProtocolUDP},
	}

	limitsOnly := ctr("app", "nginx:1.25")
	limitsOnly.Resources.Limits = rl("cpu", "500m", "memory", "128Mi")
	wantLimitsOnly := defaultedCtr(limitsOnly, corev1.PullIfNotPresent)
	wantLimitsOnly.Resources.Requests = rl("cpu", "500m", "memory", "128Mi")

	burstable := ctr("app", "nginx:1.25")
	burstable.Resources = corev1.ResourceRequirements{Requests: rl("cpu", "100m"), Limits: rl("cpu", "500m", "memory", "128Mi")}
	wantBurstable := defaultedCtr(burstable, corev1.PullIfNotPresent)
	wantBurstable.Resources.Requests = rl("cpu", "100m", "memory", "128Mi")

	tiny := ctr("app", "nginx:1.25")
	tiny.Resources.Requests = rl("cpu", "0.0001")
	wantTiny := defaultedCtr(tiny, corev1.PullIfNotPresent)
	wantTiny.Resources.Requests = rl("cpu", "1m")

	probed := ctr("app", "nginx:1.25")
	probed.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}}}
	probed.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}, PeriodSeconds: 3}
	probed.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/stop", Port: intstr.FromInt32(8080)}}}
	wantProbed := defaultedCtr(probed, corev1.PullIfNotPresent)
	wantProbed.LivenessProbe = &corev1.Probe{
		ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080), Scheme: corev1.URISchemeHTTP}},
		TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
	}
	wantProbed.ReadinessProbe = &corev1.Probe{
		ProbeHandler:   corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090, Service: ptr.To("")}},
		TimeoutSeconds: 1, PeriodSeconds: 3, SuccessThreshold: 1, FailureThreshold: 3,
	}
	wantProbed.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/stop", Port: intstr.FromInt32(8080), Scheme: corev1.URISchemeHTTP}}}

	withEnv := ctr("app", "nginx:1.25")
	withEnv.Env = []corev1.EnvVar{
		{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}},
		{Name: "PLAIN", Value: "x"},
	}
	wantEnv := defaultedCtr(withEnv, corev1.PullIfNotPresent)
	wantEnv.Env = []corev1.EnvVar{
		{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}},
		{Name: "PLAIN", Value: "x"},
	}

	mode := ptr.To[int32](0o644)
	custom := ptr.To[int32](0o400)
	volumesIn := []corev1.Volume{
		{Name: "scratch"},
		{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}},
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: custom}}},
		{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}},
		{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}},
	}
	volumesWant := []corev1.Volume{
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, DefaultMode: mode}}},
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: custom}}},
		{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{DefaultMode: mode, Items: []corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log", Type: ptr.To(corev1.HostPathUnset)}}},
		{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: mode, Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3600)}}}}}},
	}

	tests := []struct {
		name string
		in   *corev1.Pod
		want *corev1.Pod
	}{
		{
			name: "a minimal pod gets every top-level default and starts Pending as BestEffort",
			in:   makePod().Container(ctr("app", "nginx")).Obj(),
			want: makePod().Container(defaultedCtr(ctr("app", "nginx"), corev1.PullAlways)).Defaulted(corev1.PodQOSBestEffort).Obj(),
		},
		{
			name: "values the client set are kept",
			in: makePod().Container(ctr("app", "nginx:1.25")).Spec(func(s *corev1.PodSpec) {
				s.RestartPolicy = corev1.RestartPolicyNever
				s.DNSPolicy = corev1.DNSDefault
				s.TerminationGracePeriodSeconds = ptr.To[int64](5)
				s.SchedulerName = "mine"
				s.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}
				s.EnableServiceLinks = ptr.To(false)
				s.Containers[0].ImagePullPolicy = corev1.PullNever
				s.Containers[0].TerminationMessagePath = "/tmp/msg"
				s.Containers[0].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
			}).Obj(),
			want: func() *corev1.Pod {
				p := makePod().Container(ctr("app", "nginx:1.25")).Spec(func(s *corev1.PodSpec) {
					s.RestartPolicy = corev1.RestartPolicyNever
					s.DNSPolicy = corev1.DNSDefault
					s.TerminationGracePeriodSeconds = ptr.To[int64](5)
					s.SchedulerName = "mine"
					s.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}
					s.EnableServiceLinks = ptr.To(false)
					s.Containers[0].ImagePullPolicy = corev1.PullNever
					s.Containers[0].TerminationMessagePath = "/tmp/msg"
					s.Containers[0].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
				}).Obj()
				p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBestEffort}
				return p
			}(),
		},
		{
			name: "an existing status is kept",
			in: func() *corev1.Pod {
				p := makePod().Container(ctr("app", "nginx:1.25")).Obj()
				p.Status = corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable}
				return p
			}(),
			want: func() *corev1.Pod {
				p := makePod().Container(defaultedCtr(ctr("app", "nginx:1.25"), corev1.PullIfNotPresent)).Defaulted("").Obj()
				p.Status = corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable}
				return p
			}(),
		},
		{
			name: "init and ephemeral containers get container defaults too",
			in: makePod().Container(ctr("app", "nginx:1.25")).Spec(func(s *corev1.PodSpec) {
				s.InitContainers = []corev1.Container{ctr("init", "busybox")}
				s.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox:1.36"}}}
			}).Obj(),
			want: makePod().Container(defaultedCtr(ctr("app", "nginx:1.25"), corev1.PullIfNotPresent)).Spec(func(s *corev1.PodSpec) {
				s.InitContainers = []corev1.Container{defaultedCtr(ctr("init", "busybox"), corev1.PullAlways)}
				s.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon(defaultedCtr(ctr("debug", "busybox:1.36"), corev1.PullIfNotPresent))}}
			}).Defaulted(corev1.PodQOSBestEffort).Obj(),
		},
		{
			name: "container ports without a protocol default to TCP",
			in:   makePod().Container(withPorts).Obj(),
			want: makePod().Container(wantPorts).Defaulted(corev1.PodQOSBestEffort).Obj(),
		},
		{
			name: "hostNetwork pods get a hostPort equal to each containerPort",
			in:   makePod().Container(withPorts).HostNetwork().Obj(),
			want: makePod().Container(wantHostPorts).HostNetwork().Defaulted(corev1.PodQOSBestEffort).Obj(),
		},
		{
			name: "a container with only limits gets equal requests and is Guaranteed",
			in:   makePod().Container(limitsOnly).Obj(),
			want: makePod().Container(wantLimitsOnly).Defaulted(corev1.PodQOSGuaranteed).Obj(),
		},
		{
			name: "a container with requests below its limits is Burstable and gets the missing request from its limit",
			in:   makePod().Container(burstable).Obj(),
			want: makePod().Container(wantBurstable).Defaulted(corev1.PodQOSBurstable).Obj(),
		},
		{
			name: "quantities finer than a millicore are rounded up",
			in:   makePod().Container(tiny).Obj(),
			want: makePod().Container(wantTiny).Defaulted(corev1.PodQOSBurstable).Obj(),
		},
		{
			name: "probes get timings and thresholds, httpGet gets path and scheme, grpc gets an empty service",
			in:   makePod().Container(probed).Obj(),
			want: makePod().Container(wantProbed).Defaulted(corev1.PodQOSBestEffort).Obj(),
		},
		{
			name: "env fieldRef gets apiVersion v1 and resourceFieldRef keeps a zero divisor",
			in:   makePod().Container(withEnv).Obj(),
			want: makePod().Container(wantEnv).Defaulted(corev1.PodQOSBestEffort).Obj(),
		},
		{
			name: "volumes get emptyDir when sourceless, mode 0644, hostPath type and token lifetime",
			in:   makePod().Container(ctr("app", "nginx:1.25")).Spec(func(s *corev1.PodSpec) { s.Volumes = volumesIn }).Obj(),
			want: makePod().Container(defaultedCtr(ctr("app", "nginx:1.25"), corev1.PullIfNotPresent)).Spec(func(s *corev1.PodSpec) { s.Volumes = volumesWant }).Defaulted(corev1.PodQOSBestEffort).Obj(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			Pod(tc.in)
			assertEqual(t, tc.want, tc.in)
		})
	}
}

func TestPodDefaultingIsIdempotent(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
	}{
		{name: "a bare pod is unchanged by a second pass", pod: makePod().Container(ctr("app", "nginx")).Obj()},
		{name: "a hostNetwork pod with limits is unchanged by a second pass", pod: makePod().HostNetwork().Container(corev1.Container{
			Name: "app", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
			Resources: corev1.ResourceRequirements{Limits: rl("cpu", "1")},
		}).Obj()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			Pod(tc.pod)
			once := tc.pod.DeepCopy()
			Pod(tc.pod)
			assertEqual(t, once, tc.pod)
		})
	}
}

func TestPullPolicy(t *testing.T) {
	tests := []struct {
		name  string
		image string
		want  corev1.PullPolicy
	}{
		{name: "an untagged image is pulled Always", image: "nginx", want: corev1.PullAlways},
		{name: "an image tagged latest is pulled Always", image: "nginx:latest", want: corev1.PullAlways},
		{name: "an image with another tag is pulled IfNotPresent", image: "nginx:1.25", want: corev1.PullIfNotPresent},
		{name: "a registry port is not mistaken for a tag", image: "localhost:5000/app", want: corev1.PullAlways},
		{name: "a tagged image on a registry with a port is pulled IfNotPresent", image: "localhost:5000/app:v1", want: corev1.PullIfNotPresent},
		{name: "an image pinned by digest only is pulled IfNotPresent", image: "nginx@sha256:" + sha, want: corev1.PullIfNotPresent},
		{name: "an image tagged latest and pinned by digest is pulled Always", image: "nginx:latest@sha256:" + sha, want: corev1.PullAlways},
		{name: "an unparsable image is pulled IfNotPresent", image: "Not A Valid Image", want: corev1.PullIfNotPresent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pullPolicy(tc.image); got != tc.want {
				t.Errorf("pullPolicy(%q) = %s, want %s", tc.image, got, tc.want)
			}
		})
	}
}

const sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestDefaultTolerationSeconds(t *testing.T) {
	notReady := corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}
	unreachable := corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}
	ownNotReady := corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](10)}
	everything := corev1.Toleration{Operator: corev1.TolerationOpExists}
	noSchedule := corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	anyEffect := corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists}

	tests := []struct {
		name string
		in   []corev1.Toleration
		want []corev1.Toleration
	}{
		{name: "a pod without tolerations gets both 300 second tolerations", in: nil, want: []corev1.Toleration{notReady, unreachable}},
		{name: "a pod tolerating not-ready keeps its own seconds and gets only unreachable", in: []corev1.Toleration{ownNotReady}, want: []corev1.Toleration{ownNotReady, unreachable}},
		{name: "a pod tolerating every taint gets nothing", in: []corev1.Toleration{everything}, want: []corev1.Toleration{everything}},
		{name: "a NoSchedule toleration for not-ready does not count", in: []corev1.Toleration{noSchedule}, want: []corev1.Toleration{noSchedule, notReady, unreachable}},
		{name: "a toleration with no effect covers NoExecute", in: []corev1.Toleration{anyEffect}, want: []corev1.Toleration{anyEffect, notReady}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := makePod().Container(ctr("app", "nginx")).Spec(func(s *corev1.PodSpec) { s.Tolerations = tc.in }).Obj()
			DefaultTolerationSeconds(pod)
			assertEqual(t, tc.want, pod.Spec.Tolerations)
		})
	}
}
