package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"minik/apiserver/defaults"
)

func TestCreatePod(t *testing.T) {
	withPort := func(port int32) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) { s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: port}} }
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []want
	}{
		{
			name: "a defaulted minimal pod is valid",
			pod:  makePod().Obj(),
		},
		{
			name: "a pod named from generateName is valid",
			pod:  makePod().Meta(func(m *metav1.ObjectMeta) { m.GenerateName = "web-"; m.Name = "web-x7k2p" }).Obj(),
		},
		{
			name: "a pod without a name is rejected",
			pod:  makePod().Meta(func(m *metav1.ObjectMeta) { m.Name = "" }).Obj(),
			want: []want{{field.ErrorTypeRequired, "metadata.name", "name or generateName is required"}},
		},
		{
			name: "a pod name that is not a DNS subdomain is rejected",
			pod:  makePod().Meta(func(m *metav1.ObjectMeta) { m.Name = "Web_1" }).Obj(),
			want: []want{{field.ErrorTypeInvalid, "metadata.name", "a lowercase RFC 1123 subdomain"}},
		},
		{
			name: "a pod without a namespace is rejected",
			pod:  makePod().Meta(func(m *metav1.ObjectMeta) { m.Namespace = "" }).Obj(),
			want: []want{{field.ErrorTypeRequired, "metadata.namespace", ""}},
		},
		{
			name: "an invalid label key is rejected",
			pod:  makePod().Meta(func(m *metav1.ObjectMeta) { m.Labels = map[string]string{"-bad": "x"} }).Obj(),
			want: []want{{field.ErrorTypeInvalid, "metadata.labels", "name part must consist of alphanumeric characters"}},
		},
		{
			name: "annotations over 256KiB in total are rejected",
			pod: makePod().Meta(func(m *metav1.ObjectMeta) {
				m.Annotations = map[string]string{"big": strings.Repeat("x", 256*1024)}
			}).Obj(),
			want: []want{{field.ErrorTypeTooLong, "metadata.annotations", "may not be more than 262144 bytes"}},
		},
		{
			name: "an unqualified finalizer that is not built in is rejected",
			pod:  makePod().Meta(func(m *metav1.ObjectMeta) { m.Finalizers = []string{"mine"} }).Obj(),
			want: []want{{field.ErrorTypeInvalid, "metadata.finalizers[0]", "name is neither a standard finalizer name nor is it fully qualified"}},
		},
		{
			name: "a pod without containers is rejected",
			pod:  makePod().Spec(func(s *corev1.PodSpec) { s.Containers = nil }).Obj(),
			want: []want{{field.ErrorTypeRequired, "spec.containers", ""}},
		},
		{
			name: "a container name that is not a DNS label is rejected",
			pod:  makePod().Spec(func(s *corev1.PodSpec) { s.Containers[0].Name = "App_1" }).Obj(),
			want: []want{{field.ErrorTypeInvalid, "spec.containers[0].name", "a lowercase RFC 1123 label"}},
		},
		{
			name: "container names must be unique across init and app containers",
			pod:  makePod().Spec(func(s *corev1.PodSpec) { s.InitContainers = []corev1.Container{ctr("app", "busybox:1.36")} }).Obj(),
			want: []want{{field.ErrorTypeDuplicate, "spec.initContainers[0].name", ""}},
		},
		{
			name: "two app containers with one name are rejected",
			pod:  makePod().Spec(func(s *corev1.PodSpec) { s.Containers = append(s.Containers, ctr("app", "redis:7")) }).Obj(),
			want: []want{{field.ErrorTypeDuplicate, "spec.containers[1].name", ""}},
		},
		{
			name: "a container without an image is rejected",
			pod:  makePod().Spec(func(s *corev1.PodSpec) { s.Containers[0].Image = "" }).Obj(),
			want: []want{{field.ErrorTypeRequired, "spec.containers[0].image", ""}},
		},
		{
			name: "an image with trailing whitespace is rejected",
			pod:  makePod().Spec(func(s *corev1.PodSpec) { s.Containers[0].Image = "nginx:1.25 " }).Obj(),
			want: []want{{field.ErrorTypeInvalid, "spec.containers[0].image", "must not have leading or trailing whitespace"}},
		},
		{
			name: "a container port above 65535 is rejected",
			pod:  makePod().Spec(withPort(70000)).Obj(),
			want: []want{{field.ErrorTypeInvalid, "spec.containers[0].ports[0].containerPort", "must be between 1 and 65535, inclusive"}},
		},
		{
			name: "a container port of zero is required",
			pod:  makePod().Spec(withPort(0)).Obj(),
			want: []want{{field.ErrorTypeRequired, "spec.containers[0].ports[0].containerPort", ""}},
		},
		{
			name: "an unknown port protocol is rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: "HTTP"}}
			}).Obj(),
			want: []want{{field.ErrorTypeNotSupported, "spec.containers[0].ports[0].protocol", `supported values: "SCTP", "TCP", "UDP"`}},
		},
		{
			name: "two containers binding one host port collide",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Containers = []corev1.Container{
					{Name: "a", Image: "nginx:1.25", Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}},
					{Name: "b", Image: "nginx:1.25", Ports: []corev1.ContainerPort{{ContainerPort: 81, HostPort: 8080}}},
				}
			}).Obj(),
			want: []want{{field.ErrorTypeDuplicate, "spec.containers[1].ports[0].hostPort", ""}},
		},
		{
			name: "an unknown restart policy is rejected",
			pod:  makePod().Spec(func(s *corev1.PodSpec) { s.RestartPolicy = "Sometimes" }).Obj(),
			want: []want{{field.ErrorTypeNotSupported, "spec.restartPolicy", `supported values: "Always", "OnFailure", "Never"`}},
		},
		{
			name: "an empty restart policy is required",
			pod:  makePod().After(func(p *corev1.Pod) { p.Spec.RestartPolicy = "" }).Obj(),
			want: []want{{field.ErrorTypeRequired, "spec.restartPolicy", ""}},
		},
		{
			name: "an unknown dns policy is rejected",
			pod:  makePod().Spec(func(s *corev1.PodSpec) { s.DNSPolicy = "Google" }).Obj(),
			want: []want{{field.ErrorTypeNotSupported, "spec.dnsPolicy", ""}},
		},
		{
			name: "dns policy None without dnsConfig is rejected",
			pod:  makePod().Spec(func(s *corev1.PodSpec) { s.DNSPolicy = corev1.DNSNone }).Obj(),
			want: []want{{field.ErrorTypeRequired, "spec.dnsConfig", "must provide `dnsConfig` when `dnsPolicy` is None"}},
		},
		{
			name: "a request above its limit is rejected at the requests path",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl("cpu", "1"), Limits: rl("cpu", "500m")}
			}).Obj(),
			want: []want{{field.ErrorTypeInvalid, "spec.containers[0].resources.requests", "must be less than or equal to cpu limit of 500m"}},
		},
		{
			name: "a negative quantity is rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("-1Mi")}
			}).Obj(),
			want: []want{{field.ErrorTypeInvalid, "spec.containers[0].resources.requests[memory]", "must be greater than or equal to 0"}},
		},
		{
			name: "an unknown unqualified resource is rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Containers[0].Resources.Requests = rl("gpu", "1")
			}).Obj(),
			want: []want{
				{field.ErrorTypeInvalid, "spec.containers[0].resources.requests[gpu]", "must be a standard resource type or fully qualified"},
				{field.ErrorTypeInvalid, "spec.containers[0].resources.requests[gpu]", "must be a standard resource for containers"},
			},
		},
		{
			name: "an extended resource needs a limit equal to its request",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Containers[0].Resources.Requests = rl("example.com/gpu", "1")
			}).Obj(),
			want: []want{{field.ErrorTypeRequired, "spec.containers[0].resources.limits", "Limit must be set for non overcommitable resources"}},
		},
		{
			name: "an extended resource limit alone is valid",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Containers[0].Resources.Limits = rl("example.com/gpu", "2")
			}).Obj(),
		},
		{
			name: "two volumes with one name are rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Volumes = []corev1.Volume{{Name: "data"}, {Name: "data"}}
			}).Obj(),
			want: []want{{field.ErrorTypeDuplicate, "spec.volumes[1].name", ""}},
		},
		{
			name: "a volume with two sources is rejected at the second",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
					EmptyDir:  &corev1.EmptyDirVolumeSource{},
					ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}},
				}}}
			}).Obj(),
			want: []want{{field.ErrorTypeForbidden, "spec.volumes[0].configMap", "may not specify more than 1 volume type"}},
		},
		{
			name: "a secret volume without a secret name is rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}}}
			}).Obj(),
			want: []want{{field.ErrorTypeRequired, "spec.volumes[0].secret.secretName", ""}},
		},
		{
			name: "a hostPath climbing out with .. is rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/../etc"}}}}
			}).Obj(),
			want: []want{{field.ErrorTypeInvalid, "spec.volumes[0].hostPath.path", "must not contain '..'"}},
		},
		{
			name: "a mount of a volume that does not exist is rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "missing", MountPath: "/data"}}
			}).Obj(),
			want: []want{{field.ErrorTypeNotFound, "spec.containers[0].volumeMounts[0].name", ""}},
		},
		{
			name: "two mounts on one path are rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Volumes = []corev1.Volume{{Name: "a"}, {Name: "b"}}
				s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "a", MountPath: "/data"}, {Name: "b", MountPath: "/data"}}
			}).Obj(),
			want: []want{{field.ErrorTypeInvalid, "spec.containers[0].volumeMounts[1].mountPath", "must be unique"}},
		},
		{
			name: "an env var without a name is rejected",
			pod:  makePod().Spec(func(s *corev1.PodSpec) { s.Containers[0].Env = []corev1.EnvVar{{Value: "x"}} }).Obj(),
			want: []want{{field.ErrorTypeRequired, "spec.containers[0].env[0].name", ""}},
		},
		{
			name: "an env var reading an unsupported pod field is rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Containers[0].Env = []corev1.EnvVar{{Name: "PHASE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.phase"}}}}
			}).Obj(),
			want: []want{{field.ErrorTypeNotSupported, "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath", `"metadata.name"`}},
		},
		{
			name: "an env var reading an unknown pod field fails conversion",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nothing"}}}}
			}).Obj(),
			want: []want{{field.ErrorTypeInvalid, "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath", "error converting fieldPath: field label not supported: spec.nothing"}},
		},
		{
			name: "an env var reading one label is valid",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Containers[0].Env = []corev1.EnvVar{{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}}}
			}).Obj(),
		},
		{
			name: "an env var with both a value and a source is rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Containers[0].Env = []corev1.EnvVar{{Name: "N", Value: "x", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
			}).Obj(),
			want: []want{{field.ErrorTypeInvalid, "spec.containers[0].env[0].valueFrom", "may not be specified when `value` is not empty"}},
		},
		{
			name: "a probe without a handler is rejected",
			pod:  makePod().Spec(func(s *corev1.PodSpec) { s.Containers[0].LivenessProbe = &corev1.Probe{} }).Obj(),
			want: []want{{field.ErrorTypeRequired, "spec.containers[0].livenessProbe", "must specify a handler type"}},
		},
		{
			name: "a liveness probe needing two successes is rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Containers[0].LivenessProbe = &corev1.Probe{
					ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}},
					SuccessThreshold: 2,
				}
			}).Obj(),
			want: []want{{field.ErrorTypeInvalid, "spec.containers[0].livenessProbe.successThreshold", "must be 1"}},
		},
		{
			name: "a probe with two handlers is rejected at the second",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					Exec:      &corev1.ExecAction{Command: []string{"true"}},
					TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)},
				}}
			}).Obj(),
			want: []want{{field.ErrorTypeForbidden, "spec.containers[0].readinessProbe.tcpSocket", "may not specify more than 1 handler type"}},
		},
		{
			name: "an init container with a probe but no restartPolicy Always is rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1.36", StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}}}
			}).Obj(),
			want: []want{{field.ErrorTypeForbidden, "spec.initContainers[0].startupProbe", "may not be set for init containers without restartPolicy=Always"}},
		},
		{
			name: "a sidecar init container may have probes",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.InitContainers = []corev1.Container{{
					Name: "proxy", Image: "envoy:1.30", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}},
				}}
			}).Obj(),
		},
		{
			name: "a restart policy on an app container is rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
			}).Obj(),
			want: []want{{field.ErrorTypeForbidden, "spec.containers[0].restartPolicy", "may not be set for non-init containers"}},
		},
		{
			name: "an Exists toleration with a value is rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}}
			}).Obj(),
			want: []want{{field.ErrorTypeInvalid, "spec.tolerations[0].operator", "value must be empty when `operator` is 'Exists'"}},
		},
		{
			name: "a toleration with an unknown effect is rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: "NoRun"}}
			}).Obj(),
			want: []want{{field.ErrorTypeNotSupported, "spec.tolerations[0].effect", `"NoSchedule", "PreferNoSchedule", "NoExecute"`}},
		},
		{
			name: "tolerationSeconds needs the NoExecute effect",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptr.To[int64](5)}}
			}).Obj(),
			want: []want{{field.ErrorTypeInvalid, "spec.tolerations[0].effect", "effect must be 'NoExecute' when `tolerationSeconds` is set"}},
		},
		{
			name: "a node selector value that is not a label value is rejected",
			pod:  makePod().Spec(func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"zone": "a b"} }).Obj(),
			want: []want{{field.ErrorTypeInvalid, "spec.nodeSelector", "a valid label must be an empty string or consist of alphanumeric characters"}},
		},
		{
			name: "a required node affinity without terms is rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
			}).Obj(),
			want: []want{{field.ErrorTypeRequired, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", "must have at least one node selector term"}},
		},
		{
			name: "a node affinity In requirement without values is rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn}}}},
				}}}
			}).Obj(),
			want: []want{{field.ErrorTypeRequired, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values", "must be specified when `operator` is 'In' or 'NotIn'"}},
		},
		{
			name: "a pod anti-affinity term without a topology key is rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: web},
				}}}}
			}).Obj(),
			want: []want{
				{field.ErrorTypeRequired, "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey", "can not be empty"},
				{field.ErrorTypeInvalid, "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey", "name part must be non-empty"},
				{field.ErrorTypeInvalid, "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey", "name part must consist of"},
			},
		},
		{
			name: "a preferred pod affinity weight above 100 is rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 101, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: web}},
				}}}}
			}).Obj(),
			want: []want{{field.ErrorTypeInvalid, "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight", "must be in the range 1-100"}},
		},
		{
			name: "a topology spread constraint with zero skew and an unknown action is rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 0, TopologyKey: "zone", WhenUnsatisfiable: "Maybe"}}
			}).Obj(),
			want: []want{
				{field.ErrorTypeInvalid, "spec.topologySpreadConstraints[0].maxSkew", "must be greater than zero"},
				{field.ErrorTypeNotSupported, "spec.topologySpreadConstraints[0].whenUnsatisfiable", `"DoNotSchedule", "ScheduleAnyway"`},
			},
		},
		{
			name: "two spread constraints on one key and action are rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				c := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}
				s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{c, c}
			}).Obj(),
			want: []want{{field.ErrorTypeDuplicate, "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}", ""}},
		},
		{
			name: "a hostNetwork pod must use its container port as host port",
			pod: makePod().Spec(withPort(80)).Spec(func(s *corev1.PodSpec) { s.HostNetwork = true }).
				After(func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].HostPort = 8080 }).Obj(),
			want: []want{{field.ErrorTypeInvalid, "spec.containers[0].ports[0].hostPort", "must match `containerPort` when `hostNetwork` is true"}},
		},
		{
			name: "an activeDeadlineSeconds of zero is rejected",
			pod:  makePod().Spec(func(s *corev1.PodSpec) { s.ActiveDeadlineSeconds = ptr.To[int64](0) }).Obj(),
			want: []want{{field.ErrorTypeInvalid, "spec.activeDeadlineSeconds", "must be between 1 and 2147483647, inclusive"}},
		},
		{
			name: "ephemeral containers cannot be set on create",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox:1.36"}}}
			}).Obj(),
			want: []want{{field.ErrorTypeForbidden, "spec.ephemeralContainers", "cannot be set on create"}},
		},
		{
			name: "a node name cannot be set while scheduling gates remain",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.NodeName = "node-1"
				s.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
			}).Obj(),
			want: []want{{field.ErrorTypeForbidden, "spec.nodeName", "cannot be set until all schedulingGates have been cleared"}},
		},
		{
			name: "a projected token without a service account is rejected",
			pod: makePod().Spec(func(s *corev1.PodSpec) {
				s.Volumes = []corev1.Volume{{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}},
				}}}}
			}).Obj(),
			want: []want{{field.ErrorTypeForbidden, "spec.volumes[0].projected.sources[0].serviceAccountToken", "must not be specified when serviceAccountName is not set"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertErrors(t, Create(tc.pod, true), tc.want)
		})
	}
}

func TestUpdatePod(t *testing.T) {
	base := makePod().Spec(func(s *corev1.PodSpec) {
		s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}}
		s.ActiveDeadlineSeconds = ptr.To[int64](100)
	}).Obj()
	gated := makePod().Spec(func(s *corev1.PodSpec) { s.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}} }).Obj()
	negativeGrace := makePod().After(func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](-1) }).Obj()

	tests := []struct {
		name     string
		old, new *corev1.Pod
		edit     func(*corev1.Pod)
		want     []want
	}{
		{
			name: "changing a container image is allowed",
			old:  base,
			edit: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:1.27" },
		},
		{
			name: "changing labels is allowed",
			old:  base,
			edit: func(p *corev1.Pod) { p.Labels = map[string]string{"app": "web", "tier": "front"} },
		},
		{
			name: "changing a container port is forbidden with the upstream message",
			old:  base,
			edit: func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 8080 },
			want: []want{{field.ErrorTypeForbidden, "spec", "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"}},
		},
		{
			name: "adding a container is forbidden",
			old:  base,
			edit: func(p *corev1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "b", Image: "redis:7", ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePolicy: corev1.TerminationMessageReadFile})
			},
			want: []want{{field.ErrorTypeForbidden, "spec.containers", "pod updates may not add or remove containers"}},
		},
		{
			name: "adding a toleration is allowed",
			old:  base,
			edit: func(p *corev1.Pod) {
				p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists})
			},
		},
		{
			name: "changing tolerationSeconds is allowed",
			old:  base,
			edit: func(p *corev1.Pod) { p.Spec.Tolerations[0].TolerationSeconds = ptr.To[int64](60) },
		},
		{
			name: "removing a toleration is forbidden",
			old:  base,
			edit: func(p *corev1.Pod) { p.Spec.Tolerations = p.Spec.Tolerations[1:] },
			want: []want{{field.ErrorTypeForbidden, "spec.tolerations", "existing toleration can not be modified except its tolerationSeconds"}},
		},
		{
			name: "lowering activeDeadlineSeconds is allowed",
			old:  base,
			edit: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](10) },
		},
		{
			name: "raising activeDeadlineSeconds is rejected",
			old:  base,
			edit: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](200) },
			want: []want{{field.ErrorTypeInvalid, "spec.activeDeadlineSeconds", "must be less than or equal to previous value"}},
		},
		{
			name: "unsetting activeDeadlineSeconds is rejected",
			old:  base,
			edit: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = nil },
			want: []want{{field.ErrorTypeInvalid, "spec.activeDeadlineSeconds", "must not update from a positive integer to nil value"}},
		},
		{
			name: "an update without resourceVersion is rejected",
			old:  base,
			edit: func(p *corev1.Pod) { p.ResourceVersion = "" },
			want: []want{{field.ErrorTypeInvalid, "metadata.resourceVersion", "must be specified for an update"}},
		},
		{
			name: "renaming a pod is rejected",
			old:  base,
			edit: func(p *corev1.Pod) { p.Name = "other" },
			want: []want{{field.ErrorTypeInvalid, "metadata.name", "field is immutable"}},
		},
		{
			name: "removing a scheduling gate is allowed",
			old:  gated,
			edit: func(p *corev1.Pod) { p.Spec.SchedulingGates = nil },
		},
		{
			name: "adding a scheduling gate is forbidden",
			old:  base,
			edit: func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/late"}} },
			want: []want{{field.ErrorTypeForbidden, "spec.schedulingGates[0].name", "only deletion is allowed, but found new scheduling gate 'example.com/late'"}},
		},
		{
			name: "a gated pod may gain node selector entries",
			old:  gated,
			edit: func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} },
		},
		{
			name: "a scheduled pod may not gain node selector entries",
			old:  base,
			edit: func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} },
			want: []want{{field.ErrorTypeForbidden, "spec", "pod updates may not change fields other than"}},
		},
		{
			name: "a negative grace period may be raised to one",
			old:  negativeGrace,
			edit: func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1) },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := stored(tc.old)
			updated := old.DeepCopy()
			tc.edit(updated)
			assertErrors(t, Update(updated, old, true), tc.want)
		})
	}
}

func TestPodStatusUpdate(t *testing.T) {
	running := func(name string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	}
	exited := func(name string, code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
	}
	bound := makePod().Spec(func(s *corev1.PodSpec) { s.NodeName = "node-1" }).Obj()
	never := makePod().Spec(func(s *corev1.PodSpec) { s.NodeName = "node-1"; s.RestartPolicy = corev1.RestartPolicyNever }).
		After(func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{exited("app", 0)} }).Obj()
	always := makePod().Spec(func(s *corev1.PodSpec) { s.NodeName = "node-1" }).
		After(func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{exited("app", 1)} }).Obj()

	tests := []struct {
		name string
		old  *corev1.Pod
		edit func(*corev1.Pod)
		want []want
	}{
		{
			name: "a kubelet reporting a running pod is valid",
			old:  bound,
			edit: func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodRunning
				p.Status.HostIP = "192.168.1.10"
				p.Status.HostIPs = []corev1.HostIP{{IP: "192.168.1.10"}}
				p.Status.PodIP = "10.244.0.5"
				p.Status.PodIPs = []corev1.PodIP{{IP: "10.244.0.5"}, {IP: "fd00::5"}}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{running("app")}
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: "example.com/healthy", Status: corev1.ConditionTrue}}
			},
		},
		{
			name: "an unparsable pod IP is rejected",
			old:  bound,
			edit: func(p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "10.244.0.500"}} },
			want: []want{{field.ErrorTypeInvalid, "status.podIPs[0]", "must be a valid IP address"}},
		},
		{
			name: "two IPv4 pod IPs are rejected",
			old:  bound,
			edit: func(p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "10.244.0.5"}, {IP: "10.244.0.6"}} },
			want: []want{{field.ErrorTypeInvalid, "status.podIPs", "may specify no more than one IP for each IP family"}},
		},
		{
			name: "a first host IP different from hostIP is rejected",
			old:  bound,
			edit: func(p *corev1.Pod) {
				p.Status.HostIP = "192.168.1.10"
				p.Status.HostIPs = []corev1.HostIP{{IP: "192.168.1.11"}}
			},
			want: []want{{field.ErrorTypeInvalid, "status.hostIPs[0].ip", "must be equal to `hostIP`"}},
		},
		{
			name: "a terminated container of a Never pod cannot run again",
			old:  never,
			edit: func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{running("app")} },
			want: []want{{field.ErrorTypeForbidden, "status.containerStatuses[0].state", "may not be transitioned to non-terminated state"}},
		},
		{
			name: "a terminated container of an Always pod may run again",
			old:  always,
			edit: func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{running("app")} },
		},
		{
			name: "the QoS class cannot change",
			old:  bound,
			edit: func(p *corev1.Pod) { p.Status.QOSClass = corev1.PodQOSGuaranteed },
			want: []want{{field.ErrorTypeInvalid, "status.qosClass", "field is immutable"}},
		},
		{
			name: "the node name cannot change through status",
			old:  bound,
			edit: func(p *corev1.Pod) { p.Spec.NodeName = "node-2" },
			want: []want{{field.ErrorTypeForbidden, "status.nodeName", "may not be changed directly"}},
		},
		{
			name: "a custom condition type must be a qualified name",
			old:  bound,
			edit: func(p *corev1.Pod) {
				p.Status.Conditions = []corev1.PodCondition{{Type: "not valid", Status: corev1.ConditionTrue}}
			},
			want: []want{{field.ErrorTypeInvalid, "metadata.conditions[0].Type", ""}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := stored(tc.old)
			updated := old.DeepCopy()
			tc.edit(updated)
			assertErrors(t, StatusUpdate(updated, old), tc.want)
		})
	}
}

func TestReplacingAPodWithItsManifest(t *testing.T) {
	manifest := func(image string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: web},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{ctr("app", image)}},
		}
	}
	tests := []struct {
		name  string
		image string
		edit  func(*corev1.Pod)
		want  []want
	}{
		{name: "the manifest with a new image is a valid replacement", image: "nginx:1.27"},
		{
			name:  "the manifest with a new port is still forbidden",
			image: "nginx:1.25",
			edit:  func(p *corev1.Pod) { p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}} },
			want:  []want{{field.ErrorTypeForbidden, "spec", "pod updates may not change fields other than"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := stored(makePod().Obj())
			replacement := manifest(tc.image)
			if tc.edit != nil {
				tc.edit(replacement)
			}
			// What the apiserver does with a PUT body before validating it.
			defaults.Object(replacement)
			replacement.ResourceVersion, replacement.UID, replacement.Status = old.ResourceVersion, old.UID, old.Status
			assertErrors(t, Update(replacement, old, true), tc.want)
		})
	}
}
