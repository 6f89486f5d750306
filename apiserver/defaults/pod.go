package defaults

import (
	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// DefaultNotReadyTolerationSeconds and DefaultUnreachableTolerationSeconds
// are the tolerationSeconds that DefaultTolerationSeconds adds, in seconds.
// They match kube-apiserver's --default-not-ready-toleration-seconds and
// --default-unreachable-toleration-seconds defaults.
const (
	DefaultNotReadyTolerationSeconds    int64 = 300
	DefaultUnreachableTolerationSeconds int64 = 300
)

// serviceAccountTokenExpirationSeconds is the projected token lifetime
// upstream defaults to (one hour).
const serviceAccountTokenExpirationSeconds int64 = 3600

// Pod applies the defaults of a Pod: those of its PodSpec, the pod-only ones
// that upstream keeps out of templates (requests copied from limits,
// enableServiceLinks, host ports under hostNetwork), then PodStatus.
func Pod(pod *corev1.Pod) {
	PodSpec(&pod.Spec)
	requestsFromLimits(pod.Spec.InitContainers)
	requestsFromLimits(pod.Spec.Containers)
	if pod.Spec.EnableServiceLinks == nil {
		pod.Spec.EnableServiceLinks = ptr.To(corev1.DefaultEnableServiceLinks)
	}
	if pod.Spec.HostNetwork {
		hostPortsFromContainerPorts(pod.Spec.InitContainers)
		hostPortsFromContainerPorts(pod.Spec.Containers)
	}
	PodStatus(pod)
}

// PodStatus gives a pod with no status yet the one upstream's pod strategy
// sets on create: phase Pending and the pod's QoS class. Existing values are
// kept, so it is safe on updates too.
func PodStatus(pod *corev1.Pod) {
	if pod.Status.Phase == "" {
		pod.Status.Phase = corev1.PodPending
	}
	if pod.Status.QOSClass == "" {
		pod.Status.QOSClass = qosClass(&pod.Spec)
	}
}

// PodTemplateSpec applies the PodSpec defaults to a pod template.
func PodTemplateSpec(t *corev1.PodTemplateSpec) {
	PodSpec(&t.Spec)
}

// PodSpec applies the defaults shared by pods and pod templates: the
// top-level policy fields, and the defaults of every container, volume and
// probe in the spec.
func PodSpec(spec *corev1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr.To(int64(corev1.DefaultTerminationGracePeriodSeconds))
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	for i := range spec.Volumes {
		volume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		container(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		container(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		container((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	roundUpResources(spec.Overhead)
	if spec.Resources != nil {
		roundUpResources(spec.Resources.Limits)
		roundUpResources(spec.Resources.Requests)
	}
}

// DefaultTolerationSeconds adds NoExecute tolerations for the not-ready and
// unreachable node taints, so that pods are evicted 300s after their node
// fails rather than at once. Upstream does this in the DefaultTolerationSeconds
// admission plugin on pod create and update, so that a client replacing a
// pod without them does not look like it removes tolerations. A toleration
// the pod already has for the key (or for every key), with effect NoExecute
// or any effect, wins.
func DefaultTolerationSeconds(pod *corev1.Pod) {
	add := func(key string, seconds int64) {
		for _, t := range pod.Spec.Tolerations {
			if (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") {
				return
			}
		}
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
			Key:               key,
			Operator:          corev1.TolerationOpExists,
			Effect:            corev1.TaintEffectNoExecute,
			TolerationSeconds: ptr.To(seconds),
		})
	}
	add(corev1.TaintNodeNotReady, DefaultNotReadyTolerationSeconds)
	add(corev1.TaintNodeUnreachable, DefaultUnreachableTolerationSeconds)
}

func container(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil {
			fieldSelector(vf.FieldRef)
			if vf.FileKeyRef != nil && vf.FileKeyRef.Optional == nil {
				vf.FileKeyRef.Optional = ptr.To(false)
			}
		}
	}
	roundUpResources(c.Resources.Limits)
	roundUpResources(c.Resources.Requests)
	probe(c.LivenessProbe)
	probe(c.ReadinessProbe)
	probe(c.StartupProbe)
	if c.Lifecycle != nil {
		for _, h := range []*corev1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil {
				httpGet(h.HTTPGet)
			}
		}
	}
}

// pullPolicy is Always for a :latest tag or an untagged, undigested image,
// and IfNotPresent otherwise. An unparsable image gets IfNotPresent, as
// upstream ignores the parse error and sees no tag.
func pullPolicy(image string) corev1.PullPolicy {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return corev1.PullIfNotPresent
	}
	tagged, hasTag := named.(reference.Tagged)
	_, hasDigest := named.(reference.Digested)
	if (hasTag && tagged.Tag() == "latest") || (!hasTag && !hasDigest) {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

func probe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	httpGet(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptr.To("")
	}
}

func httpGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func fieldSelector(fs *corev1.ObjectFieldSelector) {
	if fs != nil && fs.APIVersion == "" {
		fs.APIVersion = "v1"
	}
}

func volume(v *corev1.Volume) {
	if ptr.AllPtrFieldsNil(&v.VolumeSource) {
		v.VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	}
	s := &v.VolumeSource
	if s.HostPath != nil && s.HostPath.Type == nil {
		s.HostPath.Type = ptr.To(corev1.HostPathUnset)
	}
	if s.Secret != nil && s.Secret.DefaultMode == nil {
		s.Secret.DefaultMode = ptr.To(corev1.SecretVolumeSourceDefaultMode)
	}
	if s.ConfigMap != nil && s.ConfigMap.DefaultMode == nil {
		s.ConfigMap.DefaultMode = ptr.To(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if s.DownwardAPI != nil {
		if s.DownwardAPI.DefaultMode == nil {
			s.DownwardAPI.DefaultMode = ptr.To(corev1.DownwardAPIVolumeSourceDefaultMode)
		}
		for i := range s.DownwardAPI.Items {
			fieldSelector(s.DownwardAPI.Items[i].FieldRef)
		}
	}
	if s.Projected != nil {
		if s.Projected.DefaultMode == nil {
			s.Projected.DefaultMode = ptr.To(corev1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range s.Projected.Sources {
			src := &s.Projected.Sources[i]
			if src.DownwardAPI != nil {
				for j := range src.DownwardAPI.Items {
					fieldSelector(src.DownwardAPI.Items[j].FieldRef)
				}
			}
			if src.ServiceAccountToken != nil && src.ServiceAccountToken.ExpirationSeconds == nil {
				src.ServiceAccountToken.ExpirationSeconds = ptr.To(serviceAccountTokenExpirationSeconds)
			}
		}
	}
	if s.ISCSI != nil && s.ISCSI.ISCSIInterface == "" {
		s.ISCSI.ISCSIInterface = "default"
	}
	if s.RBD != nil {
		if s.RBD.RBDPool == "" {
			s.RBD.RBDPool = "rbd"
		}
		if s.RBD.RadosUser == "" {
			s.RBD.RadosUser = "admin"
		}
		if s.RBD.Keyring == "" {
			s.RBD.Keyring = "/etc/ceph/keyring"
		}
	}
	if s.Ephemeral != nil && s.Ephemeral.VolumeClaimTemplate != nil && s.Ephemeral.VolumeClaimTemplate.Spec.VolumeMode == nil {
		s.Ephemeral.VolumeClaimTemplate.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	if s.Image != nil && s.Image.PullPolicy == "" {
		s.Image.PullPolicy = pullPolicy(s.Image.Reference)
	}
}

// roundUpResources rounds every quantity up to milli precision; upstream
// does this so that stored values never need more precision than 1m.
func roundUpResources(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(resource.Milli)
		list[name] = q
	}
}

// requestsFromLimits copies each limit into requests where no request is
// set, so a limits-only container is scheduled by its limits.
func requestsFromLimits(containers []corev1.Container) {
	for i := range containers {
		r := &containers[i].Resources
		if r.Limits == nil {
			continue
		}
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		for name, q := range r.Limits {
			if _, ok := r.Requests[name]; !ok {
				r.Requests[name] = q.DeepCopy()
			}
		}
	}
}

func hostPortsFromContainerPorts(containers []corev1.Container) {
	for i := range containers {
		for j := range containers[i].Ports {
			p := &containers[i].Ports[j]
			if p.HostPort == 0 {
				p.HostPort = p.ContainerPort
			}
		}
	}
}

// qosClass follows upstream's QoS rules on cpu and memory: no requests or
// limits anywhere is BestEffort; every container limiting both, with
// requests equal to limits, is Guaranteed; anything else is Burstable.
// Pod-level resources, when set, replace the container sums.
func qosClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	requests := corev1.ResourceList{}
	limits := corev1.ResourceList{}
	guaranteed := true
	add := func(sum, list corev1.ResourceList) (found int) {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			q, ok := list[name]
			if !ok || q.IsZero() {
				continue
			}
			found++
			total := sum[name]
			total.Add(q)
			sum[name] = total
		}
		return found
	}
	if r := spec.Resources; r != nil && (hasComputeResource(r.Requests) || hasComputeResource(r.Limits)) {
		add(requests, r.Requests)
		if add(limits, r.Limits) < 2 {
			guaranteed = false
		}
	} else {
		all := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
		for _, c := range all {
			add(requests, c.Resources.Requests)
			if add(limits, c.Resources.Limits) < 2 {
				guaranteed = false
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed && len(requests) == len(limits) {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				return corev1.PodQOSBurstable
			}
		}
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

func hasComputeResource(list corev1.ResourceList) bool {
	_, cpu := list[corev1.ResourceCPU]
	_, mem := list[corev1.ResourceMemory]
	return cpu || mem
}
