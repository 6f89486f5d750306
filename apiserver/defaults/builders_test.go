package defaults

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// assertEqual fails the test with a readable diff when got differs from want.
func assertEqual(t *testing.T, want, got any) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unexpected result (-want +got):\n%s", diff)
	}
}

// ctr is a bare container as a client would send it.
func ctr(name, image string) corev1.Container {
	return corev1.Container{Name: name, Image: image}
}

// defaultedCtr is c with the container defaults and the given pull policy.
func defaultedCtr(c corev1.Container, pull corev1.PullPolicy) corev1.Container {
	c.ImagePullPolicy = pull
	c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	return c
}

func rl(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

// podBuilder builds pods for tests: makePod().Container(..).Obj().
type podBuilder struct{ pod corev1.Pod }

func makePod() *podBuilder {
	return &podBuilder{pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}}
}

func (b *podBuilder) Container(c corev1.Container) *podBuilder {
	b.pod.Spec.Containers = append(b.pod.Spec.Containers, c)
	return b
}

func (b *podBuilder) Volume(v corev1.Volume) *podBuilder {
	b.pod.Spec.Volumes = append(b.pod.Spec.Volumes, v)
	return b
}

func (b *podBuilder) Toleration(t corev1.Toleration) *podBuilder {
	b.pod.Spec.Tolerations = append(b.pod.Spec.Tolerations, t)
	return b
}

func (b *podBuilder) HostNetwork() *podBuilder {
	b.pod.Spec.HostNetwork = true
	return b
}

// Spec edits the spec directly for fields without a builder method.
func (b *podBuilder) Spec(edit func(*corev1.PodSpec)) *podBuilder {
	edit(&b.pod.Spec)
	return b
}

// Defaulted sets the pod-level defaults a bare pod receives, with the given
// QoS class.
func (b *podBuilder) Defaulted(qos corev1.PodQOSClass) *podBuilder {
	defaultedSpec(&b.pod.Spec)
	b.pod.Spec.EnableServiceLinks = ptr.To(true)
	b.pod.Status.Phase = corev1.PodPending
	b.pod.Status.QOSClass = qos
	return b
}

func (b *podBuilder) Obj() *corev1.Pod { return &b.pod }

// defaultedSpec sets the top-level PodSpec defaults, leaving containers alone.
func defaultedSpec(s *corev1.PodSpec) {
	s.RestartPolicy = corev1.RestartPolicyAlways
	s.DNSPolicy = corev1.DNSClusterFirst
	s.SecurityContext = &corev1.PodSecurityContext{}
	s.TerminationGracePeriodSeconds = ptr.To[int64](30)
	s.SchedulerName = corev1.DefaultSchedulerName
}

// template is a pod template as a client sends it: one nginx:1.25 container.
func template(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{ctr("app", "nginx:1.25")}},
	}
}

// defaultedTemplate is template(labels) after PodSpec defaulting.
func defaultedTemplate(labels map[string]string) corev1.PodTemplateSpec {
	t := template(labels)
	defaultedSpec(&t.Spec)
	t.Spec.Containers[0] = defaultedCtr(t.Spec.Containers[0], corev1.PullIfNotPresent)
	return t
}
